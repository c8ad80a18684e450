"""The glibc setting `run_pipeline` gives the worker processes of the local runner
(`pipeline.engine.runner.bound_worker_heap`): a worker started by a `multi_processing` run sees it, and a
value the user set is kept. And the first run in a process freezes what the process holds."""
from __future__ import annotations

import os

import apache_beam as beam
import pytest
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.testing.util import assert_that, equal_to

from pipeline.engine.runner import MALLOC_ENV, bound_worker_heap, run_pipeline
from tests.conftest import python_output


def test_the_threshold_is_set_when_the_user_set_none(monkeypatch):
    monkeypatch.delenv(MALLOC_ENV, raising=False)
    bound_worker_heap()
    assert os.environ[MALLOC_ENV] == "8388608"   # 8 MiB


def test_a_threshold_the_user_set_is_kept(monkeypatch):
    monkeypatch.setenv(MALLOC_ENV, "262144")
    bound_worker_heap()
    assert os.environ[MALLOC_ENV] == "262144"


@pytest.mark.slow
def test_a_multi_processing_worker_inherits_the_threshold(monkeypatch):
    monkeypatch.delenv(MALLOC_ENV, raising=False)
    pipeline = beam.Pipeline(options=PipelineOptions(
        ["--runner=apache_beam.runners.portability.fn_api_runner.FnApiRunner", "--direct_running_mode=multi_processing",
         "--direct_num_workers=1", "--pickle_library=cloudpickle"]))
    driver, name = os.getpid(), MALLOC_ENV
    # A lambda, pickled by value: the worker cannot import this test module.
    seen = pipeline | beam.Create([0]) | beam.Map(
        lambda _: (os.getpid() != driver, os.environ.get(name, "unset")))
    assert_that(seen, equal_to([(True, "8388608")]))
    run_pipeline(pipeline)


def test_the_first_run_in_a_process_freezes_what_the_process_holds():
    code = ("import gc, apache_beam as beam; from pipeline.engine.runner import run_pipeline; "
            "before = gc.get_freeze_count(); p = beam.Pipeline(); p | beam.Create([1]); "
            "run_pipeline(p); print(before == 0, gc.get_freeze_count() > 10000)")
    assert python_output(code).splitlines()[-1] == "True True"
