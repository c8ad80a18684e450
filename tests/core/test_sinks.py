"""`WriteTable`: Parquet shards written per bundle (or per fixed shard) and finalised once."""
from __future__ import annotations

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.conftest import beam_test_pipeline
from transforms.core.io.shards import (
    TEMP_PREFIX,
    ShardWriter,
    finalize_shards,
    merge_shard,
    plan_shards,
    rows_to_batch,
    shard_names,
)
from transforms.core.io.sinks import WriteTable

REJECT = {"stage": "read", "reason": "empty_article", "record_id": "a1", "detail": "x.story"}


def shards(folder):
    return sorted(p.name for p in folder.iterdir())


def rows_of(folder):
    return [row for path in sorted(folder.glob("*.parquet")) for row in pq.read_table(path).to_pylist()]


def write(rows, output, num_shards=0):
    with beam_test_pipeline() as pipeline:
        (pipeline | beam.Create(rows, reshuffle=False)
         | WriteTable(str(output), "rejects", num_shards))


def test_rows_are_written_in_schema_order_missing_fields_null_extra_keys_dropped(tmp_path):
    rows = [REJECT, {"record_id": "b2", "reason": "text_too_long", "stage": "read", "extra": 1}]
    write(rows, tmp_path)
    table = pq.read_table(next((tmp_path / "rejects").glob("*.parquet")))
    assert table.schema.names == ["stage", "reason", "record_id", "detail"]
    assert sorted(rows_of(tmp_path / "rejects"), key=lambda r: r["record_id"]) == [
        REJECT, {"stage": "read", "reason": "text_too_long", "record_id": "b2", "detail": None}]


def test_runner_decided_shards_are_named_like_beams_and_leave_no_temporary_folder(tmp_path):
    write([REJECT] * 5, tmp_path)
    names = shards(tmp_path / "rejects")
    # One bundle here; whatever their number, shards are part-SSSSS-of-NNNNN.parquet.
    assert names == shard_names("part", len(names)) and names[0] == "part-00000-of-00001.parquet"
    assert len(rows_of(tmp_path / "rejects")) == 5


def test_an_empty_table_is_one_empty_shard_with_the_schema(tmp_path):
    write([], tmp_path)
    assert shards(tmp_path / "rejects") == ["part-00000-of-00001.parquet"]
    table = pq.read_table(tmp_path / "rejects" / "part-00000-of-00001.parquet")
    assert table.num_rows == 0 and table.schema.names == ["stage", "reason", "record_id", "detail"]


def test_a_fixed_shard_count_spreads_rows_evenly_and_pads_with_empty_shards(tmp_path):
    rows = [dict(REJECT, record_id=f"r{i}") for i in range(7)]
    write(rows, tmp_path / "seven", num_shards=3)
    assert shards(tmp_path / "seven" / "rejects") == [
        "part-00000-of-00003.parquet", "part-00001-of-00003.parquet", "part-00002-of-00003.parquet"]
    counts = sorted(pq.read_table(p).num_rows for p in (tmp_path / "seven" / "rejects").iterdir())
    assert counts == [2, 2, 3]                       # 7 rows dealt to 3 shards
    assert sorted(r["record_id"] for r in rows_of(tmp_path / "seven" / "rejects")) == [
        f"r{i}" for i in range(7)]
    write(rows[:1], tmp_path / "one", num_shards=3)  # one row: two empty shards beside it
    counts = sorted(pq.read_table(p).num_rows for p in (tmp_path / "one" / "rejects").iterdir())
    assert counts == [0, 0, 1]


def test_shard_writer_flushes_record_batches_and_row_groups_as_rows_arrive(tmp_path):
    schema = pa.schema([pa.field("n", pa.int64())])
    writer = ShardWriter(str(tmp_path / "t.parquet"), schema, batch_rows=2, group_bytes=1)
    for n in range(5):
        writer.write({"n": n})
    writer.close()
    metadata = pq.ParquetFile(tmp_path / "t.parquet").metadata
    # A row group every 2 rows (each batch is over 1 byte), the last row at close.
    assert [metadata.row_group(i).num_rows for i in range(metadata.num_row_groups)] == [2, 2, 1]
    assert pq.read_table(tmp_path / "t.parquet").column("n").to_pylist() == [0, 1, 2, 3, 4]


def test_a_missing_required_field_is_an_error_not_a_null():
    schema = pa.schema([pa.field("id", pa.string(), nullable=False), pa.field("note", pa.string())])
    assert rows_to_batch([{"id": "a"}], schema).to_pylist() == [{"id": "a", "note": None}]
    with pytest.raises(KeyError):
        rows_to_batch([{"note": "no id"}], schema)


