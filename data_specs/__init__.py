"""Dataset specs (YAML, the papers' defaults) and the Parquet schemas of every output."""
from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Iterable, Mapping

import pyarrow as pa
import yaml

SPEC_DIR = Path(__file__).resolve().parent

_SCALARS = {
    "string": pa.string(),
    "int32": pa.int32(),
    "int64": pa.int64(),
    "float64": pa.float64(),
    "bool": pa.bool_(),
}


class SpecError(ValueError):
    """A spec file or a `--set` override is malformed."""


def spec_path(name_or_path: str) -> Path:
    """Resolve `record` to the shipped spec, or return a user's YAML path as is."""
    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml"):
        return path
    return SPEC_DIR / f"{name_or_path}.yaml"


def load_spec(name_or_path: str, overrides: Iterable[str] = ()) -> dict[str, Any]:
    """Load a dataset spec and apply `dotted.key=value` overrides (values parsed as YAML)."""
    path = spec_path(name_or_path)
    if not path.exists():
        raise SpecError(f"spec not found: {path}")
    spec = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    return apply_overrides(spec, overrides)


def apply_overrides(spec: Mapping[str, Any], overrides: Iterable[str]) -> dict[str, Any]:
    """Return a copy of `spec` with each `a.b.c=value` applied; unknown keys are errors."""
    result = copy.deepcopy(dict(spec))
    for item in overrides:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise SpecError(f"override must look like key.path=value, got {item!r}")
        node: Any = result
        parts = key.split(".")
        for part in parts[:-1]:
            if not isinstance(node, dict) or part not in node:
                raise SpecError(f"unknown spec key {key!r}")
            node = node[part]
        if not isinstance(node, dict) or parts[-1] not in node:
            raise SpecError(f"unknown spec key {key!r}")
        node[parts[-1]] = yaml.safe_load(raw)
    return result


def _arrow_type(field: Mapping[str, Any]) -> pa.DataType:
    kind = field["type"]
    if kind in _SCALARS:
        return _SCALARS[kind]
    if kind == "list":
        item = field["item"]
        if isinstance(item, str):
            return pa.list_(_SCALARS[item])
        return pa.list_(pa.struct([pa.field(f["name"], _arrow_type(f)) for f in item]))
    raise SpecError(f"unknown schema type {kind!r}")


def load_schema(dataset: str, table: str) -> pa.Schema:
    """The pyarrow schema of one output table, e.g. `load_schema("record", "queries")`."""
    path = SPEC_DIR / f"{dataset}_schema.yaml"
    tables = yaml.safe_load(path.read_text(encoding="utf-8"))
    return pa.schema([pa.field(f["name"], _arrow_type(f)) for f in _fields(tables, table, path.name)])


def _fields(tables: Mapping[str, Any], table: str, where: str) -> list[Mapping[str, Any]]:
    """A table's fields; `{extends: other, fields: [...]}` appends fields to another table's."""
    if table not in tables:
        raise SpecError(f"{where} has no table {table!r}")
    entry = tables[table]
    if isinstance(entry, Mapping):
        return _fields(tables, entry["extends"], where) + list(entry["fields"])
    return list(entry)
