"""Rejects and tallies: every unit is kept or rejected with a reason, and the summary checks it."""
import json

import apache_beam as beam
from apache_beam.testing.util import assert_that, equal_to

from tests.conftest import beam_test_pipeline
from transforms.core.accounting import Reject, build_summary, format_summary
from transforms.core.stages import Stage, Summarize


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


def test_summary_units_column_keeps_the_first_columns_in_place():
    from transforms.core.accounting import STAGE_UNITS

    summary = build_summary([(("read", "in"), 5), (("read", "kept"), 4), (("read", "rejected.x"), 1),
                             (("other", "in"), 2), (("other", "kept"), 2)], ["read", "other"])
    plain = format_summary(summary).splitlines()
    with_units = format_summary(summary, STAGE_UNITS["record"]).splitlines()
    assert [line.split()[:4] for line in with_units] == [line.split()[:4] for line in plain]
    assert with_units[0].split()[4:] == ["unit", "reasons"]
    assert with_units[1].split()[4:] == ["articles", "x=1"]
    assert with_units[2].split()[4:] == ["-", "-"]                 # a stage without a unit


def test_every_pipeline_stage_has_a_unit():
    from pipeline.graphs.cosmos import STAGE_ORDER
    from pipeline.graphs.record import STAGES
    from transforms.core.accounting import STAGE_UNITS
    from transforms.cosmos.crowd import QUESTION_STAGE, VALIDATION_STAGE
    from transforms.protoqa.cluster_prep import PREP_STAGES
    from transforms.protoqa.questions import QUESTION_STAGES
    from transforms.protoqa.release import RELEASE_STAGES
    from transforms.protoqa.sheets import ADJUDICATE
    from transforms.record.crowd import STAGE as HUMAN_STAGE
    from transforms.record.machine_filter import STAGE as MACHINE_STAGE

    for dataset, stages in (("record", [*STAGES, MACHINE_STAGE, HUMAN_STAGE]),
                            ("cosmos", [*STAGE_ORDER, QUESTION_STAGE, VALIDATION_STAGE]),
                            ("protoqa", [*QUESTION_STAGES, *PREP_STAGES, ADJUDICATE, *RELEASE_STAGES])):
        assert set(stages) <= set(STAGE_UNITS[dataset]), dataset


def test_a_run_without_any_tally_still_writes_its_summary(tmp_path):
    path = str(tmp_path / "summary.json")
    with beam_test_pipeline() as p:
        _, _, tallies = p | beam.Create([]) | Stage("parity", odd_or_reject)
        tallies | Summarize(path, ["parity"])
    assert json.load(open(path)) == {"stages": {"parity": {"in": 0, "kept": 0, "rejected": {},
                                                           "balanced": True}}}
