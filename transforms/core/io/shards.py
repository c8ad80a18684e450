"""Parquet shard files on any Beam filesystem: rows written into a file as they arrive, bundle
files merged into a fixed number of shards, and the finaliser that gives a table its shards.
Plain functions over Beam's filesystems; the steps that call them are `transforms.core.io.sinks`.

A file being written holds at most one row group and one record batch in memory: record batches
of `RECORD_BATCH_ROWS` rows (200, where `WriteToParquet` takes 1,000) and row groups of at most
`ROW_GROUP_BYTES` (1 MiB, where it takes 64 MiB), so that the three tables of a run hold at most
about 3 MiB of rows in a worker whatever the input's size (see
docs/benchmarks.md#what-keeps-a-workers-memory-flat). Files are uncompressed, as `WriteToParquet`
writes them.

No file is written twice. On an object store (s3://, gs://) a rename is a server-side copy and
a delete, so nothing there is renamed: a run writes into an attempt folder that no reader looks
at until the run commits (`pipeline.outputs`), so a temporary name buys nothing.

- Runner-decided shards (`num_shards` 0), local folder: each bundle writes into the temporary
  folder `{table}/.csdata-temp-<uuid>` and the finaliser renames the files to
  `part-SSSSS-of-NNNNN.parquet` (a local rename is free, and these are the names `WriteToParquet`
  gives).
- Runner-decided shards, object store: each bundle writes `{table}/part-<uuid>.parquet` itself;
  the finaliser deletes the table's `part-*.parquet` that are not in its list (what retried
  bundles left), and writes `part-00000-of-00001.parquet`, empty, when no bundle had rows.
- Fixed `num_shards`, any filesystem: the bundles' files (in the temporary folder) are merged
  into that many shards of even row counts by as many steps, each streaming its slices of the
  files (`plan_shards`, `merge_shard`; only paths and counts are shuffled) and writing its
  shard under its final name, `part-0000i-of-0000N.parquet` (locally through a temporary file
  renamed over it, on an object store in one whole-object write): a retried merge replaces
  the shard whole. The finaliser then removes the bundles' files.

The finaliser is safe to retry: a file already moved is skipped, a deleted orphan stays
deleted, the empty shard has a fixed name, and the temporary folder may be gone already.
"""
from __future__ import annotations

import functools
import os
import uuid
from typing import Any, Iterable, Mapping, Sequence

import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from apache_beam.io.localfilesystem import LocalFileSystem

from data_specs import load_schema

RECORD_BATCH_ROWS = 200
ROW_GROUP_BYTES = 1024 * 1024
SHARD_PREFIX = "part"
SUFFIX = ".parquet"
TEMP_PREFIX = ".csdata-temp-"


def is_local(path: str) -> bool:
    """Whether `path` is on the local filesystem (where a rename is free), not an object store."""
    return isinstance(FileSystems.get_filesystem(path), LocalFileSystem)


@functools.cache
def table_schema(dataset: str, table: str) -> pa.Schema:
    """`data_specs.load_schema`, parsed once per process (a schema is immutable)."""
    return load_schema(dataset, table)


def rows_to_batch(rows: Sequence[Mapping[str, Any]], schema: pa.Schema) -> pa.RecordBatch:
    """Rows as one record batch of `schema`: fields in schema order, a missing nullable field is
    null, a missing required one a KeyError, other keys ignored (as `WriteToParquet`)."""
    columns = []
    for field in schema:
        name = field.name
        values = [row.get(name) for row in rows] if field.nullable else [row[name] for row in rows]
        columns.append(pa.array(values, type=field.type))
    return pa.RecordBatch.from_arrays(columns, schema=schema)


class ShardWriter:
    """Rows into one Parquet file at `path` (any Beam filesystem), written as they arrive: never
    more than one row group (`ROW_GROUP_BYTES`) plus one record batch in memory."""

    def __init__(self, path: str, schema: pa.Schema, batch_rows: int = RECORD_BATCH_ROWS,
                 group_bytes: int = ROW_GROUP_BYTES):
        self.path = path
        self.rows = 0
        self._schema = schema
        self._batch_rows, self._group_bytes = batch_rows, group_bytes
        self._pending: list[Mapping[str, Any]] = []
        self._batches: list[pa.RecordBatch] = []
        self._batch_bytes = 0
        self._handle = FileSystems.create(path, mime_type="application/octet-stream",
                                          compression_type=CompressionTypes.UNCOMPRESSED)
        self._writer = pq.ParquetWriter(self._handle, schema, compression="none",
                                        use_deprecated_int96_timestamps=False,
                                        use_compliant_nested_type=True)

    def write(self, row: Mapping[str, Any]) -> None:
        """Append one dict row."""
        self._pending.append(row)
        self.rows += 1
        if len(self._pending) >= self._batch_rows:
            self._flush_rows()
            if self._batch_bytes >= self._group_bytes:
                self._flush_group()

    def write_batch(self, batch: pa.RecordBatch) -> None:
        """Append a record batch of this file's schema (rows already made)."""
        self._flush_rows()
        self.rows += batch.num_rows
        self._batches.append(batch)
        self._batch_bytes += batch.nbytes
        if self._batch_bytes >= self._group_bytes:
            self._flush_group()

    def _flush_rows(self) -> None:
        if self._pending:
            batch = rows_to_batch(self._pending, self._schema)
            self._pending = []
            self._batches.append(batch)
            self._batch_bytes += batch.nbytes

    def _flush_group(self) -> None:
        if self._batches:
            self._writer.write_table(pa.Table.from_batches(self._batches, schema=self._schema))
            self._batches, self._batch_bytes = [], 0

    def close(self) -> str:
        """Write what is buffered and close the file; returns its path."""
        self._flush_rows()
        self._flush_group()
        self._writer.close()
        self._handle.close()
        return self.path


