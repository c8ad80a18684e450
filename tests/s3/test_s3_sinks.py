"""`WriteTable` and `WriteTables` on the real S3 server write every Parquet file once: no shard is
renamed (on S3 a rename is a server-side copy and a delete), no temporary object is left, and the
rows read back are the rows written; the finaliser deletes what retried bundles left and is safe
to retry."""
from __future__ import annotations

import re
from pathlib import Path

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from apache_beam.io.aws.clients.s3 import boto3_client
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.testing import test_pipeline

from tests.s3.store import BUCKET, S3_ARGS, download, keys
from transforms.core.io.shards import TEMP_PREFIX, ShardWriter, finalize_shards
from transforms.core.io.sinks import WriteTable, WriteTables

pytestmark = pytest.mark.s3

REJECTS = [{"stage": "read", "reason": "empty_article", "record_id": f"r{i}", "detail": f"{i}.story"}
           for i in range(7)]
BUNDLE_SHARD = re.compile(r"part-[0-9a-f]{32}\.parquet")


def url(key: str) -> str:
    return f"s3://{BUCKET}/{key}"


@pytest.fixture
def copies(monkeypatch) -> list[tuple[str, tuple]]:
    """Every rename or copy of an s3:// path through Beam's filesystems, and every server-side copy
    Beam's S3 client asks for, made in this process (the in-process runner's workers run here)."""
    made: list[tuple[str, tuple]] = []

    def watch(name, original, on_s3):
        def watched(*args, **kwargs):
            if on_s3(*args):
                made.append((name, args))
            return original(*args, **kwargs)
        return watched

    def s3_paths(sources, destinations):
        return any(str(p).startswith("s3://") for p in [*sources, *destinations])

    monkeypatch.setattr(FileSystems, "rename", watch("rename", FileSystems.rename, s3_paths))
    monkeypatch.setattr(FileSystems, "copy", watch("copy", FileSystems.copy, s3_paths))
    monkeypatch.setattr(boto3_client.Client, "copy",
                        watch("client copy", boto3_client.Client.copy, lambda *_: True))
    return made


def s3_pipeline() -> test_pipeline.TestPipeline:
    """The in-process FnApiRunner with Beam's S3 options pointed at the test server."""
    return test_pipeline.TestPipeline(runner="apache_beam.runners.portability.fn_api_runner.FnApiRunner",
                                      options=PipelineOptions(S3_ARGS))


def table_files(s3, key: str) -> list[str]:
    return sorted(k[len(key) + 1:] for k in keys(s3, f"{key}/"))


def rows_in(s3, key: str, target: Path) -> list[dict]:
    folder = download(s3, key, target)
    return sorted((row for path in sorted(folder.glob("*.parquet")) for row in pq.read_table(path).to_pylist()),
                  key=lambda row: row["record_id"])


def test_runner_decided_shards_are_the_bundles_own_objects(s3, prefix, copies, tmp_path):
    with s3_pipeline() as pipeline:
        pipeline | beam.Create(REJECTS) | WriteTable(url(f"{prefix}/out"), "rejects")
    names = table_files(s3, f"{prefix}/out/rejects")
    assert names and all(BUNDLE_SHARD.fullmatch(name) for name in names), names
    assert rows_in(s3, f"{prefix}/out/rejects", tmp_path) == REJECTS
    assert copies == []


def test_fixed_shards_are_merged_under_their_final_names(s3, prefix, copies, tmp_path):
    with s3_pipeline() as pipeline:
        pipeline | beam.Create(REJECTS) | WriteTable(url(f"{prefix}/out"), "rejects", num_shards=3)
    assert table_files(s3, f"{prefix}/out/rejects") == [
        "part-00000-of-00003.parquet", "part-00001-of-00003.parquet", "part-00002-of-00003.parquet"]
    counts = sorted(pq.read_table(p).num_rows for p in download(s3, f"{prefix}/out/rejects", tmp_path).iterdir())
    assert counts == [2, 2, 3]                       # 7 rows dealt to 3 shards
    assert rows_in(s3, f"{prefix}/out/rejects", tmp_path / "again") == REJECTS
    assert copies == []


@pytest.mark.parametrize("num_shards", [0, 3])
def test_tables_of_one_run_are_written_without_a_copy(s3, prefix, copies, tmp_path, num_shards):
    # Rejects in two parts (two producing stages), and a table without rows.
    with s3_pipeline() as pipeline:
        first = pipeline | "First" >> beam.Create(REJECTS[:4])
        second = pipeline | "Second" >> beam.Create(REJECTS[4:])
        none = pipeline | "None" >> beam.Create([])
        (first, none, second) | WriteTables(url(f"{prefix}/out"), ["rejects", "queries", "rejects"],
                                            num_shards=num_shards)
    assert rows_in(s3, f"{prefix}/out/rejects", tmp_path / "rejects") == REJECTS
    queries = table_files(s3, f"{prefix}/out/queries")
    if num_shards:
        assert queries == ["part-00000-of-00003.parquet", "part-00001-of-00003.parquet",
                           "part-00002-of-00003.parquet"]
    else:
        assert queries == ["part-00000-of-00001.parquet"]      # one empty shard
    assert pq.read_table(download(s3, f"{prefix}/out/queries", tmp_path / "queries")).num_rows == 0
    assert [k for k in keys(s3, prefix) if TEMP_PREFIX in k] == []
    assert copies == []


def test_finalising_deletes_what_retried_bundles_left_and_can_be_retried(s3, prefix, copies):
    FileSystems.set_options(PipelineOptions(S3_ARGS))
    schema = pa.schema([pa.field("n", pa.int64())])
    folder = url(f"{prefix}/t")
    written = []
    for name in ("a" * 32, "b" * 32, "c" * 32):     # c: the file of a bundle that was retried
        writer = ShardWriter(f"{folder}/part-{name}.parquet", schema)
        writer.write({"n": len(written)})
        written.append(writer.close())
    temp = f"{folder}/{TEMP_PREFIX}x"
    first = finalize_shards(written[:2], temp, f"{folder}/part", schema)
    again = finalize_shards(written[1::-1], temp, f"{folder}/part", schema)   # a retried finalisation
    assert first == again == written[:2]
    assert table_files(s3, f"{prefix}/t") == [f"part-{'a' * 32}.parquet", f"part-{'b' * 32}.parquet"]
    assert copies == []


def test_finalising_an_empty_table_twice_leaves_one_empty_shard(s3, prefix, copies):
    FileSystems.set_options(PipelineOptions(S3_ARGS))
    schema = pa.schema([pa.field("n", pa.int64())])
    folder = url(f"{prefix}/t")
    temp = f"{folder}/{TEMP_PREFIX}x"
    assert finalize_shards([], temp, f"{folder}/part", schema) == [f"{folder}/part-00000-of-00001.parquet"]
    assert finalize_shards([], temp, f"{folder}/part", schema) == [f"{folder}/part-00000-of-00001.parquet"]
    assert table_files(s3, f"{prefix}/t") == ["part-00000-of-00001.parquet"]
    assert copies == []
