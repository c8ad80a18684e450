"""Beam sinks: PCollections of dict rows as Parquet shards with the schemas kept in data_specs/.

Kept apart from `transforms.core.io` so that the commands which only read a run (export, stats,
score) never import Beam.

`WriteTable` writes its shards itself instead of through `beam.io.WriteToParquet`, whose generic
file-sink protocol (a DoOnce root, then initialise, pre-finalise and finalise steps joined by
side inputs) costs 13 steps and four stages per table where this one needs 3 steps and one
stage: about 0.5 s of CPU per run, a measurable share of a small run. Here one step, fused with
the producer, writes each bundle's rows into a new temporary file as they arrive (no
compression, as `WriteToParquet`; record batches of `RECORD_BATCH_ROWS` rows, 200 rather than
its 1,000, and row groups of at most `ROW_GROUP_BYTES`, 1 MiB rather than its 64 MiB, so that
the three tables of a run hold at most about 3 MiB of rows in a worker whatever the input's
size: with 1,000 rows and 4 MiB, a worker's peak at 1,200 articles was 12 MiB higher), and one
finalising step, which gets the temporary paths as a side input, renames them to
`part-SSSSS-of-NNNNN.parquet` (one empty shard when there are no rows, empty shards up to a
fixed `num_shards`) and removes the temporary folder. With a fixed `num_shards` the bundles'
files are merged into that many shards of even row counts by as many steps, each streaming its
slices of the files (`plan_shards`, `merge_shard`): only paths and counts are shuffled. A
retried bundle leaves only an orphan temporary file, which goes with the folder, and a retried
finalisation skips the files it already moved. Works on any Beam filesystem (local, gs://, ...).
"""
from __future__ import annotations

import functools
import uuid
from typing import Any, Callable, Iterable, Iterator, Mapping, Optional, Sequence, Union

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from apache_beam.transforms.window import GlobalWindows

from data_specs import load_schema

RECORD_BATCH_ROWS = 200
ROW_GROUP_BYTES = 1024 * 1024
SHARD_PREFIX = "part"
SUFFIX = ".parquet"
TEMP_PREFIX = ".csdata-temp-"


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


def _temp_path(temp_dir: str) -> str:
    return f"{temp_dir}/{uuid.uuid4().hex}{SUFFIX}"


class WriteBundlesFn(beam.DoFn):
    """Write each bundle's rows into a new temporary Parquet file and emit its path (a DoFn for
    the bundle boundaries: a file is opened at a bundle's first row and closed at its end)."""

    def __init__(self, temp_dir: str, schema: pa.Schema,
                 row_of: Optional[Callable[[Any], Mapping[str, Any]]] = None, with_rows: bool = False):
        self._temp_dir = temp_dir
        self._schema = schema
        self._row_of = row_of
        self._with_rows = with_rows
        self._writer: Optional[ShardWriter] = None

    def start_bundle(self) -> None:
        self._writer = None

    def process(self, row: Any) -> tuple[()]:
        if self._writer is None:
            self._writer = ShardWriter(_temp_path(self._temp_dir), self._schema)
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


def merge_shard(indexed: tuple[int, Sequence[Slice]], temp_dir: str, schema: pa.Schema) -> str:
    """Write shard `index` from its slices of bundle files, a record batch at a time (never more
    than one row group in memory); returns the temporary path, named so that paths sort in
    shard order."""
    index, slices = indexed
    writer = ShardWriter(f"{temp_dir}/shard-{index:05d}{SUFFIX}", schema)
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
    return writer.close()


def shard_names(prefix: str, count: int) -> list[str]:
    """`{prefix}-00000-of-0000N.parquet`, ...: the names `WriteToParquet` gives `count` shards."""
    return [f"{prefix}-{i:05d}-of-{count:05d}{SUFFIX}" for i in range(count)]


def finalize_shards(temp_paths: Iterable[str], temp_dir: str, prefix: str, schema: pa.Schema,
                    num_shards: int = 0) -> list[str]:
    """Move the temporary files to their shard names (empty shards added up to `num_shards`, at
    least one) and remove the temporary folder; returns the shard paths. Safe to retry: a file
    already moved by an earlier attempt is skipped."""
    paths = sorted(temp_paths)
    while len(paths) < max(num_shards, 1):
        paths.append(ShardWriter(_temp_path(temp_dir), schema).close())
    final = shard_names(prefix, len(paths))
    moves = [(src, dst) for src, dst in zip(paths, final) if FileSystems.exists(src)]
    if moves:
        FileSystems.rename([src for src, _ in moves], [dst for _, dst in moves])
    remove_folder(temp_dir)
    return final


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
        """The temporary files of `rows` (the step(s) that write them, fused with the producer).

        `rows` may be a tuple of PCollections, the parts of one table: each part is written by a
        step of its own, fused with that part's producer, so that no row leaves the stage that
        made it. With fixed shards, only the files' paths and row counts meet after that, and
        each shard is merged from its slices of the files by whichever worker gets it
        (`plan_shards`, `merge_shard`): no shard's rows are ever one group.
        """
        temp_dir, schema, row_of = self.temp_dir, self.schema, self.row_of
        fixed = num_shards > 0
        # Output types are declared: Beam would otherwise infer them from the bytecode.
        kind = tuple[str, int] if fixed else str
        if isinstance(rows, tuple):
            files = ([part | f"WriteBundles{i}" >> beam.ParDo(WriteBundlesFn(temp_dir, schema, row_of, fixed))
                      .with_output_types(kind) for i, part in enumerate(rows)]
                     | "Paths" >> beam.Flatten().with_output_types(kind))
        else:
            files = rows | "WriteBundles" >> beam.ParDo(
                WriteBundlesFn(temp_dir, schema, row_of, fixed)).with_output_types(kind)
        if not fixed:
            return files
        return (files.pipeline | "Shards" >> beam.Impulse()
                | "PlanShards" >> beam.FlatMap(lambda _, found: enumerate(plan_shards(found, num_shards)),
                                               beam.pvalue.AsList(files))
                | "SpreadShards" >> beam.Reshuffle()
                | "MergeShards" >> beam.Map(merge_shard, temp_dir, schema).with_output_types(str))

    def finalize(self, paths: Iterable[str], num_shards: int) -> list[str]:
        return finalize_shards(paths, self.temp_dir, self.prefix, self.schema, num_shards)


class WriteTable(beam.PTransform):
    """Write dict rows as `{output}/{table}/part-SSSSS-of-NNNNN.parquet` with a schema from
    data_specs/ (table `schema`, default `table`, of `data_specs/{dataset}_schema.yaml`).

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
