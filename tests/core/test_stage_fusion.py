"""Fewer Beam steps with the same accounting: `ChainedStages`, `Summarize(few=True, sections=...)`
and `WriteTables` (one finalising step for several tables, a table's parts written where they
are made)."""
from __future__ import annotations

import json

import apache_beam as beam
import pyarrow.parquet as pq
import pytest
from apache_beam.testing.util import assert_that, equal_to

from tests.conftest import beam_test_pipeline
from transforms.core.accounting import Reject
from transforms.core.io.shards import shard_names
from transforms.core.io.sinks import WriteTables
from transforms.core.stages import ChainedStages, StageStep, Summarize


def drop_odd(n: int):
    yield Reject("first", "odd", str(n)) if n % 2 else n


def two_units(n: int):
    """Two units per element: `n` itself, then `n + 1` below 4 and a `big` reject from 4 on."""
    yield n
    yield Reject("second", "big", f"{n}+1") if n >= 4 else n + 1


def test_chained_stages_keep_each_stages_accounting_and_side_output(tmp_path):
    path = str(tmp_path / "summary.json")
    with beam_test_pipeline() as p:
        kept, rejects, tallies, tens = p | beam.Create([1, 2, 3, 4, 6]) | ChainedStages([
            StageStep("first", drop_odd, emit=lambda n: (10 * n,), output="tens"),
            StageStep("second", two_units, units=lambda _: 2, emit=lambda n: (n, -n))])
        # Kept by both: 2 -> 2, 3; 4 -> 4; 6 -> 6; each emitted as (n, -n).
        assert_that(kept, equal_to([2, -2, 3, -3, 4, -4, 6, -6]))
        assert_that(tens, equal_to([20, 40, 60]), label="tens")
        assert_that(rejects | beam.Map(lambda r: (r.stage, r.reason, r.record_id)),
                    equal_to([("first", "odd", "1"), ("first", "odd", "3"),
                              ("second", "big", "4+1"), ("second", "big", "6+1")]), label="rejects")
        tallies | Summarize(path, ["first", "second"], few=True)
    stages = json.load(open(path))["stages"]
    assert stages["first"] == {"in": 5, "kept": 3, "rejected": {"odd": 2}, "balanced": True}
    assert stages["second"] == {"in": 6, "kept": 4, "rejected": {"big": 2}, "balanced": True}


def test_summarize_puts_section_tallies_in_their_own_entry(tmp_path):
    path = str(tmp_path / "summary.json")
    tallies = [(("s", "in"), 3), (("s", "kept"), 2), (("reuse", "reused"), 4), (("s", "in"), 1),
               (("s", "kept"), 2), (("reuse", "not_stored"), 1), (("reuse", "reused"), 1)]
    with beam_test_pipeline() as p:
        p | beam.Create(tallies) | Summarize(path, ["s"], sections=("reuse",), few=True)
    summary = json.load(open(path))
    assert summary["stages"] == {"s": {"in": 4, "kept": 4, "rejected": {}, "balanced": True}}
    assert summary["reuse"] == {"not_stored": 1, "reused": 5}


def test_summarize_without_tallies_writes_the_empty_stages(tmp_path):
    for few in (True, False):
        path = tmp_path / f"summary-{few}.json"
        with beam_test_pipeline() as p:
            p | beam.Create([]) | Summarize(str(path), ["a"], sections=("reuse",), few=few)
        assert json.load(open(path)) == {
            "stages": {"a": {"in": 0, "kept": 0, "rejected": {}, "balanced": True}}}


def test_write_tables_finalises_every_table_and_makes_rows_with_row_of(tmp_path):
    rejects = [Reject("read", "empty_article", "a1", "x.story"), Reject("read", "empty_article", "b2", "")]
    with beam_test_pipeline() as p:
        made = p | "Rejects" >> beam.Create(rejects, reshuffle=False)
        rows = p | "Rows" >> beam.Create([], reshuffle=False)
        paths = (made, rows) | WriteTables(str(tmp_path), ["rejects", "passages"],
                                           row_of={"rejects": Reject.row})
        assert_that(paths | beam.Map(lambda path: path[len(str(tmp_path)) + 1:]),
                    equal_to([f"rejects/{shard_names('part', 1)[0]}", f"passages/{shard_names('part', 1)[0]}"]))
    for table in ("rejects", "passages"):
        assert sorted(p.name for p in (tmp_path / table).iterdir()) == ["part-00000-of-00001.parquet"]
    got = pq.read_table(tmp_path / "rejects" / "part-00000-of-00001.parquet").to_pylist()
    assert sorted(got, key=lambda r: r["record_id"]) == [
        {"stage": "read", "reason": "empty_article", "record_id": "a1", "detail": "x.story"},
        {"stage": "read", "reason": "empty_article", "record_id": "b2", "detail": ""}]
    assert pq.read_table(tmp_path / "passages" / "part-00000-of-00001.parquet").num_rows == 0


def _rejects_table(folder) -> tuple[list[str], list[dict]]:
    files = sorted(p.name for p in (folder / "rejects").iterdir())
    rows = [row for name in files for row in pq.read_table(folder / "rejects" / name).to_pylist()]
    return files, sorted(rows, key=lambda r: r["record_id"])


def _two_stage_rejects(p):
    """Rejects made in two stages: one before a grouping and one after it."""
    early = p | "Early" >> beam.Create([Reject("read", "empty_article", "a1")], reshuffle=False)
    late = (p | "Late" >> beam.Create([("k", "b2"), ("k", "c3")], reshuffle=False)
            | beam.GroupByKey()
            | beam.FlatMap(lambda kv: [Reject("split", "no_rest", i) for i in kv[1]]))
    return early, late


EXPECTED_PARTS = [{"stage": "read", "reason": "empty_article", "record_id": "a1", "detail": ""},
                  {"stage": "split", "reason": "no_rest", "record_id": "b2", "detail": ""},
                  {"stage": "split", "reason": "no_rest", "record_id": "c3", "detail": ""}]


def test_write_tables_writes_the_parts_of_a_table_each_in_its_own_stage(tmp_path):
    with beam_test_pipeline() as p:
        early, late = _two_stage_rejects(p)
        rows = p | "Rows" >> beam.Create([], reshuffle=False)
        (rows, early, late) | WriteTables(str(tmp_path), ["passages", "rejects", "rejects"],
                                          row_of={"rejects": Reject.row})
    files, rows_written = _rejects_table(tmp_path)
    # One file per part (each stage's bundle writes its own), not one after a Flatten.
    assert files == shard_names("part", 2)
    assert rows_written == EXPECTED_PARTS
    assert sorted(p.name for p in (tmp_path / "passages").iterdir()) == shard_names("part", 1)


def test_write_tables_parts_with_fixed_shards_are_spread_over_exactly_those(tmp_path):
    with beam_test_pipeline() as p:
        early, late = _two_stage_rejects(p)
        (early, late) | WriteTables(str(tmp_path), ["rejects", "rejects"], num_shards=3,
                                    row_of={"rejects": Reject.row})
    files, rows_written = _rejects_table(tmp_path)
    assert files == shard_names("part", 3)
    assert rows_written == EXPECTED_PARTS


def test_write_tables_needs_one_pcollection_per_name():
    with beam_test_pipeline() as p:
        one = p | beam.Create([], reshuffle=False)
        with pytest.raises(ValueError, match="1 PCollections for 2 tables"):
            (one,) | WriteTables("unused", ["rejects", "rejects"])
