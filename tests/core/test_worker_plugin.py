"""The module every SDK worker imports as it starts (`pipeline.engine.worker`, named in `--beam_plugins`
by `run_pipeline`): it makes the worker's data plane send messages of 1 MiB instead of Beam's
10 MiB. Importing it changes the importing process, so these tests import it in a subprocess."""
from __future__ import annotations

import os
import sys

import apache_beam as beam
import pytest
from apache_beam.options.pipeline_options import PipelineOptions, SetupOptions
from apache_beam.runners.worker import data_plane
from apache_beam.testing.util import assert_that, equal_to

from pipeline.engine.runner import WORKER_PLUGIN, name_worker_plugin, new_pipeline, run_pipeline
from tests.conftest import python_output

MIB = 1024 * 1024


def in_fresh_interpreter(code: str) -> str:
    return python_output(code).splitlines()[-1]


def test_importing_the_plugin_makes_new_streams_flush_at_1_mib():
    code = ("from apache_beam.runners.worker import data_plane as d; "
            "before = d.SizeBasedBufferingClosableOutputStream()._size_flush_threshold; "
            "import pipeline.engine.worker as w; "
            "size = d.SizeBasedBufferingClosableOutputStream()._size_flush_threshold; "
            "timed = d.TimeBasedBufferingClosableOutputStream(time_flush_threshold_ms=60000); "
            "print(before, size, timed._size_flush_threshold, d._DEFAULT_SIZE_FLUSH_THRESHOLD, "
            "w.bound_data_messages())")
    assert in_fresh_interpreter(code).split() == [str(10 * MIB), str(MIB), str(MIB), str(MIB), "False"]


def test_a_data_plane_laid_out_differently_is_left_alone():
    # A Beam whose module constant no longer matches the streams' defaults.
    code = ("from apache_beam.runners.worker import data_plane as d; "
            "d._DEFAULT_SIZE_FLUSH_THRESHOLD = 8 << 20; "
            "import pipeline.engine.worker as w; "
            "print(d.SizeBasedBufferingClosableOutputStream()._size_flush_threshold, "
            "d._DEFAULT_SIZE_FLUSH_THRESHOLD)")
    assert in_fresh_interpreter(code).split() == [str(10 * MIB), str(8 * MIB)]


def test_the_plugin_is_added_once_after_the_users_own():
    options = PipelineOptions(["--beam_plugins=mine.plugin"])
    name_worker_plugin(options)
    name_worker_plugin(options)
    assert options.view_as(SetupOptions).beam_plugins == ["mine.plugin", WORKER_PLUGIN]


@pytest.mark.slow
def test_a_multi_processing_worker_gets_the_options_and_imports_it_and_the_driver_does_not():
    pipeline = new_pipeline(PipelineOptions(
        ["--runner=apache_beam.runners.portability.fn_api_runner.FnApiRunner", "--direct_running_mode=multi_processing", "--direct_num_workers=1",
         "--experiments=csdata_probe", "--pickle_library=cloudpickle"]))
    driver = os.getpid()

    def seen(_):   # a closure, pickled by value: the worker cannot import this test module
        import sys as worker_sys

        from apache_beam.runners.worker import data_plane as plane
        return (os.getpid() != driver, "csdata_probe" in os.environ.get("PIPELINE_OPTIONS", ""),
                "pipeline.engine.worker" in worker_sys.modules,
                plane.SizeBasedBufferingClosableOutputStream()._size_flush_threshold)

    assert_that(pipeline | beam.Create([0]) | beam.Map(seen), equal_to([(True, True, True, MIB)]))
    run_pipeline(pipeline)
    assert data_plane.SizeBasedBufferingClosableOutputStream()._size_flush_threshold == 10 * MIB
    assert "pipeline.engine.worker" not in sys.modules
