"""Crowd platforms: what every results reader shares (plain Python, no Beam).

Every dataset's crowd round trip goes through this layer, so a task page written for one paper
reaches workers the same way as another's. The platforms have a module each:
`transforms.core.crowd.mturk` (Amazon Mechanical Turk batches and results), `transforms.core.crowd.label_studio`
(Label Studio tasks and exports) and `transforms.core.crowd.preview_server` (a task page served locally
before paying for it). This module holds what they share:

* `Assignment`, one worker's submitted work, and `PlatformResults`, a results file read. Both
  readers give `Assignment`s (rejected or cancelled work left out) in submission order
  (`in_submit_order`), which is the order quality control replays them in;
* `detect_results_format` tells an MTurk CSV, a Label Studio export and a dataset's own CSV apart;
* `check_inputs` turns results that belong to another export (unknown ids, changed inputs) into
  one clear error; `left_out` lists what a reader left out; `answer_text` reads a submitted field.
"""
from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence, Union

from transforms.core.errors import UserError
from transforms.core.io.untrusted import Skipped

PathLike = Union[str, Path]

MTURK = "mturk"
LABEL_STUDIO = "label-studio"
OWN_CSV = "csv"
FORMATS = (OWN_CSV, MTURK, LABEL_STUDIO)
REJECTED_ASSIGNMENT = "rejected_assignment"
CANCELLED_ANNOTATION = "cancelled_annotation"

# MTurk writes times as `Wed Mar 04 10:12:45 PST 2020`; the zone is an abbreviation.
_ZONES = {"UTC": 0, "GMT": 0, "Z": 0, "PST": -8, "PDT": -7, "MST": -7, "MDT": -6, "CST": -6,
          "CDT": -5, "EST": -5, "EDT": -4}

@dataclass(frozen=True)
class Assignment:
    """One worker's submitted work on one HIT (MTurk assignment, Label Studio annotation).

    `inputs` are the task's variables as the platform showed them (MTurk `Input.*`, Label Studio
    `data`, non-strings as JSON); `answers` the submitted fields (MTurk `Answer.*` plus the
    flattened `Answer.taskAnswers`; Label Studio results keyed by `from_name`).
    """

    hit_id: str
    assignment_id: str
    worker_id: str
    status: str
    submit_time: str
    work_seconds: float | None
    inputs: dict[str, str]
    answers: dict[str, object]


@dataclass(frozen=True)
class PlatformResults:
    """A results file read: the submitted `assignments` in submission order, the ones the
    platform withdrew (`withdrawn`: MTurk `Rejected`, Label Studio cancelled) in file order,
    and the parts of the file left out for `limits` or damage (`skipped`)."""

    assignments: list[Assignment]
    withdrawn: list[Assignment]
    skipped: list[Skipped]


# --------------------------------------------------------------------------- values of a results file

def parse_time(value: str) -> datetime:
    """A platform time as an aware datetime: MTurk's `Wed Mar 04 10:12:45 PST 2020` or ISO 8601.

    Raises ValueError for anything else.
    """
    text = value.strip()
    parts = text.split()
    if len(parts) == 6 and parts[4].upper() in _ZONES:
        naive = datetime.strptime(" ".join(parts[:4] + parts[5:]), "%a %b %d %H:%M:%S %Y")
        return naive.replace(tzinfo=timezone(timedelta(hours=_ZONES[parts[4].upper()])))
    parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


def in_submit_order(assignments: list[Assignment], source: PathLike) -> list[Assignment]:
    """`assignments` sorted by submit time (file order on ties); an unreadable time is a
    `UserError` naming `source` and the assignment."""
    keys = []
    for a in assignments:
        try:
            keys.append(parse_time(a.submit_time).timestamp())
        except ValueError:
            raise UserError(f"{source}: assignment {a.assignment_id}: cannot read the submit time "
                            f"{a.submit_time!r} (expected e.g. 'Wed Mar 04 10:12:45 PST 2020' or ISO 8601)"
                            ) from None
    order = sorted(range(len(assignments)), key=lambda i: keys[i])   # stable: file order on ties
    return [assignments[i] for i in order]


