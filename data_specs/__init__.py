"""Dataset specs (YAML, the papers' defaults) and the Parquet schemas of every output.

`load_spec("record", ["passage.min_tokens=120"])` returns a validated, frozen `RecordSpec`
(`CosmosSpec`, `ProtoqaSpec`: the models of `data_specs.models`, picked by the spec's `dataset`
key); every problem is a one-line `SpecError` naming the YAML key, the value and what is allowed.
"""
from __future__ import annotations

import copy
import hashlib
import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Optional, TypeVar, Union, get_args, get_origin

import yaml
from pydantic import BaseModel, ValidationError

from data_specs.models import (
    SPEC_MODELS,
    CosmosSpec,
    ProtoqaSpec,
    RecordSpec,
    Spec,
    SpecModel,
    expected,
    unwrap,
)

if TYPE_CHECKING:
    import pyarrow as pa

SPEC_DIR = Path(__file__).resolve().parent

__all__ = ["SPEC_DIR", "load_dataset_spec", "SPEC_MODELS", "CosmosSpec", "ProtoqaSpec", "RecordSpec", "Spec", "SpecError",
           "MAX_ALIAS_VALUES", "apply_overrides", "load_raw_spec", "load_schema", "load_spec", "load_yaml",
           "spec_hash", "spec_path",
           "validate_spec"]

S = TypeVar("S", RecordSpec, CosmosSpec, ProtoqaSpec)

# pyarrow type of each scalar schema type (pyarrow is imported only when a schema is loaded).
_SCALARS = {
    "string": "string",
    "int32": "int32",
    "int64": "int64",
    "float64": "float64",
    "bool": "bool_",
}
_MAX_ERRORS = 8        # problems listed in one SpecError; the rest are counted
_MAX_REPR = 80
# Values a document's aliases may add once expanded: a shipped spec has about 230 values in all,
# and a "billion laughs" file of nine nested aliases expands a hundred-odd nodes to 9**9 values.
MAX_ALIAS_VALUES = 100_000


class SpecError(ValueError):
    """A spec file or a `--set` override is malformed (the message is one line)."""


def spec_path(name_or_path: str) -> Path:
    """Resolve `record` to the shipped spec, or return a user's YAML path as is."""
    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml"):
        return path
    return SPEC_DIR / f"{name_or_path}.yaml"


def load_raw_spec(name_or_path: str, overrides: Iterable[str] = ()) -> dict[str, Any]:
    """The spec as a plain dict (YAML key names) with the overrides applied, not validated."""
    path = spec_path(name_or_path)
    if not path.is_file():
        raise SpecError(f"spec not found: {path}")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(f"spec {path} cannot be read: {_one_line(exc)}") from None
    try:
        spec = load_yaml(text)
    except RefusedYaml as exc:
        raise SpecError(f"spec {path} is refused: {exc}") from None
    except yaml.YAMLError as exc:
        raise SpecError(f"spec {path} is not valid YAML: {_yaml_problem(exc)}") from None
    if not isinstance(spec, dict):
        raise SpecError(f"spec {path} must be a mapping of sections, got {_short(spec)}")
    return apply_overrides(spec, overrides)


def load_spec(name_or_path: str, overrides: Iterable[str] = ()) -> Spec:
    """Load a dataset spec, apply `dotted.key=value` overrides (values parsed as YAML), validate.

    Returns the frozen model of the spec's `dataset` (`RecordSpec`, `CosmosSpec`, `ProtoqaSpec`);
    `spec.model_dump(by_alias=True)` is the YAML-shaped dict.
    """
    return validate_spec(load_raw_spec(name_or_path, overrides))


def load_dataset_spec(model: type[S], name_or_path: str, overrides: Iterable[str] = ()) -> S:
    """`load_spec` for one dataset's commands: a spec of another dataset is a SpecError."""
    spec = load_spec(name_or_path, overrides)
    if not isinstance(spec, model):
        wanted = next(name for name, cls in SPEC_MODELS.items() if cls is model)
        raise SpecError(f"spec {name_or_path} is a {spec.dataset} spec; these commands need "
                        f"a {wanted} spec (dataset: {wanted})")
    return spec


def validate_spec(raw: Union[Mapping[str, Any], BaseModel]) -> Spec:
    """The typed spec of a YAML-shaped dict, chosen by its `dataset`; problems are a SpecError."""
    if isinstance(raw, BaseModel):
        raw = raw.model_dump(by_alias=True)
    if not isinstance(raw, Mapping):
        raise SpecError(f"a spec must be a mapping of sections, got {_short(raw)}")
    dataset = raw.get("dataset")
    model = SPEC_MODELS.get(dataset) if isinstance(dataset, str) else None
    if model is None:
        allowed = ", ".join(repr(k) for k in SPEC_MODELS)
        what = "missing" if "dataset" not in raw else f"{_short(dataset)}"
        raise SpecError(f"spec value dataset={what} is invalid: expected one of {allowed}")
    try:
        return model.model_validate(dict(raw))  # type: ignore[return-value]
    except ValidationError as exc:
        raise SpecError(format_validation_error(model, exc)) from None


