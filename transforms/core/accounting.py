"""Rejects, per-reason counters and the per-stage tallies behind the end-of-run summary.

Every stage sends each unit it drops to the rejects output with its stage and reason and bumps a
Beam counter; the summary counts each stage's input independently of its outcome, so the check
`in == kept + rejected` can fail when a stage loses records.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Mapping, Optional, Union

import apache_beam as beam
from apache_beam.metrics import Metrics

from transforms.core.io import write_json

NAMESPACE = "csdata"


REJECTS = "rejects"


TALLIES = "tallies"


@dataclass(frozen=True)
class Reject:
    """A dropped unit: the stage that dropped it, the named reason and the record's id."""

    stage: str
    reason: str
    record_id: str
    detail: str = ""

    def row(self) -> dict[str, str]:
        return {"stage": self.stage, "reason": self.reason,
                "record_id": self.record_id, "detail": self.detail}


Outcome = Union[Reject, Any]


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


def stage_entry(n_in: int, kept: int, rejected: Mapping[str, int]) -> dict[str, Any]:
    """One stage of a summary: in, kept, rejected by reason (sorted), and the in = kept +
    rejected check. Plain-Python steps (crowd imports, sheets) build their summaries from these."""
    reasons = dict(sorted(rejected.items()))
    return {"in": n_in, "kept": kept, "rejected": reasons,
            "balanced": n_in == kept + sum(reasons.values())}


def build_summary(counts: Iterable[tuple[tuple[str, str], int]], order: list[str]) -> dict:
    """Fold `((stage, outcome), n)` counts into the summary dict, stages in pipeline order."""
    stages: dict[str, dict] = {s: {"in": 0, "kept": 0, "rejected": {}} for s in order}
    for (stage, outcome), n in counts:
        entry = stages.setdefault(stage, {"in": 0, "kept": 0, "rejected": {}})
        if outcome.startswith("rejected."):
            entry["rejected"][outcome[len("rejected."):]] = n
        else:
            entry[outcome] = n
    return {"stages": {stage: stage_entry(e["in"], e["kept"], e["rejected"]) for stage, e in stages.items()}}


# The unit each stage counts (its `in`, `kept` and `rejected`), per dataset; `format_summary`
# shows it as a column when given one of these.
STAGE_UNITS: dict[str, dict[str, str]] = {
    "record": {
        "read": "articles", "dedup_exact": "articles", "dedup_near": "articles",
        "passage_split": "articles", "annotate": "articles", "passage_filter": "articles",
        "sentence_filter": "sentences", "machine_filter": "triples", "human_filter": "triples",
    },
    "cosmos": {
        "read": "posts", "story_filter": "stories", "sentences": "stories", "coherence": "stories",
        "segment": "sentences", "sample": "paragraphs", "question_sets": "questions",
        "validation": "sets",
    },
    "protoqa": {
        "read": "questions", "dedup_exact": "questions", "dedup_near": "questions",
        "class_filter": "questions", "omitted": "questions", "answer_check": "questions",
        "read_answers": "answers", "propose_clusters": "questions", "adjudicate": "questions",
        "coverage": "questions", "split": "questions",
    },
}


def format_summary(summary: dict, units: Optional[Mapping[str, str]] = None) -> str:
    """A plain-text table: stage, in, kept, rejected by reason, and the accounting check.

    With `units` (stage -> unit, e.g. `STAGE_UNITS["record"]`) a `unit` column comes between
    `rejected` and `reasons` (`-` for a stage without one); the first four columns never move.
    """
    unit_head = f"{'unit':<12}" if units is not None else ""
    lines = [f"{'stage':<22}{'in':>9}{'kept':>9}{'rejected':>10}  {unit_head}reasons"]
    for stage, entry in summary["stages"].items():
        rejected = sum(entry["rejected"].values())
        reasons = ", ".join(f"{k}={v}" for k, v in entry["rejected"].items()) or "-"
        flag = "" if entry["balanced"] else "   <-- in != kept + rejected"
        unit = f"{units.get(stage, '-'):<11} " if units is not None else ""
        lines.append(f"{stage:<22}{entry['in']:>9}{entry['kept']:>9}{rejected:>10}  {unit}{reasons}{flag}")
    return "\n".join(lines)
