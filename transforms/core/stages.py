"""Stages in Beam: per-element functions whose `Reject`s go to a tagged rejects output, with a
Beam counter per reason and `((stage, outcome), n)` tallies summed into `summary.json`.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator, NamedTuple, Optional, Sequence

import apache_beam as beam
from apache_beam.metrics import Metrics
from apache_beam.transforms.window import GlobalWindows

from transforms.core.accounting import NAMESPACE, REJECTS, TALLIES, Outcome, Reject, build_summary
from transforms.core.io.tables import write_json


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


class StageStep(NamedTuple):
    """One stage of `ChainedStages`: `fn` and `units` as in `Stage`; `emit(kept value)` gives
    what the step outputs for a kept value (default: the value itself), on the tagged output
    `output`, or on the main output for the last step."""

    stage: str
    fn: Callable[[Any], Iterable[Outcome]]
    units: Callable[[Any], int] = lambda _: 1
    emit: Optional[Callable[[Any], Iterable[Any]]] = None
    output: Optional[str] = None


class ChainedStagesFn(beam.DoFn):
    """Successive stages in one step: each kept value of a step goes on to the next one (a DoFn
    for the bundle and the tagged outputs: each stage's tallies are summed per bundle)."""

    def __init__(self, steps: Sequence[StageStep]):
        self._steps = tuple(steps)
        self._tallies = [BundleTally(step.stage) for step in self._steps]

    def start_bundle(self) -> None:
        for tally in self._tallies:
            tally.start()

    def process(self, element: Any) -> Iterator[Any]:
        return self._run(0, element)

    def _run(self, index: int, element: Any) -> Iterator[Any]:
        step, last = self._steps[index], index == len(self._steps) - 1
        for value in self._tallies[index].route(step.units(element), step.fn(element)):
            if isinstance(value, beam.pvalue.TaggedOutput):
                yield value
                continue
            emitted = (value,) if step.emit is None else step.emit(value)
            if last:
                yield from emitted
            else:
                if step.output is not None:
                    for out in emitted:
                        yield beam.pvalue.TaggedOutput(step.output, out)
                yield from self._run(index + 1, value)

    def finish_bundle(self) -> Iterator[Any]:
        for tally in self._tallies:
            yield from tally.flush()


class ChainedStages(beam.PTransform):
    """Several `Stage`s in one Beam step, with the same accounting (each stage's in = kept +
    rejected, a counter per reason): one step instead of one per stage and per map between them.

    Returns `(kept, rejects, tallies, *outputs)`: the last step's emitted values, the rejects and
    tallies of every stage, then the PCollection of each step's `output`, in step order.
    """

    def __init__(self, steps: Sequence[StageStep]):
        super().__init__()
        self._steps = tuple(steps)
        self._outputs = [step.output for step in self._steps[:-1] if step.output is not None]

    def expand(self, pcoll):
        results = pcoll | "Apply" >> beam.ParDo(ChainedStagesFn(self._steps)).with_outputs(
            REJECTS, TALLIES, *self._outputs, main="kept")
        return (results.kept, results[REJECTS], results[TALLIES], *(results[o] for o in self._outputs))


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
    """Sum `((stage, outcome), n)` tallies; write `summary.json` ({stage: {in, kept, rejected}}).

    The tallies of a stage named in `sections` are not a stage of the table: they become the
    entry `{outcome: n}` of that name in summary.json (present only when such tallies came).
    `few=True` says the tallies are few (every stage sums them per bundle: `BundleTally`), so
    they are summed as one side input of the step that writes the summary (one step after an
    `Impulse`, where a lifted global combine takes five and a keyed grouping four); leave it
    off where a stage tallies per element (`route`).
    """

    def __init__(self, path: str, stage_order: list[str], sections: Sequence[str] = (), few: bool = False):
        super().__init__()
        self._path = path
        self._order = stage_order
        self._sections = tuple(sections)
        self._few = few

    def expand(self, tallies):
        path, order, sections = self._path, self._order, self._sections
        # The Impulse's element (which counts nothing) makes a run without any tally write its
        # (empty) summary too, without a default side input or a Create's steps.
        start = tallies.pipeline | "Start" >> beam.Impulse()
        if self._few:
            return start | "WriteSummary" >> beam.Map(
                lambda _, found: write_json(path, summary_with_sections(sum_tallies(found), order, sections)),
                beam.pvalue.AsList(tallies))
        started = (tallies, start) | "WithStart" >> beam.Flatten()
        # One global combine instead of a per-key sum and then a list.
        counts = started | "CountOutcomes" >> beam.CombineGlobally(SumTallies()).without_defaults()
        return counts | "WriteSummary" >> beam.Map(
            lambda totals: write_json(path, summary_with_sections(totals, order, sections)))


def summary_with_sections(counts: Iterable[tuple[tuple[str, str], int]], order: list[str],
                          sections: Sequence[str]) -> dict:
    """`build_summary` of the stages' counts, plus `{outcome: n}` for each of `sections`."""
    stages: list[tuple[tuple[str, str], int]] = []
    extra: dict[str, dict[str, int]] = {}
    for (stage, outcome), n in counts:
        if stage in sections:
            extra.setdefault(stage, {})[outcome] = n
        else:
            stages.append(((stage, outcome), n))
    return {**build_summary(stages, order), **extra}


def sum_tallies(tallies: Iterable[Optional[tuple[tuple[str, str], int]]]) -> list[tuple[tuple[str, str], int]]:
    """`((stage, outcome), total)` of `((stage, outcome), n)` tallies, sorted (an empty value,
    `None` or the Impulse's `b""`, counts nothing)."""
    totals: dict[tuple[str, str], int] = {}
    for tally in tallies:
        if tally:
            key, n = tally
            totals[key] = totals.get(key, 0) + n
    return sorted(totals.items())


class SumTallies(beam.CombineFn):
    """Sum `((stage, outcome), n)` tallies into a sorted list of `((stage, outcome), total)`
    (an empty value, `None` or the Impulse's `b""`, counts nothing)."""

    def create_accumulator(self) -> dict[tuple[str, str], int]:
        return {}

    def add_input(self, totals: dict[tuple[str, str], int],
                  tally: Optional[tuple[tuple[str, str], int]]) -> dict[tuple[str, str], int]:
        if not tally:
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
