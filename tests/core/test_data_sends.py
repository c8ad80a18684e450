"""Records are not lost between the in-process runner and its workers (`whole_data_sends`).

Beam's FnApiRunner with several workers sends a Flatten's materialized input to a worker in
~10 MB chunks through a stream whose timed flush thread drops the chunks written while it
flushes (docs/runners.md). Beam flushes every 1000 ms, which a test-sized input rarely meets;
the test shortens Beam's period to 20 ms, as a long send on a real corpus meets the 1000 ms one.
There, without `run_pipeline`'s setting, 3 of 3 runs of this pipeline lost 3,000-4,500 of 8,600
records.
"""
from __future__ import annotations

import apache_beam as beam
import pytest
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.runners.portability.fn_api_runner import worker_handlers

from pipeline.engine.runner import run_pipeline, whole_data_sends

FILES, PER, SIZE = 200, 43, 10_000     # 8,600 records, 86 MB through the Flatten


@pytest.mark.slow
def test_a_big_flatten_reaches_the_workers_whole(monkeypatch):
    monkeypatch.setattr(worker_handlers, "DATA_BUFFER_TIME_LIMIT_MS", 20)
    options = PipelineOptions(["--direct_running_mode=multi_processing", "--direct_num_workers=2"])
    pipeline = beam.Pipeline(options=options)
    per, size = PER, SIZE   # defined here, so that the workers get them by value (tests/ is no package there)

    def records(index: int):
        for number in range(per):
            yield b"%d:%d:" % (index, number) + b"x" * size

    def count(record: bytes):
        beam.metrics.Metrics.counter("test", "counted").inc()
        return []

    made = pipeline | beam.Create(list(range(FILES))) | "Records" >> beam.FlatMap(records)
    nothing = made | "Nothing" >> beam.FlatMap(lambda record: [])
    (made, nothing) | beam.Flatten() | "Count" >> beam.FlatMap(count)
    result = run_pipeline(pipeline)
    counted = {c.key.metric.name: c.committed for c in result.metrics().query()["counters"]}
    assert counted.get("counted") == FILES * PER
    assert worker_handlers.DATA_BUFFER_TIME_LIMIT_MS == 20     # set back after the run


def test_the_setting_is_set_only_within_the_block(monkeypatch):
    monkeypatch.setattr(worker_handlers, "DATA_BUFFER_TIME_LIMIT_MS", 1000)
    with whole_data_sends():
        assert worker_handlers.DATA_BUFFER_TIME_LIMIT_MS == 0
    assert worker_handlers.DATA_BUFFER_TIME_LIMIT_MS == 1000
