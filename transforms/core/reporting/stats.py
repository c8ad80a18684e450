"""Small descriptive statistics shared by the datasets' `csdata stats` tables."""
from __future__ import annotations

import statistics
from typing import Sequence

Bin = tuple[int, int]          # inclusive bounds; an upper bound >= OPEN_END means "and above"
OPEN_END = 10 ** 6


def describe(values: Sequence[float]) -> tuple[float, float, float]:
    """(mean, max, min) of `values`; zeros for an empty sequence."""
    return (statistics.fmean(values) if values else 0.0, max(values, default=0), min(values, default=0))


def bin_label(low: int, high: int) -> str:
    """`7`, `13-15` or `21+`."""
    if low == high:
        return f"{low}"
    return f"{low}+" if high >= OPEN_END else f"{low}-{high}"


def histogram(values: Sequence[int], bins: Sequence[Bin], outside: bool = False) -> list[tuple[str, int]]:
    """(label, count) per inclusive bin; with `outside`, a last ("outside", n) row counts the
    values no bin holds (only when there are some)."""
    rows = [(bin_label(lo, hi), sum(lo <= v <= hi for v in values)) for lo, hi in bins]
    if outside:
        missed = sum(not any(lo <= v <= hi for lo, hi in bins) for v in values)
        if missed:
            rows.append(("outside", missed))
    return rows


def bar_lines(rows: Sequence[tuple[str, int]], title: str, width: int = 40) -> list[str]:
    """A text bar chart of (label, count) rows under `title`, the longest bar `width` wide."""
    top = max((n for _, n in rows), default=0) or 1
    return [title] + [f"  {label:>7} | {'#' * round(width * n / top):<{width}} {n}" for label, n in rows]