def unique_path(start: str) -> str:
    """`{start}<uuid>.parquet`: a name no other bundle or attempt takes."""
    return f"{start}{uuid.uuid4().hex}{SUFFIX}"


Slice = tuple[str, int, int]     # (path, first row, row after the last)


def plan_shards(files: Iterable[tuple[str, int]], num_shards: int) -> list[list[Slice]]:
    """Cut the rows of bundle files `(path, rows)`, taken in path order, into `num_shards`
    contiguous runs as even as can be (shard i holds rows [i*T//n, (i+1)*T//n) of the T rows):
    each shard's list of file slices."""
    ordered = sorted(files)
    total = sum(rows for _, rows in ordered)
    bounds = [i * total // num_shards for i in range(num_shards + 1)]
    plan: list[list[Slice]] = [[] for _ in range(num_shards)]
    offset = 0
    for path, rows in ordered:
        for shard in range(num_shards):
            start, stop = max(bounds[shard], offset), min(bounds[shard + 1], offset + rows)
            if start < stop:
                plan[shard].append((path, start - offset, stop - offset))
        offset += rows
    return plan


def merge_shard(indexed: tuple[int, Sequence[Slice]], prefix: str, num_shards: int, schema: pa.Schema,
                temp_dir: str) -> str:
    """Write shard `index` of `num_shards` under its final name (`shard_names(prefix, ...)`) from
    its slices of bundle files, a record batch at a time (never more than one row group in
    memory); returns its path. Locally it is written in `temp_dir` and renamed over the final
    name (free, and a reader never sees half a shard); on an object store it is written in
    place, an object appearing whole when closed. Either way a retry replaces the shard whole."""
    index, slices = indexed
    final = shard_names(prefix, num_shards)[index]
    local = is_local(final)
    writer = ShardWriter(unique_path(f"{temp_dir}/shard-{index:05d}-") if local else final, schema)
    for path, start, stop in slices:
        with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as handle:
            offset = 0
            for batch in pq.ParquetFile(handle).iter_batches(batch_size=RECORD_BATCH_ROWS):
                first, last = max(start - offset, 0), min(stop - offset, batch.num_rows)
                if first < last:
                    writer.write_batch(batch.slice(first, last - first))
                offset += batch.num_rows
                if offset >= stop:
                    break
    written = writer.close()
    if local:
        os.replace(written, final)
    return final


def shard_names(prefix: str, count: int) -> list[str]:
    """`{prefix}-00000-of-0000N.parquet`, ...: the names `WriteToParquet` gives `count` shards."""
    return [f"{prefix}-{i:05d}-of-{count:05d}{SUFFIX}" for i in range(count)]


def finalize_shards(written: Iterable[str], temp_dir: str, prefix: str, schema: pa.Schema,
                    num_shards: int = 0) -> list[str]:
    """Give a table its shards from the files its bundles (or, with a fixed `num_shards`, its
    merges) wrote, as the module doc says, and remove the temporary folder; returns the shard
    paths, sorted. Safe to retry."""
    paths = sorted(written)
    if num_shards > 0:                 # merged under their final names: the bundles' files go
        final = paths
    elif is_local(prefix):
        final = _rename_shards(paths, temp_dir, prefix, schema)
    else:                              # nothing was written in the temporary folder
        return _keep_shards(paths, prefix, schema)
    remove_folder(temp_dir)
    return final


def _rename_shards(paths: list[str], temp_dir: str, prefix: str, schema: pa.Schema) -> list[str]:
    """Rename local bundle files to `part-SSSSS-of-NNNNN.parquet` (one empty shard when there are
    none); a file already moved by an earlier attempt is skipped."""
    if not paths:
        paths = [ShardWriter(unique_path(f"{temp_dir}/"), schema).close()]
    final = shard_names(prefix, len(paths))
    moves = [(src, dst) for src, dst in zip(paths, final) if FileSystems.exists(src)]
    if moves:
        FileSystems.rename([src for src, _ in moves], [dst for _, dst in moves])
    return final


def _keep_shards(paths: list[str], prefix: str, schema: pa.Schema) -> list[str]:
    """The bundles' own files, written in place on an object store, are the shards: every other
    `{prefix}-*.parquet` (left by a retried bundle) is deleted; `{prefix}-00000-of-00001.parquet`,
    empty, is the one shard when there are none (a fixed name: a retry writes the same object)."""
    if not paths:
        paths = [ShardWriter(shard_names(prefix, 1)[0], schema).close()]
    kept = {path.rsplit("/", 1)[-1] for path in paths}   # by name: a store may spell its paths otherwise
    orphans = [m.path for result in FileSystems.match([f"{prefix}-*{SUFFIX}"])
               for m in result.metadata_list if m.path.rsplit("/", 1)[-1] not in kept]
    if orphans:
        FileSystems.delete(orphans)
    return paths


def remove_folder(folder: str) -> None:
    """Remove a temporary folder and what is left in it, on any Beam filesystem."""
    if FileSystems.exists(folder):                # a local folder: goes with what is left in it
        FileSystems.delete([folder])
        return
    leftovers = [m.path for result in FileSystems.match([f"{folder}/*"])   # object stores have no folders
                 for m in result.metadata_list]
    if leftovers:
        FileSystems.delete(leftovers)
