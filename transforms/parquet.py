"""Writing PCollections of dict rows as Parquet shards with the schemas kept in data_specs/."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

import apache_beam as beam

from data_specs import load_schema


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
