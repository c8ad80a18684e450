"""Beam sinks: PCollections of dict rows as Parquet shards with the schemas kept in data_specs/.

Kept apart from `transforms.core.io` so that the commands which only read a run (export, stats,
score) never import Beam.

`WriteTable` writes its shards itself instead of through `beam.io.WriteToParquet`, whose generic
file-sink protocol (a DoOnce root, then initialise, pre-finalise and finalise steps joined by
side inputs) costs 13 steps and four stages per table where this one needs 3 steps and one
stage: about 0.5 s of CPU per run, a measurable share of a small run. Here one step, fused with
the producer, writes each bundle's rows into a new file as they arrive (no compression, as
`WriteToParquet`; record batches of `RECORD_BATCH_ROWS` rows, 200 rather than its 1,000, and row
groups of at most `ROW_GROUP_BYTES`, 1 MiB rather than its 64 MiB, so that the three tables of a
run hold at most about 3 MiB of rows in a worker whatever the input's size: with 1,000 rows and
4 MiB, a worker's peak at 1,200 articles was 12 MiB higher), and one finalising step, which gets
the written paths as a side input, gives the table its shards (one empty shard when there are
no rows) and removes the temporary folder `{table}/.csdata-temp-<uuid>`.

No file is written twice. On an object store (s3://, gs://) a rename is a server-side copy and
a delete, so nothing there is renamed: a run writes into an attempt folder that no reader looks
at until the run commits (`pipeline.outputs`), so a temporary name buys nothing.

- Runner-decided shards (`num_shards` 0), local folder: each bundle writes into the temporary
  folder and the finaliser renames the files to `part-SSSSS-of-NNNNN.parquet` (a local rename
  is free, and these are the names `WriteToParquet` gives).
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
from typing import Any, Callable, Iterable, Iterator, Mapping, Optional, Sequence, Union

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from apache_beam.io.localfilesystem import LocalFileSystem
from apache_beam.transforms.window import GlobalWindows

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


def _new_path(start: str) -> str:
    """`{start}<uuid>.parquet`: a name no other bundle or attempt takes."""
    return f"{start}{uuid.uuid4().hex}{SUFFIX}"


class WriteBundlesFn(beam.DoFn):
    """Write each bundle's rows into a new Parquet file `{start}<uuid>.parquet` and emit its path
    (a DoFn for the bundle boundaries: a file is opened at a bundle's first row and closed at its
    end). `start` is `{temporary folder}/`, or `{table}/part-` where the file is the shard."""

    def __init__(self, start: str, schema: pa.Schema,
                 row_of: Optional[Callable[[Any], Mapping[str, Any]]] = None, with_rows: bool = False):
        self._start = start
        self._schema = schema
        self._row_of = row_of
        self._with_rows = with_rows
        self._writer: Optional[ShardWriter] = None

    def start_bundle(self) -> None:
        self._writer = None

    def process(self, row: Any) -> tuple[()]:
        if self._writer is None:
            self._writer = ShardWriter(_new_path(self._start), self._schema)
        self._writer.write(row if self._row_of is None else self._row_of(row))
        return ()   # the shard's path comes at the bundle's end (Beam warns of a process without return)

    def finish_bundle(self) -> Iterator[Any]:
        if self._writer is not None:
            rows = self._writer.rows
            path, self._writer = self._writer.close(), None
            yield GlobalWindows.windowed_value((path, rows) if self._with_rows else path)


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
    writer = ShardWriter(_new_path(f"{temp_dir}/shard-{index:05d}-") if local else final, schema)
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
        paths = [ShardWriter(_new_path(f"{temp_dir}/"), schema).close()]
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


class _Table:
    """Where and how one table is written: its folder, schema (with the file metadata), the
    temporary folder of this run and how elements become rows."""

    def __init__(self, output: str, table: str, schema: Optional[str], dataset: str,
                 file_metadata: Optional[Mapping[str, str]],
                 row_of: Optional[Callable[[Any], Mapping[str, Any]]]):
        folder = f"{output.rstrip('/')}/{table}"
        self.schema = table_schema(dataset, schema or table)
        if file_metadata:
            self.schema = self.schema.with_metadata(dict(file_metadata))
        self.temp_dir = f"{folder}/{TEMP_PREFIX}{uuid.uuid4().hex}"
        self.prefix = f"{folder}/{SHARD_PREFIX}"
        self.row_of = row_of

    def write(self, rows: Union[beam.PCollection, tuple[beam.PCollection, ...]],
              num_shards: int) -> beam.PCollection:
        """The files of `rows` (the step(s) that write them, fused with the producer): the
        bundles' files, or with fixed shards the shards merged from them.

        `rows` may be a tuple of PCollections, the parts of one table: each part is written by a
        step of its own, fused with that part's producer, so that no row leaves the stage that
        made it. With fixed shards, only the files' paths and row counts meet after that, and
        each shard is merged from its slices of the files by whichever worker gets it
        (`plan_shards`, `merge_shard`): no shard's rows are ever one group.
        """
        temp_dir, prefix, schema, row_of = self.temp_dir, self.prefix, self.schema, self.row_of
        fixed = num_shards > 0
        # On an object store a bundle's file is the shard itself (a rename there is a copy).
        start = f"{prefix}-" if not fixed and not is_local(prefix) else f"{temp_dir}/"
        # Output types are declared: Beam would otherwise infer them from the bytecode.
        kind = tuple[str, int] if fixed else str
        if isinstance(rows, tuple):
            files = ([part | f"WriteBundles{i}" >> beam.ParDo(WriteBundlesFn(start, schema, row_of, fixed))
                      .with_output_types(kind) for i, part in enumerate(rows)]
                     | "Paths" >> beam.Flatten().with_output_types(kind))
        else:
            files = rows | "WriteBundles" >> beam.ParDo(
                WriteBundlesFn(start, schema, row_of, fixed)).with_output_types(kind)
        if not fixed:
            return files
        return (files.pipeline | "Shards" >> beam.Impulse()
                | "PlanShards" >> beam.FlatMap(lambda _, found: enumerate(plan_shards(found, num_shards)),
                                               beam.pvalue.AsList(files))
                | "SpreadShards" >> beam.Reshuffle()
                | "MergeShards" >> beam.Map(merge_shard, prefix, num_shards, schema, temp_dir)
                .with_output_types(str))

    def finalize(self, paths: Iterable[str], num_shards: int) -> list[str]:
        return finalize_shards(paths, self.temp_dir, self.prefix, self.schema, num_shards)


class WriteTable(beam.PTransform):
    """Write dict rows as `{output}/{table}/part-SSSSS-of-NNNNN.parquet` (runner-decided shards on
    an object store: `part-<uuid>.parquet`, see the module doc) with a schema from data_specs/
    (table `schema`, default `table`, of `data_specs/{dataset}_schema.yaml`).

    `num_shards` 0 lets the runner decide (one shard per bundle that had rows, at least one);
    N > 0 spreads the rows over exactly N shards. Returns the PCollection of the shard paths.
    `file_metadata` (`transforms.core.provenance.file_metadata`: csdata version, spec and input
    hashes, run date) becomes every shard's Parquet key-value metadata. With `row_of`, the
    elements are not rows: `row_of(element)` is written, in the writing step (no step of its own).
    """

    def __init__(self, output: str, table: str, num_shards: int = 0, schema: Optional[str] = None,
                 dataset: str = "record", file_metadata: Optional[Mapping[str, str]] = None,
                 row_of: Optional[Callable[[Any], Mapping[str, Any]]] = None):
        super().__init__()
        self._table = _Table(output, table, schema, dataset, file_metadata, row_of)
        self._num_shards = num_shards

    def expand(self, rows):
        table, num_shards = self._table, self._num_shards
        written = table.write(rows, num_shards)
        return (rows.pipeline | "Once" >> beam.Impulse()
                | "Finalize" >> beam.FlatMap(lambda _, paths: table.finalize(paths, num_shards),
                                             beam.pvalue.AsList(written)).with_output_types(str))


class WriteTables(beam.PTransform):
    """Several tables of one run, each written as `WriteTable` writes it, with one finalising
    step for all of them (one stage at the end instead of one per table). Applied to a tuple of
    PCollections, one per name of `tables`; a name given more than once makes its PCollections
    parts of one table, each written in the stage that made it (`_Table.write`): a run's rejects
    come from every stage, and a Flatten before the writer would move them all through the
    runner. `row_of` maps a table name to how its elements become rows (dict rows otherwise).
    Returns the PCollection of every table's shard paths."""

    def __init__(self, output: str, tables: Sequence[str], num_shards: int = 0, dataset: str = "record",
                 file_metadata: Optional[Mapping[str, str]] = None,
                 row_of: Optional[Mapping[str, Callable[[Any], Mapping[str, Any]]]] = None):
        super().__init__()
        row_of = row_of or {}
        self._order = list(tables)
        self._names = list(dict.fromkeys(tables))
        self._tables = [_Table(output, name, None, dataset, file_metadata, row_of.get(name))
                        for name in self._names]
        self._num_shards = num_shards

    def expand(self, pcolls):
        tables, num_shards = self._tables, self._num_shards
        if len(pcolls) != len(self._order):
            raise ValueError(f"WriteTables got {len(pcolls)} PCollections for {len(self._order)} tables")
        parts: dict[str, list[beam.PCollection]] = {name: [] for name in self._names}
        for name, rows in zip(self._order, pcolls):
            parts[name].append(rows)
        written = [(tuple(parts[name]) if len(parts[name]) > 1 else parts[name][0])
                   | f"Write{name.title().replace('_', '')}"
                   >> _TableWrite(table, num_shards)
                   for name, table in zip(self._names, tables)]

        def finalize(_: Any, *paths: list[str]) -> list[str]:
            return [path for table, table_paths in zip(tables, paths)
                    for path in table.finalize(table_paths, num_shards)]

        return (pcolls[0].pipeline | "Once" >> beam.Impulse()
                | "Finalize" >> beam.FlatMap(finalize, *(beam.pvalue.AsList(w) for w in written))
                .with_output_types(str))


class _TableWrite(beam.PTransform):
    """The writing half of `WriteTable` (its own label scope, so that tables do not clash)."""

    def __init__(self, table: _Table, num_shards: int):
        super().__init__()
        self._table, self._num_shards = table, num_shards

    def expand(self, rows):
        return self._table.write(rows, self._num_shards)
