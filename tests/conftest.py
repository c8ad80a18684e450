"""Shared fixtures: an offline Beam test pipeline, the repo's sample corpus, and code run in a
fresh interpreter."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from apache_beam.testing.test_pipeline import TestPipeline

DATA = Path(__file__).parent / "data" / "record"
ROOT = Path(__file__).resolve().parents[1]


def python_output(code: str) -> str:
    """The stripped stdout of a fresh interpreter running `code` in the repository."""
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                            text=True, check=True)
    return result.stdout.strip()


def beam_test_pipeline() -> TestPipeline:
    """A TestPipeline on the in-process FnApiRunner (the DirectRunner would try Prism first)."""
    return TestPipeline(runner="FnApiRunner")


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
