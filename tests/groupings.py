"""A check for tests: no value that enters a grouping of a pipeline carries a given text."""
from __future__ import annotations

from typing import Any

import apache_beam as beam
from apache_beam.pipeline import PipelineVisitor
from apache_beam.transforms.core import GroupByKey


def _holds(value: Any, marker: str) -> bool:
    return marker in repr(value)


class _Groupings(PipelineVisitor):
    def __init__(self, skip: tuple[str, ...]) -> None:
        self.inputs: list = []
        self._skip = skip

    def visit_transform(self, node) -> None:
        if isinstance(node.transform, GroupByKey) and not node.full_label.startswith(self._skip):
            self.inputs.extend(node.inputs)


def assert_no_grouping_carries(pipeline: beam.Pipeline, marker: str, skip: tuple[str, ...] = ("Create",)) -> int:
    """Add to `pipeline` a check on the input of each of its `GroupByKey`s (CoGroupByKey's and
    combiners' included, those of steps labelled with a `skip` prefix left out: a test's own
    `Create`) that fails the run when a value holds `marker`; returns how many groupings are
    checked. Call it once the graph is built, before running it."""
    visitor = _Groupings(skip)
    pipeline.visit(visitor)

    def check(value: Any, label: str) -> None:
        if _holds(value, marker):
            raise AssertionError(f"{label}: a value entering the grouping holds {marker!r}: {repr(value)[:200]}")

    for number, pcoll in enumerate(visitor.inputs):
        label = pcoll.producer.full_label if pcoll.producer else str(pcoll)
        _ = pcoll | f"NoTextInGrouping{number}" >> beam.Map(check, label)
    return len(visitor.inputs)
