"""Crowd platforms: Amazon Mechanical Turk batches and Label Studio projects (plain Python, no Beam).

Every dataset's crowd round trip goes through this layer, so a task page written for one paper
reaches workers the same way as another's:

* **MTurk**: `write_mturk_batch` writes the batch input CSV (one column per `${variable}` of the
  HTML template, `template_variables`); `read_mturk_results` reads the batch results CSV as
  MTurk's requester site downloads it (`HITId, HITTypeId, Title, ..., AssignmentId, WorkerId,
  AssignmentStatus, AcceptTime, SubmitTime, ..., WorkTimeInSeconds, ..., Input.<var>...,
  Answer.<field>..., Approve, Reject`), flattening the `Answer.taskAnswers` JSON of
  crowd-html-elements templates.
* **Label Studio**: `label_studio_tasks` gives the tasks JSON to import (`[{"data": {...}}]`);
  `read_label_studio_export` reads a project's JSON export.
* `serve_preview` / `preview` serve a filled task page on 127.0.0.1 with a local submit endpoint
  that shows what the form sent, so a researcher can try a page before paying for it.

Both readers give `Assignment`s (rejected or cancelled work left out) in submission order, which
is the order quality control replays them in. `check_inputs` turns results that belong to
another export (unknown ids, changed inputs) into one clear error.
"""
from __future__ import annotations

import csv
import html as html_lib
import json
import re
import threading
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Sequence, Union
from urllib.parse import parse_qsl, urlencode

from data_specs.models import LimitsSection
from transforms.core.cells import csv_cell
from transforms.core.errors import UserError
from transforms.core.untrusted import (
    MALFORMED_RECORD,
    Skipped,
    check_json_record,
    parse_json,
    read_csv_rows,
    read_json_file,
)

PathLike = Union[str, Path]

MTURK = "mturk"
LABEL_STUDIO = "label-studio"
OWN_CSV = "csv"
FORMATS = (OWN_CSV, MTURK, LABEL_STUDIO)

# The columns MTurk writes before the Input.* columns of a batch results CSV, in its order.
MTURK_RESULT_COLUMNS = (
    "HITId", "HITTypeId", "Title", "Description", "Keywords", "Reward", "CreationTime",
    "MaxAssignments", "RequesterAnnotation", "AssignmentDurationInSeconds",
    "AutoApprovalDelayInSeconds", "Expiration", "NumberOfSimilarHITs", "LifetimeInSeconds",
    "AssignmentId", "WorkerId", "AssignmentStatus", "AcceptTime", "SubmitTime", "AutoApprovalTime",
    "ApprovalTime", "RejectionTime", "RequesterFeedback", "WorkTimeInSeconds",
    "LifetimeApprovalRate", "Last30DaysApprovalRate", "Last7DaysApprovalRate",
)
# The ones a results file must have for an import (the rest are carried but not needed).
MTURK_REQUIRED = ("HITId", "AssignmentId", "WorkerId", "AssignmentStatus", "SubmitTime")
MTURK_TRAILING_COLUMNS = ("Approve", "Reject")
TASK_ANSWERS = "taskAnswers"
REJECTED_ASSIGNMENT = "rejected_assignment"
CANCELLED_ANNOTATION = "cancelled_annotation"
PREVIEW_ASSIGNMENT = "PREVIEW_ASSIGNMENT"
SUBMIT_PATH = "/mturk/externalSubmit"

_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
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


# --------------------------------------------------------------------------- templates and batches

def template_variables(html: str) -> list[str]:
    """The `${name}` placeholders of an MTurk template, in order of first use, each once."""
    return list(dict.fromkeys(_VARIABLE.findall(html)))


def fill_template(html: str, row: Mapping[str, str]) -> str:
    """The page MTurk shows for one batch row: every `${name}` replaced by the row's value,
    HTML-escaped (as a value reaches the page; the templates read it back as text)."""
    missing = [v for v in template_variables(html) if v not in row]
    if missing:
        raise UserError(f"template variables {missing} have no value in the row")
    return _VARIABLE.sub(lambda m: html_lib.escape(str(row[m.group(1)]), quote=True), html)


