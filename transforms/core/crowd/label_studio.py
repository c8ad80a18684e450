"""Label Studio: the tasks JSON to import and a project's JSON export (plain Python).

`label_studio_tasks` gives the tasks to import (`[{"data": {...}}]`); `read_label_studio_export`
reads a project's JSON export into the `transforms.core.crowd.platforms.Assignment`s every platform's
reader gives (cancelled annotations withdrawn), in submission order.
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

from data_specs.models import LimitsSection
from transforms.core.crowd.platforms import (
    Assignment,
    PathLike,
    PlatformResults,
    as_input,
    in_submit_order,
    json_text,
    seconds_or_none,
)
from transforms.core.errors import UserError
from transforms.core.io.untrusted import MALFORMED_RECORD, Skipped, check_json_record, read_json_file


def label_studio_tasks(rows: Iterable[Mapping[str, object]]) -> list[dict]:
    """Label Studio's import JSON: one `{"data": row}` task per row."""
    return [{"data": dict(row)} for row in rows]


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
    return "" if completed_by is None else json_text(completed_by)


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
        task_id = json_text(task.get("id", n))
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
                skipped.append(Skipped(problem[0], f"task {task_id} annotation {json_text(annotation.get('id', ''))}",
                                       problem[1]))
                continue
            results = annotation.get("result") or []
            answers = {json_text(r.get("from_name")): _result_value(r) for r in
                       (results if isinstance(results, list) else [])
                       if isinstance(r, dict) and r.get("from_name")}
            assignment = Assignment(
                hit_id=task_id, assignment_id=json_text(annotation.get("id", "")),
                worker_id=_worker(annotation.get("completed_by")),
                status="cancelled" if annotation.get("was_cancelled") else "completed",
                submit_time=json_text(annotation.get("created_at") or annotation.get("updated_at") or ""),
                work_seconds=seconds_or_none(annotation.get("lead_time")),
                inputs={json_text(k): as_input(v) for k, v in data.items()}, answers=answers)
            (withdrawn if annotation.get("was_cancelled") else assignments).append(assignment)
    return PlatformResults(in_submit_order(assignments, path), withdrawn, skipped)
