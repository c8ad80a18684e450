"""Beam sinks: PCollections of dict rows as Parquet tables with the schemas kept in data_specs/.

Kept apart from `transforms.core.io.tables` so that the commands which only read a run (export, stats,
score) never import Beam. The files themselves (writing, merging, finalising a table's shards)
are `transforms.core.io.shards`, whose doc says where each file goes.

`WriteTable` writes its shards itself rather than through `beam.io.WriteToParquet`, whose generic
file-sink protocol (a DoOnce root, then initialise, pre-finalise and finalise steps joined by
side inputs) takes 13 steps and four stages per table where this one takes 3 steps and one
stage (see docs/benchmarks.md#what-makes-a-run-from-annotations-cheap). One step, fused with the
producer, writes each bundle's rows into a new file as they arrive (`WriteBundlesFn`); with a
fixed `num_shards`, steps of their own merge those files into the shards; and one finalising
step, which gets the written paths as a side input, gives the table its shards
(`transforms.core.io.shards.finalize_shards`).
"""
from __future__ import annotations

import uuid
from typing import Any, Callable, Iterable, Iterator, Mapping, Optional, Sequence, Union

import apache_beam as beam
import pyarrow as pa
from apache_beam.transforms.window import GlobalWindows

from transforms.core.io.shards import (
    SHARD_PREFIX,
    TEMP_PREFIX,
    ShardWriter,
    finalize_shards,
    is_local,
    merge_shard,
    plan_shards,
    table_schema,
    unique_path,
)


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
            self._writer = ShardWriter(unique_path(self._start), self._schema)
        self._writer.write(row if self._row_of is None else self._row_of(row))
        return ()   # the shard's path comes at the bundle's end (Beam warns of a process without return)

    def finish_bundle(self) -> Iterator[Any]:
        if self._writer is not None:
            rows = self._writer.rows
            path, self._writer = self._writer.close(), None
            yield GlobalWindows.windowed_value((path, rows) if self._with_rows else path)


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
        """The table's shard paths, from the files `write` gave (`finalize_shards`)."""
        return finalize_shards(paths, self.temp_dir, self.prefix, self.schema, num_shards)


class WriteTable(beam.PTransform):
    """Write dict rows as `{output}/{table}/part-SSSSS-of-NNNNN.parquet` (runner-decided shards on
    an object store: `part-<uuid>.parquet`, see `transforms.core.io.shards`) with a schema from data_specs/
    (table `schema`, default `table`, of `data_specs/{dataset}_schema.yaml`).

    `num_shards` 0 lets the runner decide (one shard per bundle that had rows, at least one);
    N > 0 spreads the rows over exactly N shards. Returns the PCollection of the shard paths.
    `file_metadata` (`transforms.core.reporting.provenance.file_metadata`: csdata version, spec and input
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