def write_mturk_batch(path: PathLike, variables: Sequence[str], rows: Iterable[Mapping[str, str]]) -> int:
    """Write MTurk's batch input CSV (header exactly `variables`, UTF-8); return rows written.

    A row lacking a variable is a bug in the caller (ValueError); extra keys are left out, so
    hidden references never reach the batch file unless named as a variable.
    """
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    written = 0
    with out.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(list(variables))
        for row in rows:
            missing = [v for v in variables if v not in row]
            if missing:
                raise ValueError(f"batch row lacks variables {missing}")
            writer.writerow([csv_cell(row[v]) for v in variables])
            written += 1
    return written


# --------------------------------------------------------------------------- times

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


def _in_submit_order(assignments: list[Assignment], source: PathLike) -> list[Assignment]:
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


# --------------------------------------------------------------------------- MTurk results

def _flatten_task_answers(text: str) -> Union[dict[str, object], str]:
    """`Answer.taskAnswers` (a JSON list holding one object) as a flat dict of fields, or what
    is wrong with it."""
    if not text.strip():
        return {}
    try:
        value = parse_json(text)
    except ValueError as exc:
        return f"Answer.taskAnswers is not JSON ({getattr(exc, 'msg', exc)})"
    if isinstance(value, list):
        if len(value) != 1 or not isinstance(value[0], dict):
            return "Answer.taskAnswers must be a list of one object"
        value = value[0]
    if not isinstance(value, dict):
        return "Answer.taskAnswers must be a JSON object"
    return dict(value)


def _seconds(value: Any) -> float | None:
    try:
        return float(value) if value not in (None, "") else None
    except (TypeError, ValueError):
        return None


@dataclass(frozen=True)
class PlatformResults:
    """A results file read: the submitted `assignments` in submission order, the ones the
    platform withdrew (`withdrawn`: MTurk `Rejected`, Label Studio cancelled) in file order,
    and the parts of the file left out for `limits` or damage (`skipped`)."""

    assignments: list[Assignment]
    withdrawn: list[Assignment]
    skipped: list[Skipped]


def read_mturk_results(path: PathLike, required_inputs: Sequence[str],
                       required_answers: Sequence[str], limits: LimitsSection) -> PlatformResults:
    """An MTurk batch results CSV: assignments by SubmitTime, `Rejected` ones withdrawn.

    `required_inputs` are template variables (`Input.<var>` columns) and `required_answers` form
    fields (`Answer.<field>` columns or keys of `Answer.taskAnswers`) the import needs; a missing
    one is a `UserError` naming the file and the column. A row over `limits`, damaged, or whose
    `Answer.taskAnswers` is not one JSON object is skipped with its reason
    (`transforms.core.untrusted`).
    """
    table = read_csv_rows(path, limits)
    header = table.header
    task_answers = f"Answer.{TASK_ANSWERS}" in header
    needed = [*MTURK_REQUIRED, *(f"Input.{v}" for v in required_inputs),
              *(() if task_answers else (f"Answer.{f}" for f in required_answers))]
    missing = [c for c in needed if c not in header]
    if missing:
        raise UserError(f"{path}: not an MTurk results file for this task: missing column "
                        f"{missing[0]!r}" + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""))
    assignments: list[Assignment] = []
    withdrawn: list[Assignment] = []
    skipped = list(table.skipped)
    for line, row in table.rows:
        answers: dict[str, object] = {}
        for column, value in row.items():
            if column.startswith("Answer.") and column != f"Answer.{TASK_ANSWERS}":
                answers[column[len("Answer."):]] = value
        rejected = row["AssignmentStatus"].strip() == "Rejected"   # its answers are not read
        if task_answers and not rejected:
            flat = _flatten_task_answers(row[f"Answer.{TASK_ANSWERS}"])
            if isinstance(flat, str):
                skipped.append(Skipped(MALFORMED_RECORD, f"line {line}", flat))
                continue
            answers.update(flat)
            absent = [f for f in required_answers if f not in answers]
            if absent:
                raise UserError(f"{path}: line {line}: Answer.taskAnswers has no field {absent[0]!r}")
        inputs = {c[len("Input."):]: v for c, v in row.items() if c.startswith("Input.")}
        assignment = Assignment(
            hit_id=row["HITId"], assignment_id=row["AssignmentId"], worker_id=row["WorkerId"],
            status=row["AssignmentStatus"], submit_time=row["SubmitTime"],
            work_seconds=_seconds(row.get("WorkTimeInSeconds")), inputs=inputs, answers=answers)
        (withdrawn if rejected else assignments).append(assignment)
    return PlatformResults(_in_submit_order(assignments, path), withdrawn, skipped)


