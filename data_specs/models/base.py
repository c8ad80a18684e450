"""The building blocks of every spec model: `SpecModel` (strict keys, frozen, YAML key names as
aliases, attribute docstrings as descriptions), the value types its fields use (`Count`,
`Positive`, `Fraction`, ...), the `Expect` marker naming what a type allows, and `min_le_max`,
the check that one bound of a section does not exceed the other.

Integers are strict (no bools, no `1.5`, no `"12"`), numbers accept integers (`85` -> `85.0`)
but not bools or strings, booleans accept only `true` / `false`.
"""
from __future__ import annotations

import re
from typing import Annotated, List, Literal, Optional

from annotated_types import Ge, Gt, Le, MinLen
from pydantic import AfterValidator, BaseModel, ConfigDict, Strict
from pydantic_core import PydanticCustomError


class Expect:
    """`Annotated` marker: the words `SpecError` uses for what a type allows."""

    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return f"Expect({self.text!r})"


def _check_regex(value: str) -> str:
    try:
        re.compile(value)
    except re.error as exc:
        raise PydanticCustomError("regex", "not a regular expression: {detail}", {"detail": str(exc)}) from None
    return value


# ---- value types ----------------------------------------------------------------------------
StrictInt = Annotated[int, Strict()]
Count = Annotated[int, Strict(), Ge(0)]            # 0 is meaningful (none / off)
Positive = Annotated[int, Strict(), Ge(1)]         # sizes, batch sizes, permutations, n-grams
Seed = Annotated[int, Strict(), Ge(0)]
Number = Annotated[float, Strict()]
NonNegative = Annotated[float, Strict(), Ge(0)]
PositiveNumber = Annotated[float, Strict(), Gt(0)]
Fraction = Annotated[float, Strict(), Ge(0), Le(1)]   # thresholds, rates, probabilities
Percent = Annotated[float, Strict(), Ge(0), Le(100)]
Flag = Annotated[bool, Strict()]
Text = Annotated[str, Strict()]                      # may be empty ("" = unset / default)
Name = Annotated[str, Strict(), MinLen(1)]
Regex = Annotated[str, Strict(), AfterValidator(_check_regex), Expect("a regular expression")]
Device = Literal["cpu", "cuda", "auto"]
EncodingPolicy = Literal["lenient", "strict"]     # see transforms/core/io/text.py
ControlPolicy = Literal["remove", "reject"]


class SpecModel(BaseModel):
    """Base of every spec model: strict keys, frozen, YAML key names as aliases. The docstring
    under each field becomes its `description` (`use_attribute_docstrings`), from which the spec
    reference page is generated."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True,
                              use_attribute_docstrings=True)

    @classmethod
    def attribute_for(cls, key: str) -> Optional[str]:
        """The attribute name of a YAML key (`allennlp-predictions` -> `allennlp_predictions`)."""
        if key in cls.model_fields:
            return key
        for name, info in cls.model_fields.items():
            if info.alias == key:
                return name
        return None

    @classmethod
    def yaml_keys(cls) -> List[str]:
        """The section's keys as written in the YAML (aliases), in order."""
        return [info.alias or name for name, info in cls.model_fields.items()]


def min_le_max(section: BaseModel, low: str, high: str) -> None:
    """PydanticCustomError `min_above_max` unless section.low <= section.high (YAML names in ctx)."""
    lo, hi = getattr(section, low), getattr(section, high)
    if lo is not None and hi is not None and lo > hi:
        fields = type(section).model_fields
        raise PydanticCustomError(
            "min_above_max", "{low}={low_value!r} must be <= {high}={high_value!r}",
            {"low": fields[low].alias or low, "high": fields[high].alias or high,
             "low_value": lo, "high_value": hi})
