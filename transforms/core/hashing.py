"""Seeded, order-free hashing: every split, sample, fold and draw order comes from these.

A value depends only on the spec's seed and a record's stable id, never on the order or the
worker a record is seen in, so the same spec gives the same splits on one core or a hundred.
"""
from __future__ import annotations

import hashlib
from typing import Any, Callable, Iterable, TypeVar

T = TypeVar("T")


def seeded_digest(*parts: Any) -> str:
    """sha1 hex of the parts joined by ':' (e.g. `seeded_digest(seed, passage_id)`)."""
    return hashlib.sha1(":".join(map(str, parts)).encode("utf-8")).hexdigest()


def unit_hash(*parts: Any) -> float:
    """A number in [0, 1) from a sha1 of the parts: the seeded, order-free coin of every sample."""
    digest = hashlib.sha1(":".join(map(str, parts)).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2 ** 64


def seeded_order(items: Iterable[T], seed: Any, key: Callable[[T], Any] = str) -> list[T]:
    """`items` sorted by `seeded_digest(seed, key(item))`: a shuffle that no run order changes."""
    return sorted(items, key=lambda item: seeded_digest(seed, key(item)))
