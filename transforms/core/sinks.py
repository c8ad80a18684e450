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
fixed `num_shards`) and removes the temporary folder. A retried bundle leaves only an orphan
temporary file, which goes with the folder, and a retried finalisation skips the files it
already moved. Works on any Beam filesystem (local, gs://, ...).
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
                 row_of: Optional[Callable[[Any], Mapping[str, Any]]] = None):
        self._temp_dir = temp_dir
        self._schema = schema
        self._row_of = row_of
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
            path, self._writer = self._writer.close(), None
            yield GlobalWindows.windowed_value(path)


def write_group(keyed_rows: tuple[int, Iterable[Any]], temp_dir: str, schema: pa.Schema,
                row_of: Optional[Callable[[Any], Mapping[str, Any]]] = None) -> str:
    """One fixed shard's rows (or elements made rows by `row_of`) into a new temporary file;
    returns its path."""
    writer = ShardWriter(_temp_path(temp_dir), schema)
    for row in keyed_rows[1]:
        writer.write(row if row_of is None else row_of(row))
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
    if FileSystems.exists(temp_dir):              # a local folder: goes with what is left in it
        FileSystems.delete([temp_dir])
    else:                                         # object stores have no folders
        leftovers = [m.path for result in FileSystems.match([f"{temp_dir}/*"])
                     for m in result.metadata_list]
        if leftovers:
            FileSystems.delete(leftovers)
    return final


class _RoundRobin(beam.DoFn):
    """Key rows 0, 1, ..., n-1, 0, ... in arrival order (a DoFn for the per-instance counter)."""

    def __init__(self, num_shards: int):
        self._n = num_shards
        self._next = 0

    def process(self, row: Any) -> Iterator[tuple[int, Any]]:
        shard, self._next = self._next, (self._next + 1) % self._n
        yield shard, row


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

    def write(self, rows: Union[beam.PCollection, tuple[beam.PCollection, ...]], num_shards: int,
              element_type: Any = None) -> beam.PCollection:
        """The temporary files of `rows` (the step(s) that write them, fused with the producer).

        `rows` may be a tuple of PCollections, the parts of one table: without fixed shards each
        part is written by a step of its own, fused with that part's producer, so that no row
        leaves the stage that made it; with fixed shards the parts are flattened first (typed
        `element_type`, so that a registered coder moves them).
        """
        temp_dir, schema, row_of = self.temp_dir, self.schema, self.row_of
        if isinstance(rows, tuple) and num_shards > 0:
            rows = rows | "FlattenParts" >> beam.Flatten().with_output_types(element_type or Any)
        # Output types are declared: Beam would otherwise infer them from the bytecode.
        if num_shards > 0:
            return (rows | "AssignShards" >> beam.ParDo(_RoundRobin(num_shards))
                    | "GroupShards" >> beam.GroupByKey()
                    | "WriteShards" >> beam.Map(write_group, temp_dir, schema, row_of).with_output_types(str))
        if isinstance(rows, tuple):
            return ([part | f"WriteBundles{i}" >> beam.ParDo(WriteBundlesFn(temp_dir, schema, row_of))
                     .with_output_types(str) for i, part in enumerate(rows)]
                    | "Paths" >> beam.Flatten().with_output_types(str))
        return rows | "WriteBundles" >> beam.ParDo(WriteBundlesFn(temp_dir, schema, row_of)).with_output_types(str)

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
    runner. `row_of` maps a table name to how its elements become rows (dict rows otherwise),
    `element_types` to their type where the parts are flattened (fixed `num_shards`). Returns
    the PCollection of every table's shard paths."""

    def __init__(self, output: str, tables: Sequence[str], num_shards: int = 0, dataset: str = "record",
                 file_metadata: Optional[Mapping[str, str]] = None,
                 row_of: Optional[Mapping[str, Callable[[Any], Mapping[str, Any]]]] = None,
                 element_types: Optional[Mapping[str, Any]] = None):
        super().__init__()
        row_of = row_of or {}
        self._order = list(tables)
        self._names = list(dict.fromkeys(tables))
        self._tables = [_Table(output, name, None, dataset, file_metadata, row_of.get(name))
                        for name in self._names]
        self._num_shards = num_shards
        self._types = dict(element_types or {})

    def expand(self, pcolls):
        tables, num_shards = self._tables, self._num_shards
        if len(pcolls) != len(self._order):
            raise ValueError(f"WriteTables got {len(pcolls)} PCollections for {len(self._order)} tables")
        parts: dict[str, list[beam.PCollection]] = {name: [] for name in self._names}
        for name, rows in zip(self._order, pcolls):
            parts[name].append(rows)
        written = [(tuple(parts[name]) if len(parts[name]) > 1 else parts[name][0])
                   | f"Write{name.title().replace('_', '')}"
                   >> _TableWrite(table, num_shards, self._types.get(name))
                   for name, table in zip(self._names, tables)]

        def finalize(_: Any, *paths: list[str]) -> list[str]:
            return [path for table, table_paths in zip(tables, paths)
                    for path in table.finalize(table_paths, num_shards)]

        return (pcolls[0].pipeline | "Once" >> beam.Impulse()
                | "Finalize" >> beam.FlatMap(finalize, *(beam.pvalue.AsList(w) for w in written))
                .with_output_types(str))


class _TableWrite(beam.PTransform):
    """The writing half of `WriteTable` (its own label scope, so that tables do not clash)."""

    def __init__(self, table: _Table, num_shards: int, element_type: Any = None):
        super().__init__()
        self._table, self._num_shards, self._type = table, num_shards, element_type

    def expand(self, rows):
        return self._table.write(rows, self._num_shards, self._type)
