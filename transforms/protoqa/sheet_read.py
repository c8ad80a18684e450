"""Filled ProtoQA sheets read back (`csdata protoqa sheets import` and `sheets adjudicate`).

Sheet formats (CSV or .xlsx, header row required):

* annotator sheet (`sheets export` writes one per annotator):
  `question_id, question, answer, count, fixed_spelling, proposed_cluster, annotator_cluster`
* adjudication sheet (`sheets import` writes it): `question_id, question, answer, count,
  fixed_spelling, annotator_a, annotator_b, adjudicated`
* the evaluator's stub sheet (protoqa-evaluator's annotator_sheet_example):
  `question, answer, fixed_spelling, <annotator A>, <annotator B>, Combined`; the question is
  given on the first row of each block only, one row per response, and a trailing row of
  spreadsheet formulas (no answer) is ignored.
* `.xlsx` workbooks: every worksheet with question and answer columns, each read like a CSV sheet
  (the stub's one-question-per-sheet layout too); the hidden drop-down lists are skipped.

A sheet becomes `SheetQuestion`s, each with its `SheetRow`s and their labels per label column.
"""
from __future__ import annotations

import csv
import io
import zipfile
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Optional, Sequence

from data_specs.models import LimitsSection
from filters.protoqa import normalize_question
from transforms.core.errors import UserError
from transforms.core.io.cells import read_csv_cell
from transforms.core.io.untrusted import csv_field_limit
from transforms.protoqa.cluster_prep import question_id_for
from transforms.protoqa.sheet_export import CLUSTERS_SHEET


class SheetError(UserError, ValueError):
    """A sheet is malformed or incomplete (or a column the command needs is not in it)."""


@dataclass
class SheetRow:
    """One answer of a sheet: its text, response count, fixed spelling and labels."""

    answer: str
    count: int
    fixed: str
    labels: dict[str, str]          # column name -> label ("" when empty)


@dataclass
class SheetQuestion:
    """One question of a sheet and its answer rows, in sheet order."""

    question_id: str
    question: str
    rows: list[SheetRow] = field(default_factory=list)


def read_sheet(text: str, question_ids: Optional[dict[str, str]] = None
               ) -> tuple[list[SheetQuestion], list[str]]:
    """Questions of a CSV sheet in any of the three formats, and the sheet's label columns.

    Label columns: `annotator_cluster` (annotator sheet), `annotator_a, annotator_b,
    adjudicated` (adjudication sheet), or the stub's annotator columns and `Combined`.
    `question_ids` maps normalised question text to ids for sheets without a question_id column.
    """
    reader = ([read_csv_cell(cell) for cell in row] for row in csv.reader(io.StringIO(text)))
    try:
        header = next(reader)
    except StopIteration:
        raise SheetError("empty sheet") from None
    questions: OrderedDict[str, SheetQuestion] = OrderedDict()
    label_columns = _read_rows(header, reader, question_ids, questions)
    return list(questions.values()), label_columns


def _read_rows(header_cells: Sequence[str], rows: Iterable[Sequence[str]],
               question_ids: Optional[dict[str, str]],
               questions: OrderedDict[str, SheetQuestion]) -> list[str]:
    """Add one table's rows (after its header) to `questions`; the table's label columns."""
    header = [h.strip() for h in header_cells]
    lower = [h.lower() for h in header]
    if "answer" not in lower or "question" not in lower:
        raise SheetError(f"sheet header needs question and answer columns, got {header}")
    col = {name: lower.index(name) for name in lower}
    fixed_col = col.get("fixed_spelling", col.get("fixed spelling"))
    known = {"question_id", "question", "answer", "count", "fixed_spelling", "fixed spelling",
             "proposed_cluster", "proposed cluster"}
    label_columns = [h for h, low in zip(header, lower) if low not in known and h]
    current_question, current_id = "", ""
    for row_cells in rows:
        cells = list(row_cells) + [""] * (len(header) - len(row_cells))

        def get(name: str, cells: list[str] = cells) -> str:
            return cells[col[name]].strip() if name in col else ""

        question = get("question")
        if question:
            current_question = question
            current_id = get("question_id") or (question_ids or {}).get(
                normalize_question(question)) or question_id_for(question)
        elif "question_id" in col and get("question_id"):
            current_id = get("question_id")
        answer = get("answer")
        if not answer:
            continue                                   # formula / blank rows
        if not current_question:
            raise SheetError(f"answer {answer!r} comes before any question")
        raw_count = get("count") or "1"
        try:
            count = int(raw_count)
        except ValueError:
            raise SheetError(f"count {raw_count!r} of answer {answer!r} is not an integer") from None
        fixed = (cells[fixed_col].strip() if fixed_col is not None else "") or answer
        labels = {h: cells[header.index(h)].strip() for h in label_columns}
        entry = questions.setdefault(current_id, SheetQuestion(current_id, current_question))
        entry.rows.append(SheetRow(answer, count, fixed, labels))
    return label_columns


