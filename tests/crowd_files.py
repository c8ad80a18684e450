"""Crowd platform result files for tests: MTurk's batch results CSV and Label Studio's JSON export.

These write the layout only. Each test builds its own rows and annotations from its dataset's
answers, with the builders below, and chooses its own ids and times.

MTurk: `mturk_results_csv(path, mturk_header(inputs, answers), [mturk_row(...), ...])`: a column
a row leaves out is blank, as in a downloaded batch results file.
Label Studio: `label_studio_export(path, [label_studio_task(id, data, [label_studio_annotation(
..., [label_studio_result(...), ...]), ...]), ...])`.
"""
from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from transforms.core.crowd.mturk import MTURK_RESULT_COLUMNS


def mturk_header(inputs: Iterable[str], answers: Iterable[str]) -> list[str]:
    """The columns of a batch results CSV: MTurk's own, `Input.<v>` for each batch column,
    `Answer.<f>` for each submitted field, then `Approve` and `Reject`."""
    return [*MTURK_RESULT_COLUMNS, *(f"Input.{v}" for v in inputs), *(f"Answer.{a}" for a in answers),
            "Approve", "Reject"]


def mturk_row(hit: str, assignment: str, worker: str, submit_time: str, *, status: str = "Submitted",
              inputs: Mapping[str, str] | None = None, answers: Mapping[str, str] | None = None,
              **columns: str) -> dict[str, str]:
    """One assignment's row: `inputs` become `Input.<k>`, `answers` `Answer.<k>`; `columns` are
    other MTurk columns by name (`WorkTimeInSeconds="30"`)."""
    return {"HITId": hit, "AssignmentId": assignment, "WorkerId": worker, "AssignmentStatus": status,
            "SubmitTime": submit_time, **columns,
            **{f"Input.{k}": v for k, v in (inputs or {}).items()},
            **{f"Answer.{k}": v for k, v in (answers or {}).items()}}


def mturk_results_csv(path: Path, header: list[str], rows: Iterable[Mapping[str, str]], *,
                      quoting: int = csv.QUOTE_ALL) -> Path:
    """Write `rows` under `header`, in the given order. Every field is quoted, as the requester
    site writes it; `quoting=csv.QUOTE_MINIMAL` keeps the layout of a file quoted only where
    needed (an edited copy of such a golden file). A column a row lacks is blank; a key not in
    `header` is an error."""
    with Path(path).open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=header, restval="", quoting=quoting)
        writer.writeheader()
        writer.writerows(rows)
    return Path(path)


def label_studio_result(from_name: str, to_name: str, kind: str, value: str) -> dict[str, Any]:
    """One control's value in an annotation: `kind` "choices" (one choice, by its text) or
    "textarea" (one text)."""
    return {"from_name": from_name, "to_name": to_name, "type": kind,
            "value": {"choices": [value]} if kind == "choices" else {"text": [value]}}


def label_studio_annotation(annotation_id: Any, completed_by: Any, result: list[dict[str, Any]], created_at: str,
                            *, cancelled: bool = False, **fields: Any) -> dict[str, Any]:
    """One annotation of a task; `completed_by` is a user id or `{"id": .., "email": ..}`; `fields`
    are further keys of the export (`lead_time`, `updated_at`, `task`)."""
    return {"id": annotation_id, "completed_by": completed_by, "result": result, "was_cancelled": cancelled,
            "created_at": created_at, **fields}


def label_studio_task(task_id: Any, data: dict[str, Any], annotations: list[dict[str, Any]],
                      **fields: Any) -> dict[str, Any]:
    """One task of the export: the imported `data` and its annotations; `fields` are further keys
    (`project`)."""
    return {"id": task_id, "data": data, "annotations": annotations, **fields}


def label_studio_export(path: Path, tasks: list[dict[str, Any]]) -> Path:
    """Write the tasks as a Label Studio JSON export (UTF-8, characters not escaped)."""
    Path(path).write_text(json.dumps(tasks, ensure_ascii=False), encoding="utf-8")
    return Path(path)
