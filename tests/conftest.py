"""Shared fixtures: an offline Beam test pipeline, the repo's sample corpus (and one generate run
of it), the simulated Cosmos QA crowd sets, and code run in a fresh interpreter (ours, with the
heavy modules it imported, or the Hugging Face venv's)."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from apache_beam.testing.test_pipeline import TestPipeline

from tests.s3 import store

DATA = Path(__file__).parent / "data" / "record"
ROOT = Path(__file__).resolve().parents[1]


def python_run(code: str, env: Mapping[str, str] | None = None,
               timeout: float | None = None) -> subprocess.CompletedProcess[str]:
    """A fresh interpreter running `code` in the repository, with `env` added to our environment;
    the test fails, with the end of the interpreter's stderr, if it exits with an error."""
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                            env=None if env is None else {**os.environ, **env}, timeout=timeout)
    if result.returncode != 0:
        pytest.fail(f"python -c exited with {result.returncode}:\n{result.stderr[-4000:]}")
    return result


def python_output(code: str) -> str:
    """The stripped stdout of a fresh interpreter running `code` in the repository."""
    return python_run(code).stdout.strip()


class Probe(NamedTuple):
    """What a fresh interpreter made of some code (`probe_modules`)."""

    loaded: list[str]   # the watched modules in `sys.modules` once the code had run, sorted
    stdout: str         # what the code (then `then`) printed, stripped
    stderr: str


def probe_modules(code: str, watched: Iterable[str], *, then: str = "", env: Mapping[str, str] | None = None,
                  timeout: float | None = None) -> Probe:
    """Which of the `watched` modules (heavy ones: torch, apache_beam, spacy...) a fresh interpreter
    in the repository has imported once it has run `code`; after that it runs `then` (which may
    import them itself). The interpreter must exit without error; `env` is added to our environment.
    Every "imports no heavy module" test goes through here (or `loaded_modules`)."""
    with tempfile.TemporaryDirectory(prefix="probe-") as folder:
        report = Path(folder) / "loaded.json"
        script = (f"{code}\n"
                  "import sys as _probe_sys\n"
                  f"_probe_loaded = sorted(m for m in {sorted(set(watched))!r} if m in _probe_sys.modules)\n"
                  f"with open({str(report)!r}, 'w', encoding='utf-8') as _probe_file:\n"
                  "    __import__('json').dump(_probe_loaded, _probe_file)\n"
                  f"{then}\n")
        done = python_run(script, env, timeout)
        if not report.exists():
            pytest.fail(f"the probed code ended the interpreter before the check:\n{code}")
        loaded = json.loads(report.read_text(encoding="utf-8"))
    return Probe(loaded, done.stdout.strip(), done.stderr)


def loaded_modules(code: str, watched: Iterable[str]) -> list[str]:
    """The `watched` modules a fresh interpreter has imported once it has run `code`, sorted:
    `assert loaded_modules("import transforms.core.models.loading", ["torch"]) == []`."""
    return probe_modules(code, watched).loaded


def hf_datasets(code: str, **inputs: Any) -> Any:
    """What Hugging Face `datasets` (installed beside csdata, from the `dev` extra) makes of our files.

    `code` runs in a fresh interpreter of this environment, in the repository, offline, with
    fresh, temporary HF caches (a child process: `datasets` reads its cache settings when it is
    imported); the keyword `inputs` (JSON values) are its global names, and it sets `result` to a
    JSON value, which is returned (convert on that side: `list(ds["id"])`, `features.to_dict()`).
    """
    script = f"import json, sys\nglobals().update(json.load(sys.stdin))\n{code}\nprint(json.dumps(result))"
    with tempfile.TemporaryDirectory(prefix="hf-home-") as home:
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
        env.update(HF_DATASETS_OFFLINE="1", HF_HUB_OFFLINE="1", HF_HOME=home,
                   HF_DATASETS_CACHE=str(Path(home) / "datasets"))
        run = subprocess.run([sys.executable, "-c", script], input=json.dumps(inputs), cwd=ROOT, env=env,
                             capture_output=True, text=True)
    if run.returncode != 0:
        pytest.fail(f"`datasets` failed:\n{run.stderr[-4000:]}")
    return json.loads(run.stdout.splitlines()[-1])


