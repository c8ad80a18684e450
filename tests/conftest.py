"""Shared fixtures: an offline Beam test pipeline, the repo's sample corpus, and code run in a
fresh interpreter (ours, or the Hugging Face venv's)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

import pytest
from apache_beam.testing.test_pipeline import TestPipeline

from tests.s3 import store

DATA = Path(__file__).parent / "data" / "record"
ROOT = Path(__file__).resolve().parents[1]


def python_output(code: str) -> str:
    """The stripped stdout of a fresh interpreter running `code` in the repository."""
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                            text=True, check=True)
    return result.stdout.strip()


HF_PYTHON = ROOT / ".venv-hf" / "bin" / "python"


def hf_datasets(code: str, **inputs: Any) -> Any:
    """What Hugging Face `datasets` makes of our files, from its own venv (.venv-hf: Beam 2.62's pins
    leave no room for it in ours).

    `code` runs in `.venv-hf/bin/python`, in the repository, offline, with fresh, temporary HF
    caches; the keyword `inputs` (JSON values) are its global names, and it sets `result` to a JSON
    value, which is returned (convert on that side: `list(ds["id"])`, `features.to_dict()`).
    """
    if not HF_PYTHON.exists():
        pytest.fail(f"{HF_PYTHON.relative_to(ROOT)} is missing: run `make venv` to create the venv "
                    "that holds Hugging Face `datasets`", pytrace=False)
    script = f"import json, sys\nglobals().update(json.load(sys.stdin))\n{code}\nprint(json.dumps(result))"
    with tempfile.TemporaryDirectory(prefix="hf-home-") as home:
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
        env.update(HF_DATASETS_OFFLINE="1", HF_HUB_OFFLINE="1", HF_HOME=home,
                   HF_DATASETS_CACHE=str(Path(home) / "datasets"))
        run = subprocess.run([str(HF_PYTHON), "-c", script], input=json.dumps(inputs), cwd=ROOT, env=env,
                             capture_output=True, text=True)
    if run.returncode != 0:
        pytest.fail(f"`datasets` in {HF_PYTHON.relative_to(ROOT)} failed:\n{run.stderr[-4000:]}")
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
    from pipeline.cli import main

    argv = ["record", "generate", "--output", str(output)]
    for path in INPUTS:
        argv += ["--input", path]
    for path in URL_LISTS:
        argv += ["--url-list", path]
    return main(argv + list(beam_args))


@pytest.fixture(scope="session")
def record_run(tmp_path_factory) -> Path:
    """One generate run on the sample corpus, shared by the end-to-end tests."""
    output = tmp_path_factory.mktemp("record")
    assert generate(output) == 0
    return output


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
