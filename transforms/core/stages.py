"""Stages in Beam: per-element functions whose `Reject`s go to a tagged rejects output, with a
Beam counter per reason and `((stage, outcome), n)` tallies summed into `summary.json`.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator

import apache_beam as beam
from apache_beam.metrics import Metrics

from transforms.core.accounting import NAMESPACE, REJECTS, TALLIES, Outcome, Reject, build_summary
from transforms.core.io import write_json


def count_reject(reject: Reject) -> None:
    """Bump the Beam counter of a reject's stage and reason."""
    Metrics.counter(NAMESPACE, f"{reject.stage}.rejected.{reject.reason}").inc()

def route(stage: str, units: int, outcomes: Iterable[Outcome], kept_counter) -> Iterator[Any]:
    """Yield kept values as they are, `Reject`s on the rejects output, and the stage's tallies.

    `units` (how many units of the stage the input element holds) is tallied before the outcomes
    are looked at, so a stage that loses records shows up as in != kept + rejected.
    """
    yield beam.pvalue.TaggedOutput(TALLIES, ((stage, "in"), units))
    for outcome in outcomes:
        if isinstance(outcome, Reject):
            count_reject(outcome)
            yield beam.pvalue.TaggedOutput(REJECTS, outcome)
            yield beam.pvalue.TaggedOutput(TALLIES, ((stage, "rejected." + outcome.reason), 1))
        else:
            kept_counter.inc()
            yield outcome
            yield beam.pvalue.TaggedOutput(TALLIES, ((stage, "kept"), 1))

class ApplyStageFn(beam.DoFn):
    """Run a per-element function; route `Reject` results to the tagged rejects output."""

    def __init__(self, stage: str, fn: Callable[[Any], Iterable[Outcome]], units: Callable[[Any], int]):
        self._stage = stage
        self._fn = fn
        self._units = units

    def setup(self) -> None:
        self._kept = Metrics.counter(NAMESPACE, f"{self._stage}.kept")

    def process(self, element: Any) -> Iterator[Any]:
        yield from route(self._stage, self._units(element), self._fn(element), self._kept)

class Stage(beam.PTransform):
    """Apply `fn` (element -> kept values and `Reject`s) and tally the stage's accounting.

    `units(element)` says how many units of this stage an input element holds (1 article, or the
    number of sentences of an article); it is counted apart from `fn`'s outcomes. The result is a
    `(kept, rejects, tallies)` tuple; tallies are `((stage, outcome), n)` pairs for `Summarize`.
    """

    def __init__(self, stage: str, fn: Callable[[Any], Iterable[Outcome]],
                 units: Callable[[Any], int] = lambda _: 1):
        super().__init__(label=None)
        self._stage = stage
        self._fn = fn
        self._units = units

    def expand(self, pcoll):
        results = pcoll | "Apply" >> beam.ParDo(
            ApplyStageFn(self._stage, self._fn, self._units)).with_outputs(REJECTS, TALLIES, main="kept")
        return results.kept, results[REJECTS], results[TALLIES]

class Ledger:
    """The rejects and tallies of successive stages: `kept = ledger.add(pcoll | Stage(...))`."""

    def __init__(self) -> None:
        self.rejects: list = []
        self.tallies: list = []

    def add(self, result: tuple) -> Any:
        """Keep a stage's rejects and tallies; return its kept PCollection."""
        kept, rejects, tallies = result
        self.rejects.append(rejects)
        self.tallies.append(tallies)
        return kept

class Summarize(beam.PTransform):
    """Sum `((stage, outcome), n)` tallies; write `summary.json` ({stage: {in, kept, rejected}})."""

    def __init__(self, path: str, stage_order: list[str]):
        super().__init__()
        self._path = path
        self._order = stage_order

    def expand(self, tallies):
        path, order = self._path, self._order
        return (
            tallies
            | "CountOutcomes" >> beam.CombinePerKey(sum)
            | "CollectCounts" >> beam.combiners.ToList()
            | "WriteSummary" >> beam.Map(lambda counts: write_json(path, build_summary(counts, order)))
        )