def seconds_or_none(value: Any) -> float | None:
    """A platform's work time as seconds, None when absent or not a number."""
    try:
        return float(value) if value not in (None, "") else None
    except (TypeError, ValueError):
        return None


def json_text(value: object) -> str:
    """A JSON scalar as text (ids and times may come as numbers)."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def as_input(value: object) -> str:
    """A task input as the platforms show it: strings as they are, anything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)


def left_out(results: PlatformResults) -> list[Skipped]:
    """Everything a results file held but the readers left out, as `Skipped`: withdrawn work
    (`rejected_assignment` on MTurk, `cancelled_annotation` in Label Studio; `where` is the
    assignment id) and the parts over the limits or damaged."""
    withdrawn = [Skipped(withdrawn_reason(a), a.assignment_id, f"worker {a.worker_id}, HIT {a.hit_id}")
                 for a in results.withdrawn]
    return withdrawn + list(results.skipped)


def withdrawn_reason(assignment: Assignment) -> str:
    """The reject reason of withdrawn work: `cancelled_annotation` (Label Studio) or
    `rejected_assignment` (MTurk)."""
    return CANCELLED_ANNOTATION if assignment.status == "cancelled" else REJECTED_ASSIGNMENT


# --------------------------------------------------------------------------- shared checks

def detect_results_format(path: PathLike) -> str:
    """`label-studio` for a JSON file, `mturk` for a CSV with MTurk's HITId/AssignmentId
    columns, otherwise `csv` (a dataset's own layout)."""
    p = Path(path)
    if not p.is_file():
        raise UserError(f"{path}: no such results file")
    with p.open(encoding="utf-8-sig", errors="replace") as handle:
        head = handle.read(4096)
    if p.suffix.lower() == ".json" or head.lstrip().startswith("["):
        return LABEL_STUDIO
    first = next(csv.reader([head.splitlines()[0] if head else ""]), [])
    return MTURK if {"HITId", "AssignmentId"} <= set(first) else OWN_CSV


def _same(a: str, b: str) -> bool:
    return " ".join(a.split()) == " ".join(b.split())


def check_inputs(assignments: Iterable[Assignment], expected: Mapping[str, Mapping[str, str]],
                 id_field: str, source: PathLike, compare: Sequence[str] = ()) -> None:
    """Every assignment must belong to an exported task: its `inputs[id_field]` names one, and
    the `compare` inputs equal the exported ones (whitespace aside). Otherwise one `UserError`
    naming the file, the assignment and what differs (a HIT of another export or run)."""
    for a in assignments:
        key = a.inputs.get(id_field, "")
        row = expected.get(key)
        if row is None:
            raise UserError(f"{source}: assignment {a.assignment_id} (HIT {a.hit_id}) is not from this "
                            f"export: {id_field} {key!r} is not in the run")
        for name in compare:
            if name in a.inputs and name in row and not _same(a.inputs[name], as_input(row[name])):
                raise UserError(f"{source}: assignment {a.assignment_id} (HIT {a.hit_id}) is not from this "
                                f"export: its {name} differs from the run's for {id_field} {key!r}")


def answer_text(value: object) -> str:
    """A submitted field as text: strings as they are, booleans as yes/no, lists joined by `|`,
    crowd-html-elements radio groups (`{"label": true, ...}`) as the chosen label(s) and
    checkboxes (`{"on": true}`) as yes/no."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, dict):
        if set(value) == {"on"}:
            return "yes" if value["on"] else "no"
        return "|".join(str(k) for k, v in value.items() if v is True)
    if isinstance(value, list):
        return "|".join(answer_text(v) for v in value)
    return str(value)