# --------------------------------------------------------------------------- Label Studio

def label_studio_tasks(rows: Iterable[Mapping[str, object]]) -> list[dict]:
    """Label Studio's import JSON: one `{"data": row}` task per row."""
    return [{"data": dict(row)} for row in rows]


def _as_input(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)


def _result_value(result: Mapping[str, Any]) -> object:
    """A Label Studio result's answer: its `value` under the key of its type (`choices`, `text`,
    `rating`, ...); a one-item list is its item, text areas' lines are joined by newlines."""
    value = result.get("value") or {}
    if not isinstance(value, dict):
        return value if isinstance(value, str) else ""
    kind = str(result.get("type") or "").lower()
    key = {"textarea": "text"}.get(kind, kind)
    if key not in value:
        keys = [k for k in value if k not in ("start", "end", "x", "y", "width", "height")]
        if not keys:
            return ""
        key = keys[0]
    found = value[key]
    if kind == "textarea" and isinstance(found, list):
        return "\n".join(str(v) for v in found)
    if isinstance(found, list) and len(found) == 1:
        return found[0]
    return found


def _worker(completed_by: object) -> str:
    if isinstance(completed_by, dict):
        completed_by = completed_by.get("email") or completed_by.get("id") or ""
    return "" if completed_by is None else _text(completed_by)


def read_label_studio_export(path: PathLike, required_data: Sequence[str], limits: LimitsSection) -> PlatformResults:
    """A Label Studio JSON export: annotations by `created_at`, cancelled ones withdrawn.

    Each task's `data` must hold `required_data` (a `UserError` names the file, task and key).
    Answers are keyed by each result's `from_name`; the worker is `completed_by` (a user id, or
    the e-mail when the export expands users); `work_seconds` is `lead_time`. A task whose
    `data`, or an annotation that, is over `limits.max_record_bytes` or holds a string over
    `limits.max_field_bytes` is skipped with its reason (the task's other annotations are
    read); the file itself may be up to `limits.max_file_bytes`.
    """
    tasks = read_json_file(path, limits, "Label Studio JSON export")
    if not isinstance(tasks, list):
        raise UserError(f"{path}: not a Label Studio JSON export (expected a list of tasks)")
    assignments: list[Assignment] = []
    withdrawn: list[Assignment] = []
    skipped: list[Skipped] = []
    for n, task in enumerate(tasks):
        if not isinstance(task, dict) or not isinstance(task.get("data"), dict):
            raise UserError(f"{path}: task {n}: not a Label Studio task (no 'data' object)")
        data = task["data"]
        task_id = _text(task.get("id", n))
        problem = check_json_record(data, limits)
        if problem:
            skipped.append(Skipped(problem[0], f"task {task_id}", f"data: {problem[1]}"))
            continue
        absent = [k for k in required_data if k not in data]
        if absent:
            raise UserError(f"{path}: task {task_id}: data has no field {absent[0]!r}")
        annotations = task.get("annotations") or []
        if not isinstance(annotations, list):
            skipped.append(Skipped(MALFORMED_RECORD, f"task {task_id}", "annotations is not a list"))
            continue
        for annotation in annotations:
            if not isinstance(annotation, dict):
                skipped.append(Skipped(MALFORMED_RECORD, f"task {task_id}", "an annotation is not an object"))
                continue
            problem = check_json_record(annotation, limits)
            if problem:
                skipped.append(Skipped(problem[0], f"task {task_id} annotation {_text(annotation.get('id', ''))}",
                                       problem[1]))
                continue
            results = annotation.get("result") or []
            answers = {_text(r.get("from_name")): _result_value(r) for r in
                       (results if isinstance(results, list) else [])
                       if isinstance(r, dict) and r.get("from_name")}
            assignment = Assignment(
                hit_id=task_id, assignment_id=_text(annotation.get("id", "")),
                worker_id=_worker(annotation.get("completed_by")),
                status="cancelled" if annotation.get("was_cancelled") else "completed",
                submit_time=_text(annotation.get("created_at") or annotation.get("updated_at") or ""),
                work_seconds=_seconds(annotation.get("lead_time")),
                inputs={_text(k): _as_input(v) for k, v in data.items()}, answers=answers)
            (withdrawn if annotation.get("was_cancelled") else assignments).append(assignment)
    return PlatformResults(_in_submit_order(assignments, path), withdrawn, skipped)


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


