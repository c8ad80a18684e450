"""A check for tests: no value that enters a grouping of a pipeline carries a given text."""
from __future__ import annotations

from typing import Any

import apache_beam as beam
from apache_beam.pipeline import PipelineVisitor
from apache_beam.transforms.core import GroupByKey, ParDo


def _holds(value: Any, marker: str) -> bool:
    return marker in repr(value)


class _Groupings(PipelineVisitor):
    def __init__(self, skip: tuple[str, ...]) -> None:
        self.inputs: list = []
        self._skip = skip

    def visit_transform(self, node) -> None:
        if any(part in node.full_label for part in self._skip):
            return
        if isinstance(node.transform, GroupByKey):
            self.inputs.extend(node.inputs)
        elif isinstance(node.transform, ParDo) and node.side_inputs:
            # A step with a side input: its main input waits whole until the side input is ready.
            self.inputs.extend(node.inputs[:1])


def assert_no_grouping_carries(pipeline: beam.Pipeline, marker: str, skip: tuple[str, ...] = ("Create",)) -> int:
    """Add to `pipeline` a check on the input of each of its `GroupByKey`s (CoGroupByKey's and
    combiners' included) and on the main input of each step with a side input (which waits
    whole for it), those of steps whose full label holds one of `skip` left out (a test's own
    `Create`), that fails the run when a value holds `marker`; returns how many inputs are
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
