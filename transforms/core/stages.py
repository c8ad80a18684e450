"""Stages in Beam: per-element functions whose `Reject`s go to a tagged rejects output, with a
Beam counter per reason and `((stage, outcome), n)` tallies summed into `summary.json`.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator, Optional

import apache_beam as beam
from apache_beam.metrics import Metrics
from apache_beam.transforms.window import GlobalWindows

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

def split_sides(values: Iterable[tuple[int, Any]], side: int) -> tuple[list[Any], list[Any]]:
    """The values of one key of a join made with a plain `GroupByKey` over `(side, value)`
    pairs (cheaper than `CoGroupByKey`'s tagging steps): those of `side`, then the others."""
    mine: list[Any] = []
    others: list[Any] = []
    for value_side, value in values:
        (mine if value_side == side else others).append(value)
    return mine, others


class BundleTally:
    """The accounting of one stage within one bundle: outcomes are routed as `route` does, but
    tallies and counters are summed per bundle and sent once at its end (`flush`), so a stage
    sends one tally per outcome per bundle instead of one per unit.

    A DoFn calls `start()` in `start_bundle`, `route(...)` in `process` and yields `flush()` in
    `finish_bundle`; `units` is tallied before the outcomes are looked at, as in `route`.
    """

    def __init__(self, stage: str):
        self.stage = stage
        self.counts: dict[str, int] = {}

    def start(self) -> None:
        self.counts = {}

    def route(self, units: int, outcomes: Iterable[Outcome]) -> Iterator[Any]:
        """Yield kept values as they are and `Reject`s on the rejects output; tally both."""
        counts = self.counts
        counts["in"] = counts.get("in", 0) + units
        kept = 0
        for outcome in outcomes:
            if isinstance(outcome, Reject):
                key = "rejected." + outcome.reason
                counts[key] = counts.get(key, 0) + 1
                yield beam.pvalue.TaggedOutput(REJECTS, outcome)
            else:
                kept += 1
                yield outcome
        if kept:
            counts["kept"] = counts.get("kept", 0) + kept

    def flush(self) -> Iterator[Any]:
        """The bundle's tallies (windowed, for `finish_bundle`); bumps the stage's counters."""
        stage, counts = self.stage, self.counts
        self.counts = {}
        for outcome, n in counts.items():
            if outcome != "in":
                Metrics.counter(NAMESPACE, f"{stage}.{outcome}").inc(n)
            yield beam.pvalue.TaggedOutput(TALLIES, GlobalWindows.windowed_value(((stage, outcome), n)))


class ApplyStageFn(beam.DoFn):
    """Run a per-element function; route `Reject` results to the tagged rejects output (a DoFn
    for the bundle: tallies are summed per bundle)."""

    def __init__(self, stage: str, fn: Callable[[Any], Iterable[Outcome]], units: Callable[[Any], int]):
        self._stage = stage
        self._fn = fn
        self._units = units
        self._tally = BundleTally(stage)

    def start_bundle(self) -> None:
        self._tally.start()

    def process(self, element: Any) -> Iterator[Any]:
        return self._tally.route(self._units(element), self._fn(element))

    def finish_bundle(self) -> Iterator[Any]:
        return self._tally.flush()


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
        # One global combine instead of a per-key sum and then a list; the `None` start element
        # makes a run without any tally write its (empty) summary too, without the side input
        # that CombineGlobally's default needs.
        start = tallies.pipeline | "Start" >> beam.Create([None])
        return (
            (tallies, start) | "WithStart" >> beam.Flatten()
            | "CountOutcomes" >> beam.CombineGlobally(SumTallies()).without_defaults()
            | "WriteSummary" >> beam.Map(lambda counts: write_json(path, build_summary(counts, order)))
        )


class SumTallies(beam.CombineFn):
    """Sum `((stage, outcome), n)` tallies into a sorted list of `((stage, outcome), total)`
    (`None` counts nothing)."""

    def create_accumulator(self) -> dict[tuple[str, str], int]:
        return {}

    def add_input(self, totals: dict[tuple[str, str], int],
                  tally: Optional[tuple[tuple[str, str], int]]) -> dict[tuple[str, str], int]:
        if tally is None:
            return totals
        key, n = tally
        totals[key] = totals.get(key, 0) + n
        return totals

    def merge_accumulators(self, accumulators: Iterable[dict[tuple[str, str], int]]
                           ) -> dict[tuple[str, str], int]:
        merged: dict[tuple[str, str], int] = {}
        for totals in accumulators:
            for key, n in totals.items():
                merged[key] = merged.get(key, 0) + n
        return merged

    def extract_output(self, totals: dict[tuple[str, str], int]) -> list[tuple[tuple[str, str], int]]:
        return sorted(totals.items())
