"""Rejects and tallies: every unit is kept or rejected with a reason, and the summary checks it."""
import json

import apache_beam as beam
from apache_beam.testing.util import assert_that, equal_to

from tests.conftest import beam_test_pipeline
from transforms.core.accounting import Reject, Stage, Summarize, build_summary, format_summary


def odd_or_reject(n: int):
    if n % 2:
        yield n
    else:
        yield Reject("parity", "even", str(n))


def test_stage_routes_rejects_and_tallies(tmp_path):
    path = str(tmp_path / "summary.json")
    with beam_test_pipeline() as p:
        kept, rejects, tallies = p | beam.Create(range(5)) | Stage("parity", odd_or_reject)
        assert_that(kept, equal_to([1, 3]))
        assert_that(rejects | beam.Map(lambda r: r.record_id), equal_to(["0", "2", "4"]),
                    label="rejects")
        tallies | Summarize(path, ["parity"])
    summary = json.load(open(path))
    assert summary["stages"]["parity"] == {"in": 5, "kept": 2, "rejected": {"even": 3},
                                           "balanced": True}


def test_summary_flags_a_stage_that_lost_records():
    summary = build_summary([(("s", "in"), 5), (("s", "kept"), 3), (("s", "rejected.x"), 1)], ["s"])
    assert summary["stages"]["s"]["balanced"] is False
    assert "in != kept + rejected" in format_summary(summary)
