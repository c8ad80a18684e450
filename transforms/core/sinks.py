"""Beam sinks: PCollections of dict rows as Parquet shards with the schemas kept in data_specs/.

Kept apart from `transforms.core.io` so that the commands which only read a run (export, stats,
score) never import Beam."""
from __future__ import annotations

from typing import Optional

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
