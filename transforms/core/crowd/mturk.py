"""Amazon Mechanical Turk: task templates, batch input CSVs and batch results CSVs (plain Python).

`write_mturk_batch` writes the batch input CSV (one column per `${variable}` of the HTML template,
`template_variables`); `read_mturk_results` reads the batch results CSV as MTurk's requester site
downloads it (`HITId, HITTypeId, Title, ..., AssignmentId, WorkerId, AssignmentStatus, AcceptTime,
SubmitTime, ..., WorkTimeInSeconds, ..., Input.<var>..., Answer.<field>..., Approve, Reject`),
flattening the `Answer.taskAnswers` JSON of crowd-html-elements templates, into the
`transforms.core.crowd.platforms.Assignment`s every platform's reader gives.
"""
from __future__ import annotations

import csv
import html as html_lib
import re
from pathlib import Path
from typing import Iterable, Mapping, Sequence, Union

from data_specs.models import LimitsSection
from transforms.core.crowd.platforms import (
    Assignment,
    PathLike,
    PlatformResults,
    in_submit_order,
    seconds_or_none,
)
from transforms.core.errors import UserError
from transforms.core.io.cells import csv_cell
from transforms.core.io.untrusted import MALFORMED_RECORD, Skipped, parse_json, read_csv_rows

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

_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


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



# --------------------------------------------------------------------------- results

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



def read_mturk_results(path: PathLike, required_inputs: Sequence[str],
                       required_answers: Sequence[str], limits: LimitsSection) -> PlatformResults:
    """An MTurk batch results CSV: assignments by SubmitTime, `Rejected` ones withdrawn.

    `required_inputs` are template variables (`Input.<var>` columns) and `required_answers` form
    fields (`Answer.<field>` columns or keys of `Answer.taskAnswers`) the import needs; a missing
    one is a `UserError` naming the file and the column. A row over `limits`, damaged, or whose
    `Answer.taskAnswers` is not one JSON object is skipped with its reason
    (`transforms.core.io.untrusted`).
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
            work_seconds=seconds_or_none(row.get("WorkTimeInSeconds")), inputs=inputs, answers=answers)
        (withdrawn if rejected else assignments).append(assignment)
    return PlatformResults(in_submit_order(assignments, path), withdrawn, skipped)