def spec_hash(spec: Union[BaseModel, Mapping[str, Any]]) -> str:
    """sha1 of the canonical JSON (sorted keys, YAML key names) of a spec."""
    data = spec.model_dump(by_alias=True, mode="json") if isinstance(spec, BaseModel) else spec
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


def apply_overrides(spec: Union[Mapping[str, Any], BaseModel], overrides: Iterable[str]) -> dict[str, Any]:
    """Return a dict copy of `spec` with each `a.b.c=value` applied; unknown keys are errors.

    A value replacing a mapping (a whole section) must be a mapping itself; a key below a scalar
    value is unknown.
    """
    if isinstance(spec, BaseModel):
        spec = spec.model_dump(by_alias=True)
    result = copy.deepcopy(dict(spec))
    for item in overrides:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise SpecError(f"override must look like key.path=value, got {item!r}")
        try:
            value = load_yaml(raw)
        except RefusedYaml as exc:
            raise SpecError(f"override {key} is refused: {exc}") from None
        except yaml.YAMLError as exc:
            raise SpecError(f"override {item!r} has no valid YAML value: {_yaml_problem(exc)}") from None
        node: Any = result
        parts = key.split(".")
        for depth, part in enumerate(parts):
            where = ".".join(parts[:depth])
            if not isinstance(node, dict):
                raise SpecError(f"spec key {key} is unknown: {where} is a value "
                                f"({_short(node)}), not a section")
            if part not in node:
                inside = f" in {where}" if where else ""
                raise SpecError(f"spec key {key} is unknown (allowed{inside}: "
                                f"{', '.join(map(str, node)) or 'none'})")
            if depth < len(parts) - 1:
                node = node[part]
        old = node[parts[-1]]
        if isinstance(old, dict) and not isinstance(value, dict):
            keys = ", ".join(map(str, old))
            hint = f" (keys: {keys}); set one of them, e.g. --set {key}.{next(iter(old))}=..." if old else ""
            raise SpecError(f"spec value {key}={_short(value)} is invalid: {key} is a mapping, "
                            f"not a single value{hint}")
        node[parts[-1]] = value
    return result


class RefusedYaml(Exception):
    """A YAML document that parses but would be too large or endless once built."""


