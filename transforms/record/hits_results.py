"""The workers' results of ReCoRD's crowd validation (§3.4): read, judged, and replayed through
quality control.

Worker submissions (`worker_id, assignment_id, triple_id, chosen_entity, feedback`, optional
`submit_time`) are read in file order, or stably sorted by `submit_time` when that column is
present (numbers, then ISO 8601 times, then plain strings). `chosen_entity` is an option number
(an integer 1..number of options) or an option's text; it is correct when it matches a reference
answer (`is_correct`: normalised exact match).

Quality control: after every `hits.qc_every` submissions, and once at the end, each worker's
accuracy over all their submissions so far is recomputed; a worker with at least
`hits.min_judged` submissions and accuracy below `hits.min_accuracy` is blocked for good
(`blocked_after` = submissions processed at that checkpoint).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Sequence, Union

from data_specs.models import LimitsSection
from transforms.core.accounting import Reject, stage_entry
from transforms.core.errors import UserError
from transforms.core.io.untrusted import Skipped, read_csv_rows
from transforms.record.metric import is_correct

PathLike = Union[str, Path]

READ_RESULTS = "read_results"    # the results file's rows (or annotations), before QC
RESULT_COLUMNS = ("worker_id", "assignment_id", "triple_id", "chosen_entity", "feedback")


@dataclass(frozen=True)
class Submission:
    """One worker answer, judged against the triple's references."""

    worker_id: str
    assignment_id: str
    triple_id: str
    chosen: str      # the chosen option's text (or the raw answer when it names no option)
    correct: bool


@dataclass
class WorkerState:
    """A worker's running tally and, once blocked, the checkpoint that blocked them."""

    submissions: int = 0
    correct: int = 0
    blocked_after: Optional[int] = None

    @property
    def accuracy(self) -> float:
        return self.correct / self.submissions if self.submissions else 0.0

    @property
    def blocked(self) -> bool:
        return self.blocked_after is not None


@dataclass(frozen=True)
class TripleKey:
    """What judging a triple needs: its option texts and its reference answers."""

    options: tuple[str, ...]
    answers: tuple[str, ...]


def resolve_choice(chosen: str, options: Sequence[str]) -> str:
    """The option text named by `chosen`: an integer 1..len(options) is a number, anything else a text."""
    value = (chosen or "").strip()
    if value.isdigit() and 1 <= int(value) <= len(options):
        return options[int(value) - 1]
    return value


def _time_key(values: Sequence[str]) -> list[Any]:
    """Sort keys for `submit_time` values: all numeric, else all ISO 8601, else the strings."""
    try:
        return [float(v) for v in values]
    except ValueError:
        pass
    try:
        return [datetime.fromisoformat(v.strip().replace("Z", "+00:00")).timestamp() for v in values]
    except ValueError:
        return list(values)


def read_results(results_csv_path: PathLike, limits: LimitsSection) -> tuple[list[dict[str, str]], list[Skipped]]:
    """Result rows in submission order (file order, or stably by `submit_time` when present),
    and the rows left out for `limits` or damage."""
    table = read_csv_rows(results_csv_path, limits)
    missing = [c for c in RESULT_COLUMNS if c not in table.header]
    if missing:
        raise UserError(f"{results_csv_path}: missing result columns {missing}")
    rows = [row for _, row in table.rows]
    if "submit_time" in table.header:
        keys = _time_key([r["submit_time"] for r in rows])
        order = sorted(range(len(rows)), key=lambda i: keys[i])
        rows = [rows[i] for i in order]
    return rows, table.skipped


def results_stage(read: int, skipped: Sequence[Skipped], source: PathLike) -> tuple[dict[str, Any], list[dict]]:
    """The summary entry of the `read_results` stage (unit: rows or annotations of the results
    file) and its rejects (record id `FILE:line N`, `FILE:task ID` or the assignment id)."""
    rejects = [Reject(READ_RESULTS, s.reason, s.record_id(source), s.detail).row() for s in skipped]
    return stage_entry(read + len(skipped), read, Counter(s.reason for s in skipped)), rejects


def judge(rows: Iterable[Mapping[str, str]], keys: Mapping[str, TripleKey]) -> tuple[list[Submission], int]:
    """Judge each result row against its triple; return the submissions and the unknown-triple count."""
    submissions, unknown = [], 0
    for row in rows:
        key = keys.get(row["triple_id"])
        if key is None:
            unknown += 1
            continue
        chosen = resolve_choice(row["chosen_entity"], key.options)
        submissions.append(Submission(row["worker_id"], row["assignment_id"], row["triple_id"],
                                      chosen, bool(chosen) and is_correct(chosen, key.answers)))
    return submissions, unknown


def _checkpoint(workers: Mapping[str, WorkerState], done: int, min_accuracy: float, min_judged: int) -> None:
    for state in workers.values():
        if not state.blocked and state.submissions >= min_judged and state.accuracy < min_accuracy:
            state.blocked_after = done


def run_quality_control(submissions: Sequence[Submission], qc_every: int, min_accuracy: float,
                        min_judged: int) -> tuple[dict[str, WorkerState], int]:
    """Replay submissions in order, checking workers every `qc_every` and at the end.

    Returns each worker's final state (sorted by worker id) and the number of checkpoints run.
    """
    if qc_every < 1:
        raise ValueError(f"hits.qc_every must be >= 1, got {qc_every}")
    workers: dict[str, WorkerState] = {}
    checkpoints = 0
    for done, sub in enumerate(submissions, start=1):
        state = workers.setdefault(sub.worker_id, WorkerState())
        state.submissions += 1
        state.correct += int(sub.correct)
        if done % qc_every == 0:
            _checkpoint(workers, done, min_accuracy, min_judged)
            checkpoints += 1
    if len(submissions) % qc_every or not submissions:
        _checkpoint(workers, len(submissions), min_accuracy, min_judged)
        checkpoints += 1
    return dict(sorted(workers.items())), checkpoints