def parquet_rows(directory: Path) -> dict[str, list[str]]:
    """Every Parquet table under `directory` (by folder): its rows as canonical JSON, sorted, so
    that two runs compare whatever order their workers wrote in."""
    import pyarrow.parquet as pq

    tables = {}
    for folder in sorted({p.parent for p in Path(directory).rglob("*.parquet")}):
        tables[str(folder.relative_to(directory))] = sorted(
            json.dumps(row, sort_keys=True, default=repr) for row in pq.read_table(folder).to_pylist())
    return tables


def beam_test_pipeline() -> TestPipeline:
    """A TestPipeline on the in-process FnApiRunner (the DirectRunner would try Prism first)."""
    return TestPipeline(runner="apache_beam.runners.portability.fn_api_runner.FnApiRunner")


@pytest.fixture
def test_pipeline():
    return beam_test_pipeline()


INPUTS = [str(DATA / "cnn"), str(DATA / "dailymail"), str(DATA / "hf_rows.jsonl")]
URL_LISTS = [str(p) for p in sorted((DATA / "url_lists").glob("*.txt"))]


def generate(output: Path, *beam_args: str) -> int:
    """`csdata record generate` on the sample corpus with its URL lists."""
    from pipeline.cli.main import main

    argv = ["record", "generate", "--output", str(output)]
    for path in INPUTS:
        argv += ["--input", path]
    for path in URL_LISTS:
        argv += ["--url-list", path]
    return main(argv + list(beam_args))


@pytest.fixture(scope="session")
def record_generate_run(tmp_path_factory) -> Path:
    """One `csdata record generate` run on the sample corpus, shared by the end-to-end tests (read
    it, never change it)."""
    output = tmp_path_factory.mktemp("record")
    assert generate(output) == 0
    return output


# ---- Cosmos QA crowd data (tests/cosmos/crowd_sets.py), for tests/cosmos and tests/core --------

@pytest.fixture
def cosmos_crowd_spec():
    """The Cosmos QA spec with W-EXCELLENT as the one excellent worker."""
    from tests.cosmos.crowd_sets import cosmos_spec

    return cosmos_spec()


@pytest.fixture
def cosmos_simulated(tmp_path) -> tuple[Path, Path, Path]:
    """(stage-1 run, questions.csv, validations.csv): six paragraphs; one set per validation and
    NOTA case, validated by 3 simulated workers each (`crowd_sets.write_simulated`)."""
    from tests.cosmos.crowd_sets import write_simulated

    return write_simulated(tmp_path)


# End-to-end runs and real models; `make test-fast` (pytest -m "not slow") leaves them out.
SLOW_MODULES = frozenset({
    "test_record_e2e", "test_annotators_e2e", "test_machine_filter", "test_cross_encoder",
    "test_cosmos_e2e", "test_protoqa_e2e", "test_models", "test_cli",
})


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.module.__name__.rsplit(".", 1)[-1] in SLOW_MODULES:
            item.add_marker(pytest.mark.slow)


# ---- the S3 server of `make s3-up` (tests/s3/store.py) ----------------------------------------

@pytest.fixture(scope="session")
def s3():
    import boto3
    from botocore.config import Config

    client = boto3.client("s3", endpoint_url=store.ENDPOINT, aws_access_key_id=store.KEY,
                          aws_secret_access_key=store.SECRET, region_name=store.REGION,
                          config=Config(retries={"max_attempts": 2}))
    try:
        client.head_bucket(Bucket=store.BUCKET)
    except Exception as error:  # noqa: BLE001 - whatever it is, the server is not usable
        pytest.fail(f"no S3 server with bucket {store.BUCKET!r} at {store.ENDPOINT} ({error}): run "
                    "these tests with `make services-test` (or `make s3-up` first)", pytrace=False)
    return client


@pytest.fixture
def prefix(s3) -> str:
    """A key prefix of this test's own: `s3://csdata/<prefix>/...`."""
    return f"tests/{uuid.uuid4().hex[:12]}"


# A key that measures time, word by word of its snake_case name ("wall_seconds", "elapsed_s",
# "articles_per_s", "submit_time"), so that a count whose name merely contains such letters
# ("runtime", "sentiment") is still compared.
TIMING_KEY = re.compile(r"(?:^|_)(?:seconds?|time|timestamp|elapsed|duration|per_s)(?:_|$)")


def without_timings(value):
    """`value` (a summary) without the keys that measure time, at any depth: they differ between
    any two runs, on any runner or store. The Flink and S3 suites compare the rest of two runs'
    summaries."""
    if isinstance(value, dict):
        return {k: without_timings(v) for k, v in value.items() if not TIMING_KEY.search(k)}
    if isinstance(value, list):
        return [without_timings(v) for v in value]
    return value