class _SpecLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing a document whose aliases would expand it by more than
    `MAX_ALIAS_VALUES` values or make it contain itself. The check runs on the composed node
    graph, where an alias is the very node it names, before any Python value is built."""

    def compose_document(self) -> Optional[yaml.Node]:
        node = super().compose_document()
        if node is not None:
            _check_aliases(node)
        return node


def load_yaml(text: str) -> Any:
    """`yaml.safe_load` of a spec file or a `--set` value, refusing ("billion laughs") documents
    whose aliases expand them too far, contain themselves or nest too deeply to build."""
    try:
        return yaml.load(text, Loader=_SpecLoader)  # a SafeLoader: builds plain values only
    except RecursionError:
        raise RefusedYaml("its values nest too deeply") from None


def _check_aliases(root: yaml.Node) -> None:
    """Raise `RefusedYaml` when the document under `root` holds itself through an alias, or when
    expanding its aliases would add more than `MAX_ALIAS_VALUES` values to the values it spells
    out.

    Each distinct node is visited once (its expanded size memoised), so the check costs what the
    file holds, not what it expands to. A subtree whose expanded size already exceeds the nodes
    seen so far by more than the limit settles it: the whole document expands at least as far.
    """
    limit = MAX_ALIAS_VALUES
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, finished = stack.pop()
        key = id(node)
        if finished:
            open_nodes.discard(key)
            sizes[key] = 1 + sum(sizes[id(child)] for child in _children(node))
            if sizes[key] - len(sizes) > limit:
                raise RefusedYaml(f"its aliases expand it by more than {limit} values (the value at "
                                  f"{_where(node.start_mark)})")
            continue
        if key in sizes:
            continue
        if key in open_nodes:    # reached again from inside itself
            raise RefusedYaml(f"the value at {_where(node.start_mark)} contains itself through an alias")
        open_nodes.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in _children(node))


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [item for pair in node.value for item in pair]
    return []


def _where(mark: Any) -> str:
    return f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else "an unknown place"


def _arrow_type(field: Mapping[str, Any]) -> pa.DataType:
    import pyarrow as pa

    kind = field["type"]
    if kind in _SCALARS:
        return getattr(pa, _SCALARS[kind])()
    if kind == "list":
        item = field["item"]
        if isinstance(item, str):
            return pa.list_(getattr(pa, _SCALARS[item])())
        return pa.list_(pa.struct([_arrow_field(f) for f in item]))
    if kind == "struct":
        return pa.struct([_arrow_field(f) for f in field["fields"]])
    raise SpecError(f"unknown schema type {kind!r}")


def _arrow_field(field: Mapping[str, Any]) -> pa.Field:
    """One schema field, its `description` as the Arrow field metadata b"description"."""
    import pyarrow as pa

    description = field.get("description")
    metadata = {b"description": str(description).encode("utf-8")} if description else None
    return pa.field(field["name"], _arrow_type(field), metadata=metadata)


def load_schema(dataset: str, table: str) -> pa.Schema:
    """The pyarrow schema of one output table, e.g. `load_schema("record", "queries")`; each field
    (nested ones too) carries its YAML `description` as the field metadata b"description"."""
    import pyarrow as pa

    path = SPEC_DIR / f"{dataset}_schema.yaml"
    tables = yaml.safe_load(path.read_text(encoding="utf-8"))
    return pa.schema([_arrow_field(f) for f in _fields(tables, table, path.name)])


def _fields(tables: Mapping[str, Any], table: str, where: str) -> list[Mapping[str, Any]]:
    """A table's fields; `{extends: other, fields: [...]}` appends fields to another table's."""
    if table not in tables:
        raise SpecError(f"{where} has no table {table!r}")
    entry = tables[table]
    if isinstance(entry, Mapping):
        return _fields(tables, entry["extends"], where) + list(entry["fields"])
    return list(entry)


# ---- one-line messages ----------------------------------------------------------------------
def format_validation_error(model: type, exc: ValidationError) -> str:
    """One line for every problem pydantic found, `; `-joined, with the YAML key names."""
    messages: list[str] = []
    for error in exc.errors():
        message = _describe_error(model, error)
        if message not in messages:       # a union's members report the same value once each
            messages.append(message)
    shown = messages[:_MAX_ERRORS]
    if len(messages) > len(shown):
        shown.append(f"... and {len(messages) - len(shown)} more")
    return "; ".join(shown)


def _describe_error(model: type, error: Mapping[str, Any]) -> str:
    loc, kind = tuple(error["loc"]), error["type"]
    annotation: Any = model
    metadata: list[Any] = []
    parts: list[Any] = []
    key_error = False
    for index, item in enumerate(loc):
        annotation, metadata = unwrap(annotation, metadata)
        if isinstance(annotation, type) and issubclass(annotation, SpecModel):
            name = annotation.attribute_for(item) if isinstance(item, str) else None
            if name is None:
                where = f" in {_path(parts)}" if parts else ""
                return (f"spec key {_path(parts + [item])} is unknown "
                        f"(allowed{where}: {', '.join(annotation.yaml_keys())})")
            info = annotation.model_fields[name]
            parts.append(item)
            annotation, metadata = info.annotation, list(info.metadata)
            continue
        origin = get_origin(annotation)
        if origin is list and isinstance(item, int):
            parts.append(item)
            annotation, metadata = get_args(annotation)[0], []
            continue
        if origin is dict and item != "[key]":
            key_type, value_type = get_args(annotation)
            parts.append(item)
            if index + 1 < len(loc) and loc[index + 1] == "[key]":
                annotation, metadata, key_error = key_type, [], True
                break
            annotation, metadata = value_type, []
            continue
        break                              # a union member's tag, or below a scalar
    path = _path(parts)
    ctx = error.get("ctx") or {}
    if kind == "missing":
        return f"spec key {path} is missing (expected {expected(annotation, metadata)})"
    if kind == "min_above_max":
        prefix = f"{path}." if path else ""
        return (f"spec value {prefix}{ctx['low']}={_short(ctx['low_value'])} is invalid: must be <= "
                f"{prefix}{ctx['high']} ({_short(ctx['high_value'])})")
    if key_error:
        return f"spec key {path} is invalid: expected {expected(annotation, metadata)} as a key"
    shown = f"{path}={_short(error.get('input'))}"
    if kind in ("regex", "all_zero"):
        return f"spec value {shown} is invalid: {error['msg']}"
    return f"spec value {shown} is invalid: expected {expected(annotation, metadata)}"


_PLAIN_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")


def _path(parts: Iterable[Any]) -> str:
    text = ""
    for part in parts:
        if isinstance(part, int):
            text += f"[{part}]"
        elif isinstance(part, str) and _PLAIN_KEY.match(part):
            text += f".{part}" if text else part
        else:
            text += f"[{part!r}]"
    return text


def _short(value: Any) -> str:
    text = " ".join(repr(value).split())
    return text if len(text) <= _MAX_REPR else text[:_MAX_REPR - 3] + "..."


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


def _yaml_problem(exc: yaml.YAMLError) -> str:
    problem = getattr(exc, "problem", None)
    mark = getattr(exc, "problem_mark", None)
    if problem and mark is not None:
        return f"{problem} at line {mark.line + 1}, column {mark.column + 1}"
    return _one_line(exc)