def _cell_text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def read_xlsx(path: str, question_ids: Optional[dict[str, str]] = None
              ) -> tuple[list[SheetQuestion], list[str]]:
    """Questions and label columns of a workbook: every worksheet whose first row names question
    and answer columns (the drop-down lists and other sheets are skipped), in workbook order;
    each worksheet is read as a CSV sheet is (the stub's one-question-per-sheet layout too)."""
    from openpyxl import load_workbook

    try:
        workbook = load_workbook(path, read_only=True, data_only=True)   # rows streamed
    except Exception as error:       # zipfile / XML errors of a damaged or misnamed file
        raise SheetError(f"{path}: not a readable .xlsx workbook ({error})") from None
    questions: OrderedDict[str, SheetQuestion] = OrderedDict()
    label_columns: list[str] = []
    try:
        for sheet in workbook.worksheets:
            if sheet.title == CLUSTERS_SHEET:
                continue
            rows = ([_cell_text(v) for v in row] for row in sheet.iter_rows(values_only=True))
            header = next(rows, None)
            lower = {h.strip().lower() for h in header or []}
            if header is None or not {"question", "answer"} <= lower:
                continue
            try:
                columns = _read_rows(header, rows, question_ids, questions)
            except SheetError as error:
                raise SheetError(f"{path}, worksheet {sheet.title!r}: {error}") from None
            label_columns += [c for c in columns if c not in label_columns]
    finally:
        workbook.close()
    if not questions and not label_columns:
        raise SheetError(f"{path}: no worksheet with question and answer columns")
    return list(questions.values()), label_columns


def load_sheet(path: str, limits: Optional[LimitsSection] = None, question_ids: Optional[dict[str, str]] = None
               ) -> tuple[list[SheetQuestion], list[str]]:
    """A sheet file: `.xlsx` workbooks by `read_xlsx`, anything else as UTF-8 CSV (`read_sheet`).

    With `limits`, a file (a workbook: its uncompressed parts) over `max_file_bytes` or a CSV
    cell over `max_field_bytes` is a `SheetError`: an annotator's sheet is fixed, not cut.
    """
    if limits is not None:
        _check_size(path, limits)
    if path.lower().endswith(".xlsx"):
        return read_xlsx(path, question_ids)
    data = Path(path).read_bytes()
    try:
        text = data.decode("utf-8-sig")      # spreadsheet exports write a BOM
    except UnicodeDecodeError as error:
        raise SheetError(f"{path}: not UTF-8 (byte {error.start}); save the sheet as UTF-8 CSV") from None
    limit = limits.max_field_bytes if limits is not None else csv.field_size_limit()
    try:
        with csv_field_limit(limit):
            return read_sheet(text, question_ids)
    except csv.Error as error:
        if "field larger than field limit" in str(error):
            raise SheetError(f"{path}: a cell is over {limit} characters (limits.max_field_bytes)") from None
        raise SheetError(f"{path}: not a CSV sheet ({error})") from None


def _check_size(path: str, limits: LimitsSection) -> None:
    """A file, or a workbook's uncompressed parts, over `limits.max_file_bytes` is a SheetError."""
    size = Path(path).stat().st_size
    if path.lower().endswith(".xlsx") and zipfile.is_zipfile(path):
        try:
            with zipfile.ZipFile(path) as archive:
                size = max(size, sum(info.file_size for info in archive.infolist()))
        except (zipfile.BadZipFile, OSError, ValueError):
            pass                      # read_xlsx says what is wrong with it
    if size > limits.max_file_bytes:
        raise SheetError(f"{path}: {size} bytes, over limits.max_file_bytes ({limits.max_file_bytes})")

