"""Dealing elements out over the workers with a grouping, on every runner.

Beam's `Reshuffle` is what a runner makes of it: Flink's batch runner turns it into the DataSet
`rebalance()`, which Flink does not apply where the reshuffled collection comes out of a step
with several outputs or out of a union (the job's plan shows `Forward` edges, and each file is
read by the subtask that matched it). A `GroupByKey` is a hash partition on every runner, so
`Spread` keys each element (its own key, or a random one), groups, and lets the elements go
again: each group holds one element, or the few that share a key.
"""
from __future__ import annotations

import random
from typing import Any, Callable, Iterable, Iterator, Optional

import apache_beam as beam


def random_key(_: Any) -> int:
    """A key that puts an element anywhere (placement only: no result depends on it)."""
    return random.getrandbits(32)


def ungroup(grouped: tuple[Any, Iterable[Any]]) -> Iterator[Any]:
    """The elements of a group, as they were."""
    yield from grouped[1]


class Spread(beam.PTransform):
    """Elements dealt out over the workers by a grouping on `key(element)` (default: random).

    Give a key that is unique per element where it is cheap (a file's path): placement is then
    the same on every run.
    """

    def __init__(self, key: Optional[Callable[[Any], Any]] = None):
        super().__init__()
        self._key = key or random_key

    def expand(self, pcoll):
        key = self._key
        return (pcoll
                | "Key" >> beam.Map(lambda element: (key(element), element))
                | "Group" >> beam.GroupByKey()
                | "Ungroup" >> beam.FlatMap(ungroup))