def _text(value: object) -> str:
    """A JSON scalar as text (ids and times may come as numbers)."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


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
            if name in a.inputs and name in row and not _same(a.inputs[name], _as_input(row[name])):
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


# --------------------------------------------------------------------------- preview server

class PreviewServer(ThreadingHTTPServer):
    """The preview's HTTP server: the page, and the fields of every form submitted to it."""

    page: bytes
    submissions: list[dict[str, str]]


class _PreviewHandler(BaseHTTPRequestHandler):
    server: PreviewServer

    def _send(self, status: int, body: bytes, kind: str = "text/html; charset=utf-8") -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        path = self.path.split("?", 1)[0]
        if path == "/":
            self._send(200, self.server.page)
        elif path == "/favicon.ico":
            self._send(204, b"")
        elif path == "/submissions.json":
            self._send(200, json.dumps(self.server.submissions).encode("utf-8"), "application/json")
        else:
            self._send(404, b"not found")

    def do_POST(self) -> None:  # noqa: N802
        if self.path.split("?", 1)[0] != SUBMIT_PATH:
            self._send(404, b"not found")
            return
        length = int(self.headers.get("Content-Length") or 0)
        fields = dict(parse_qsl(self.rfile.read(length).decode("utf-8"), keep_blank_values=True))
        self.server.submissions.append(fields)
        rows = "".join(f"<tr><th scope='row'>{html_lib.escape(k)}</th><td>{html_lib.escape(v)}</td></tr>"
                       for k, v in fields.items())
        body = ("<!doctype html><html lang='en'><head><meta charset='utf-8'><meta name='viewport' "
                "content='width=device-width, initial-scale=1'><title>Submitted fields</title></head>"
                "<body><h1>Submitted fields</h1><p>MTurk would store these as <code>Answer.&lt;field&gt;"
                f"</code> columns.</p><table id='submitted'>{rows}</table><p><a href='/'>Back to the task"
                "</a></p></body></html>")
        self._send(200, body.encode("utf-8"))

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass  # the preview prints its own lines


def serve_preview(html: str, port: int = 0) -> tuple[str, PreviewServer]:
    """Serve a filled task page on 127.0.0.1 in a background thread; return (url, server).

    The url carries MTurk's `assignmentId` and `turkSubmitTo` parameters, so the page submits to
    the server's own `/mturk/externalSubmit`, which shows the fields and records them in
    `server.submissions` (also at `/submissions.json`). Stop it with `server.shutdown()`.
    """
    server = PreviewServer(("127.0.0.1", port), _PreviewHandler)
    server.page = html.encode("utf-8")
    server.submissions = []
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    query = urlencode({"assignmentId": PREVIEW_ASSIGNMENT, "hitId": "PREVIEW_HIT", "workerId": "PREVIEW_WORKER",
                       "turkSubmitTo": base})
    return f"{base}/?{query}", server


def preview(html: str, port: int = 0, out: Optional[Any] = None) -> int:
    """Serve `html` (a filled page) until Ctrl-C, printing the url and each submission; returns 0."""
    import sys

    stream = out or sys.stdout
    url, server = serve_preview(html, port)
    print(f"task page: {url}\n(submit it to see the fields a worker sends; Ctrl-C stops)", file=stream, flush=True)
    seen = 0
    try:
        while True:
            threading.Event().wait(0.5)
            for fields in server.submissions[seen:]:
                print("submitted: " + json.dumps(fields, ensure_ascii=False), file=stream, flush=True)
            seen = len(server.submissions)
    except KeyboardInterrupt:
        pass
    finally:
        server.shutdown()
        server.server_close()
    return 0
