"""Provenance of every output directory and `csdata describe` (no Beam; `describe` loads pyarrow only).

* `record_provenance(folder, args)`: called by `pipeline.cli.main` for every command that wrote an
  output directory; writes `provenance.json` (`transforms.core.reporting.provenance`): the command line,
  the working directory, every input file (path, size, sha256), the validated spec, the versions
  of csdata, its libraries and the model packages, the stage tallies, and the steps of the runs
  it read (an argument naming a directory that has a `provenance.json`), which
  `csdata DATASET reproduce` (`pipeline.cli.releases`) reruns.
* `describe(path)`: `csdata describe FILE`: file metadata, rows, fields with types and descriptions.
"""
from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any, Optional, Sequence

# Namespace entries that are never inputs of a step.
_NOT_INPUTS = {"output", "final_output", "spec", "overrides", "argv", "command", "command_parser", "writes_output", "work",
               "verbose", "quiet", "debug", "format", "reader", "annotator", "similarity", "a", "b"}


# ---- provenance of every output directory --------------------------------------------------------

def _values(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, (list, tuple)):
        return [v for v in value if isinstance(v, str)]
    return []


def step_of(args: argparse.Namespace, folder: str) -> tuple[dict[str, Any], dict[str, dict]]:
    """(this command's step, {argument: provenance of the run it names}) for `provenance.json`."""
    from transforms.core.io.tables import read_summary
    from transforms.core.reporting.provenance import (
        describe_inputs,
        read_provenance,
        spec_data,
        spec_sha256,
        utc_now,
        versions,
    )

    upstreams: dict[str, dict] = {}
    patterns: list[str] = []
    for name, value in sorted(vars(args).items()):
        if name in _NOT_INPUTS or name.endswith("_command"):
            continue
        for item in _values(value):
            if "://" in item:
                continue
            earlier = read_provenance(item) if os.path.isdir(item) else None
            if earlier is not None and isinstance(value, str):
                upstreams[name] = earlier
            elif os.path.exists(item) or any(c in item for c in "*?["):
                patterns.append(item)
    spec: Optional[dict] = None
    if isinstance(getattr(args, "spec", None), str):
        from data_specs import load_spec

        spec = spec_data(load_spec(args.spec, getattr(args, "overrides", [])))
    if "://" in folder:
        from pipeline.outputs.paths import read_json

        stages = (read_json(f"{folder.rstrip('/')}/summary.json") or {}).get("stages")
    else:
        summary_path = Path(folder) / "summary.json"
        stages = read_summary(str(summary_path)).get("stages") if summary_path.is_file() else None
    step = {"command": " ".join(w for w in [args.command, *_subcommands(args)]),
            "argv": list(getattr(args, "argv", [])), "cwd": os.getcwd(),
            "inputs": describe_inputs(patterns), "spec": spec,
            "spec_sha256": spec_sha256(spec) if spec is not None else None,
            "versions": versions(), "finished": utc_now(), "stages": stages}
    return step, upstreams


def _subcommands(args: argparse.Namespace) -> list[str]:
    return [v for k, v in vars(args).items() if k.endswith("_command") and isinstance(v, str)]


def record_provenance(folder: str, args: argparse.Namespace) -> None:
    """Write `provenance.json` into a finished output directory (see the module docstring)."""
    from transforms.core.reporting.provenance import PROVENANCE_FILE, chain, write_provenance

    step, upstreams = step_of(args, folder)
    if "://" in folder:
        from transforms.core.io.tables import write_json

        write_json(f"{folder.rstrip('/')}/{PROVENANCE_FILE}", chain(step, upstreams))
    else:
        write_provenance(folder, chain(step, upstreams))


# ---- csdata describe -------------------------------------------------------------------------

def describe(path: str) -> str:
    """File metadata, row count and every field (type, description) of a Parquet file, or of
    every shard of a table folder (rows summed; metadata and fields of the first shard)."""
    import pyarrow.parquet as pq

    from transforms.core.errors import UserError

    target = Path(path)
    files = sorted(target.glob("*.parquet")) if target.is_dir() else [target]
    if not files or not files[0].is_file():
        raise UserError(f"{path}: no Parquet file there")
    try:
        handles = [pq.ParquetFile(f) for f in files]
    except Exception as error:   # pyarrow raises ArrowInvalid, OSError ... for a non-Parquet file
        raise UserError(f"{path}: not a Parquet file ({' '.join(str(error).split())})") from None
    first = handles[0]
    meta = {k.decode("utf-8", "replace"): v.decode("utf-8", "replace")
            for k, v in (first.schema_arrow.metadata or {}).items() if k != b"ARROW:schema"}
    lines = [f"file: {path}" + (f" ({len(files)} shards)" if len(files) > 1 else ""),
             f"rows: {sum(h.metadata.num_rows for h in handles):,}"]
    lines += [f"{key}: {value}" for key, value in sorted(meta.items())] or ["(no file metadata)"]
    lines.append("fields:")
    lines += _describe_fields(list(first.schema_arrow), 1)
    return "\n".join(lines)


def _describe_fields(fields: Sequence[Any], depth: int) -> list[str]:
    import pyarrow as pa

    lines = []
    for field in fields:
        text = (field.metadata or {}).get(b"description", b"").decode("utf-8")
        kind = field.type
        shown = str(kind) if not (pa.types.is_struct(kind) or pa.types.is_list(kind)) else _kind(kind)
        lines.append(f"{'  ' * depth}{field.name}: {shown}" + (f"  -- {text}" if text else ""))
        while pa.types.is_list(kind):
            kind = kind.value_type
        if pa.types.is_struct(kind):
            lines += _describe_fields(list(kind), depth + 1)
    return lines


def _kind(kind: Any) -> str:
    import pyarrow as pa

    if pa.types.is_list(kind):
        return f"list<{_kind(kind.value_type)}>"
    if pa.types.is_struct(kind):
        return "struct"
    return str(kind)
