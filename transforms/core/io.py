"""Parquet and JSON I/O: PCollections of dict rows as shards with the schemas kept in data_specs/,
small plain-Python tables, reading a run's tables back, and `summary.json`."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence, Union

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems

from data_specs import load_schema

PathLike = Union[str, Path]


class WriteTable(beam.PTransform):
    """Write dict rows as `{output}/{table}/part-*.parquet` with a schema from data_specs/.

    The schema is table `schema` (default: `table`) of `data_specs/{dataset}_schema.yaml`.
    """

    def __init__(self, output: str, table: str, num_shards: int = 0, schema: Optional[str] = None,
                 dataset: str = "record"):
        super().__init__()
        self._output = output
        self._table = table
        self._num_shards = num_shards
        self._schema = schema or table
        self._dataset = dataset

    def expand(self, rows):
        return rows | beam.io.WriteToParquet(
            file_path_prefix=f"{self._output}/{self._table}/part",
            schema=load_schema(self._dataset, self._schema),
            file_name_suffix=".parquet",
            num_shards=self._num_shards,
        )


SHARD = "part-00000-of-00001.parquet"


def write_rows(rows: Sequence[Mapping[str, Any]], dataset: str, table: str, folder: Path) -> None:
    """Plain-Python output of small steps: replace `folder`'s shards with one shard of `rows`
    (written even when empty), fields projected onto table `table` of `{dataset}_schema.yaml`."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.parquet"):
        old.unlink()
    schema = load_schema(dataset, table)
    pq.write_table(pa.Table.from_pylist([{f: r.get(f) for f in schema.names} for r in rows],
                                        schema=schema), folder / SHARD)


def read_table(output_dir: PathLike, table: str, columns: Optional[Sequence[str]] = None) -> pa.Table:
    """Read and concatenate every `output_dir/table/*.parquet` shard, in sorted file-name order.

    Raises FileNotFoundError when the folder holds no Parquet shard.
    """
    folder = Path(output_dir) / table
    shards = sorted(folder.glob("*.parquet"))
    if not shards:
        raise FileNotFoundError(f"no Parquet shards for table {table!r} in {folder}")
    cols = list(columns) if columns is not None else None
    return pa.concat_tables([pq.read_table(path, columns=cols) for path in shards])


def write_json(path: str, payload: dict) -> str:
    """Write `payload` as indented JSON to `path` (local or any Beam filesystem); return the path."""
    with FileSystems.create(path) as handle:
        handle.write(json.dumps(payload, indent=2).encode("utf-8"))
    return path

def read_summary(path: str) -> dict:
    """Read a `summary.json` written by `Summarize`."""
    with FileSystems.open(path) as handle:
        return json.loads(handle.read().decode("utf-8"))
