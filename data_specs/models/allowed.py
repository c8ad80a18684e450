"""What a spec field allows, in words: `expected(annotation, metadata)` gives the phrase that
`SpecError` messages and the spec reference page use (`an integer >= 0`, `one of 'a', 'b'`),
from the field's type and its `Annotated` constraints."""
from __future__ import annotations

import types
from typing import Annotated, Any, Dict, List, Literal, Optional, Union, get_args, get_origin

from annotated_types import Ge, Gt, Le, Lt, MinLen
from pydantic.fields import FieldInfo

from data_specs.models.base import Expect, SpecModel


def _flatten(metadata) -> list:
    out = []
    for item in metadata:
        if isinstance(item, FieldInfo):
            out.extend(_flatten(item.metadata))
        else:
            out.append(item)
    return out


def unwrap(annotation: Any, metadata=()) -> tuple:
    """(bare type, flattened metadata) of a possibly `Annotated` type."""
    metadata = _flatten(metadata)
    while get_origin(annotation) is Annotated:
        base, *extra = get_args(annotation)
        annotation, metadata = base, metadata + _flatten(extra)
    return annotation, metadata


def is_union(annotation: Any) -> bool:
    """Whether a bare type is a union (`Union[a, b]`, `Optional[a]` or `a | b`)."""
    return get_origin(annotation) in (Union, types.UnionType)


def _num(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _bounds(metadata) -> str:
    lo: Optional[tuple[str, Any]] = None
    hi: Optional[tuple[str, Any]] = None
    for m in metadata:
        if isinstance(m, Ge):
            lo = ("[", m.ge)
        elif isinstance(m, Gt):
            lo = ("(", m.gt)
        elif isinstance(m, Le):
            hi = ("]", m.le)
        elif isinstance(m, Lt):
            hi = (")", m.lt)
    if lo and hi:
        return f" in {lo[0]}{_num(lo[1])}, {_num(hi[1])}{hi[0]}"
    if lo:
        return f" {'>=' if lo[0] == '[' else '>'} {_num(lo[1])}"
    if hi:
        return f" {'<=' if hi[0] == ']' else '<'} {_num(hi[1])}"
    return ""


def expected(annotation: Any, metadata=()) -> str:
    """What a (possibly Annotated) type allows, e.g. `an integer >= 0`, `one of 'a', 'b'`."""
    annotation, metadata = unwrap(annotation, metadata)
    for m in metadata:
        if isinstance(m, Expect):
            return m.text
    if annotation is type(None):
        return "null"
    if is_union(annotation):
        args = get_args(annotation)
        words = " or ".join(expected(a) for a in args if a is not type(None))
        return words + (" or null" if type(None) in args else "")
    origin = get_origin(annotation)
    if origin is Literal:
        values = get_args(annotation)
        return repr(values[0]) if len(values) == 1 else "one of " + ", ".join(map(repr, values))
    if annotation is bool:
        return "true or false"
    if annotation is int:
        return "an integer" + _bounds(metadata)
    if annotation is float:
        return "a number" + _bounds(metadata)
    if annotation is str:
        if any(isinstance(m, MinLen) and m.min_length >= 1 for m in metadata):
            return "a non-empty string"
        return "a string"
    if origin in (list, List):
        return f"a list (each item {expected(get_args(annotation)[0])})"
    if origin in (dict, Dict):
        key, value = get_args(annotation)
        return f"a mapping of {expected(key)} to {expected(value)}"
    if isinstance(annotation, type) and issubclass(annotation, SpecModel):
        return "a mapping with keys " + ", ".join(annotation.yaml_keys())
    return getattr(annotation, "__name__", str(annotation))
