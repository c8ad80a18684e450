"""Rejects and the end-of-run summary built from per-stage tallies (no Beam import).

Every stage sends each unit it drops to the rejects output with its stage and reason and bumps a
Beam counter (`transforms.core.stages`); the summary counts each stage's input independently of
its outcome, so the check `in == kept + rejected` can fail when a stage loses records. This
module is imported by commands that only read finished runs (`stats`, `export`), so it stays
free of Beam.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Optional, Union

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
        "sentence_filter": "sentences", "machine_filter": "triples", "read_results": "results",
        "human_filter": "triples",
    },
    "cosmos": {
        "read": "posts", "story_filter": "stories", "story_sample": "stories",
        "sentences": "stories", "coherence": "stories",
        "segment": "sentences", "sample": "paragraphs", "read_results": "results", "question_sets": "questions",
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