def test_finalising_again_after_a_failure_skips_what_was_moved(tmp_path):
    schema = pa.schema([pa.field("n", pa.int64())])
    temp = tmp_path / "t" / f"{TEMP_PREFIX}x"
    paths = []
    for n in range(2):
        writer = ShardWriter(str(temp / f"{n}.parquet"), schema)
        writer.write({"n": n})
        paths.append(writer.close())
    prefix = str(tmp_path / "t" / "part")
    first = finalize_shards(paths, str(temp), prefix, schema)
    again = finalize_shards(paths, str(temp), prefix, schema)     # a retried finalisation
    assert first == again == [f"{prefix}-00000-of-00002.parquet", f"{prefix}-00001-of-00002.parquet"]
    assert shards(tmp_path / "t") == ["part-00000-of-00002.parquet", "part-00001-of-00002.parquet"]
    assert [pq.read_table(p).column("n").to_pylist() for p in first] == [[0], [1]]


def test_shard_plan_cuts_the_files_rows_into_even_contiguous_runs():
    # 3 + 0 + 4 = 7 rows in path order a, b, c; shards hold rows [0, 2), [2, 4), [4, 7).
    plan = plan_shards([("c", 4), ("a", 3), ("b", 0)], 3)
    assert plan == [[("a", 0, 2)], [("a", 2, 3), ("c", 0, 1)], [("c", 1, 4)]]
    assert plan_shards([("a", 1)], 3) == [[], [], [("a", 0, 1)]]
    assert plan_shards([], 2) == [[], []]


def bundle_files(folder, numbers_by_name):
    schema = pa.schema([pa.field("n", pa.int64())])
    paths = {}
    for name, numbers in numbers_by_name.items():
        writer = ShardWriter(str(folder / f"{name}.parquet"), schema)
        for n in numbers:
            writer.write({"n": n})
        paths[name] = writer.close()
    return schema, paths


def test_a_shard_is_merged_from_slices_of_bundle_files_under_its_final_name(tmp_path):
    temp = tmp_path / "t" / f"{TEMP_PREFIX}x"
    schema, files = bundle_files(temp, {"a": range(0, 450), "b": range(450, 500)})
    # Rows 10..449 of a (crossing record batches of 200) and 0..49 of b, as shard 1 of 3.
    path = merge_shard((1, [(files["a"], 10, 450), (files["b"], 0, 50)]),
                       str(tmp_path / "t" / "part"), 3, schema, str(temp))
    assert path == str(tmp_path / "t" / "part-00001-of-00003.parquet")
    assert pq.read_table(path).column("n").to_pylist() == list(range(10, 500))
    assert shards(tmp_path / "t") == [f"{TEMP_PREFIX}x", "part-00001-of-00003.parquet"]
    assert shards(temp) == ["a.parquet", "b.parquet"]     # its own temporary file was renamed


def test_a_retried_merge_replaces_its_shard_whole(tmp_path):
    temp = tmp_path / "t" / f"{TEMP_PREFIX}x"
    schema, files = bundle_files(temp, {"a": range(5)})
    prefix = str(tmp_path / "t" / "part")
    first = merge_shard((0, [(files["a"], 0, 5)]), prefix, 1, schema, str(temp))
    again = merge_shard((0, [(files["a"], 0, 5)]), prefix, 1, schema, str(temp))
    assert first == again
    assert pq.read_table(again).column("n").to_pylist() == [0, 1, 2, 3, 4]
    assert shards(tmp_path / "t") == [f"{TEMP_PREFIX}x", "part-00000-of-00001.parquet"]


def test_finalising_fixed_shards_keeps_the_merged_shards_and_removes_the_bundle_files(tmp_path):
    temp = tmp_path / "t" / f"{TEMP_PREFIX}x"
    schema, files = bundle_files(temp, {"a": range(3)})
    prefix = str(tmp_path / "t" / "part")
    merged = [merge_shard((i, slices), prefix, 2, schema, str(temp))
              for i, slices in enumerate(plan_shards([(files["a"], 3)], 2))]
    first = finalize_shards(reversed(merged), str(temp), prefix, schema, num_shards=2)
    again = finalize_shards(merged, str(temp), prefix, schema, num_shards=2)   # a retry
    assert first == again == [f"{prefix}-00000-of-00002.parquet", f"{prefix}-00001-of-00002.parquet"]
    assert shards(tmp_path / "t") == ["part-00000-of-00002.parquet", "part-00001-of-00002.parquet"]
    assert [pq.read_table(p).column("n").to_pylist() for p in first] == [[0], [1, 2]]   # 3 rows: 1 + 2
