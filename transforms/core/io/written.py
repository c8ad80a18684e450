"""What a run wrote where: rows per output table, read from the Parquet footers, for the line a
command prints at the end of a run. Imports pyarrow (and, for an object store, Beam) only when
called, so the CLI may import it at the top.
"""
from __future__ import annotations

import glob
from typing import Optional, Sequence


def table_rows(output_dir: str, table: str) -> Optional[int]:
    """Rows of `{output_dir}/{table}/*.parquet` from the Parquet footers; None without shards."""
    import pyarrow.parquet as pq

    pattern = f"{output_dir.rstrip('/')}/{table}/*.parquet"
    if "://" not in pattern:                           # local: no Beam file system needed
        paths = sorted(glob.glob(pattern))
        if not paths:
            return None
        return sum(pq.ParquetFile(path).metadata.num_rows for path in paths)
    from apache_beam.io.filesystems import FileSystems

    try:
        paths = [m.path for r in FileSystems.match([pattern]) for m in r.metadata_list]
    except Exception:                                  # no such folder or bucket
        return None
    if not paths:
        return None
    total = 0
    for path in paths:
        with FileSystems.open(path) as handle:
            total += pq.ParquetFile(handle).metadata.num_rows
    return total


def format_written(output_dir: str, tables: Sequence[str]) -> str:
    """Rows per output table and where it is, for the end of a run:

        table               rows  path
        passages              11  out/record/passages/
        queries               41  out/record/queries/

    A table without shards shows `-` rows.
    """
    base = str(output_dir).rstrip("/")
    lines = [f"{'table':<16}{'rows':>9}  path"]
    for table in tables:
        rows = table_rows(base, table)
        shown = "-" if rows is None else f"{rows:,}"
        lines.append(f"{table:<16}{shown:>9}  {base}/{table}/")
    return "\n".join(lines)
