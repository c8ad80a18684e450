"""Plain-Python Parquet and JSON I/O: small tables with the schemas kept in data_specs/, reading a
run's tables back, and `summary.json`. (PCollections are written by `transforms.core.io.sinks`.)

Beam is not imported here: its filesystems are used only for a path with a scheme (gs://...), and
pyarrow is imported when a table is read or written, so commands that only read stay light."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Optional, Sequence, Union

from data_specs import load_schema

if TYPE_CHECKING:
    import pyarrow as pa

PathLike = Union[str, Path]

SHARD = "part-00000-of-00001.parquet"


def write_rows(rows: Sequence[Mapping[str, Any]], dataset: str, table: str, folder: Path,
               file_metadata: Optional[Mapping[str, str]] = None) -> None:
    """Plain-Python output of small steps: replace `folder`'s shards with one shard of `rows`
    (written even when empty), fields projected onto table `table` of `{dataset}_schema.yaml`;
    `file_metadata` (`transforms.core.reporting.provenance.file_metadata`) is the file's key-value metadata."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.parquet"):
        old.unlink()
    schema = load_schema(dataset, table)
    if file_metadata:
        schema = schema.with_metadata(dict(file_metadata))
    pq.write_table(pa.Table.from_pylist([{f: r.get(f) for f in schema.names} for r in rows],
                                        schema=schema), folder / SHARD)


def read_table(output_dir: PathLike, table: str, columns: Optional[Sequence[str]] = None) -> pa.Table:
    """Read and concatenate every `output_dir/table/*.parquet` shard, in sorted file-name order.

    Raises FileNotFoundError when the folder holds no Parquet shard.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = Path(output_dir) / table
    shards = sorted(folder.glob("*.parquet"))
    if not shards:
        raise FileNotFoundError(f"no Parquet shards for table {table!r} in {folder}")
    cols = list(columns) if columns is not None else None
    return pa.concat_tables([pq.read_table(path, columns=cols) for path in shards])


def write_json(path: str, payload: dict) -> str:
    """Write `payload` as indented JSON to `path` (local or any Beam filesystem); return the path."""
    data = json.dumps(payload, indent=2).encode("utf-8")
    if "://" in path:
        from apache_beam.io.filesystems import FileSystems

        with FileSystems.create(path) as handle:
            handle.write(data)
        return path
    parent = os.path.dirname(path)
    if parent:
        os.makedirs(parent, exist_ok=True)   # as Beam's local filesystem does
    with open(path, "wb") as handle:
        handle.write(data)
    return path


def read_summary(path: str) -> dict:
    """Read a `summary.json` written by `Summarize` (local or any Beam filesystem)."""
    if "://" in path:
        from apache_beam.io.filesystems import FileSystems

        with FileSystems.open(path) as handle:
            return json.loads(handle.read().decode("utf-8"))
    with open(path, "rb") as handle:
        return json.loads(handle.read().decode("utf-8"))
