"""Blank annotator sheets for the ProtoQA round trip (`csdata protoqa sheets export`).

One sheet per annotator, CSV or `.xlsx`, with the columns `ANNOTATOR_COLUMNS`:
`question_id, question, answer, count, fixed_spelling, proposed_cluster, annotator_cluster`.
A workbook has one worksheet per question, as the evaluator's stub `crowdsource_data_stub.xlsx`;
its `annotator_cluster` cells carry a drop-down (data validation list) of the question's proposed
clusters and the invalid labels, kept on the hidden `CLUSTERS_SHEET`. Every cell a person opens
is formula-safe (`transforms.core.io.cells`).
"""
from __future__ import annotations

import csv
import re
from collections import OrderedDict
from typing import Iterable, Sequence

from transforms.core.io.cells import escaped_dict, xlsx_text

ANNOTATOR_COLUMNS = ["question_id", "question", "answer", "count", "fixed_spelling",
                     "proposed_cluster", "annotator_cluster"]

# The hidden worksheet holding each question's drop-down list (one column per question).
CLUSTERS_SHEET = "_clusters"
XLSX_PROMPT = "Pick a proposed cluster, type a new cluster name, or ? when the answer fits none."
_TITLE_CHARS = re.compile(r"[\[\]:*?/\\]")


def export_sheet_rows(prep_rows: Sequence[dict]) -> list[dict]:
    """Annotator-sheet rows from cluster-prep rows; `annotator_cluster` is left to fill in."""
    return [{"question_id": r["question_id"], "question": r["question"], "answer": r["answer"],
             "count": r["count"], "fixed_spelling": r["answer"],
             "proposed_cluster": r["proposed_label"], "annotator_cluster": ""}
            for r in prep_rows]


def write_csv(path: str, columns: Sequence[str], rows: Iterable[dict]) -> None:
    """A CSV sheet with the header `columns` (other keys left out), every cell formula-safe."""
    with open(path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(columns), extrasaction="ignore")
        writer.writeheader()
        writer.writerows(escaped_dict(row) for row in rows)


def _sheet_titles(question_ids: Sequence[str]) -> list[str]:
    """Worksheet titles: the question id without the characters Excel forbids, at most 31
    characters, made unique with a `~n` suffix."""
    titles: list[str] = []
    used: set[str] = {CLUSTERS_SHEET.lower()}
    for n, qid in enumerate(question_ids, start=1):
        base = _TITLE_CHARS.sub("_", qid).strip("'")[:31] or str(n)
        title, k = base, 1
        while title.lower() in used:
            k += 1
            title = f"{base[:31 - len(str(k)) - 1]}~{k}"
        used.add(title.lower())
        titles.append(title)
    return titles


def write_xlsx(path: str, rows: Sequence[dict], invalid_labels: Sequence[str]) -> None:
    """One annotator's workbook: a worksheet per question (as the evaluator's stub sheet),
    columns `ANNOTATOR_COLUMNS`, and on each `annotator_cluster` cell a drop-down of the
    question's proposed clusters and the invalid labels. A name not in the list is allowed after
    a warning: proposals are suggestions, annotators make new clusters."""
    from openpyxl import Workbook
    from openpyxl.styles import Alignment, Font
    from openpyxl.utils import get_column_letter
    from openpyxl.worksheet.datavalidation import DataValidation

    by_question: OrderedDict[str, list[dict]] = OrderedDict()
    for row in rows:
        by_question.setdefault(str(row["question_id"]), []).append(row)
    workbook = Workbook()
    default = workbook.active
    lists = workbook.create_sheet(CLUSTERS_SHEET)
    lists.sheet_state = "hidden"
    label_col = ANNOTATOR_COLUMNS.index("annotator_cluster") + 1
    widths = {"question_id": 12, "question": 40, "answer": 24, "count": 7, "fixed_spelling": 24,
              "proposed_cluster": 24, "annotator_cluster": 24}
    for n, (title, (qid, q_rows)) in enumerate(zip(_sheet_titles(list(by_question)),
                                                   by_question.items()), start=1):
        sheet = workbook.create_sheet(title, index=n - 1)
        sheet.append(ANNOTATOR_COLUMNS)
        for cell in sheet[1]:
            cell.font = Font(bold=True)
        for row in q_rows:
            sheet.append([str(row["question_id"]), str(row["question"]), str(row["answer"]),
                          int(row["count"]), str(row["fixed_spelling"]),
                          str(row["proposed_cluster"]), str(row["annotator_cluster"] or "")])
            for cell in sheet[sheet.max_row]:
                xlsx_text(cell)   # an answer "=HYPERLINK(...)" stays text
        for i, name in enumerate(ANNOTATOR_COLUMNS, start=1):
            sheet.column_dimensions[get_column_letter(i)].width = widths[name]
        for cell in sheet["B"][1:]:
            cell.alignment = Alignment(wrap_text=True, vertical="top")
        sheet.freeze_panes = "A2"
        choices = list(OrderedDict.fromkeys(
            [str(r["proposed_cluster"]) for r in q_rows if str(r["proposed_cluster"])]
            + list(invalid_labels)))
        letter = get_column_letter(n)
        lists.cell(row=1, column=n, value=qid)
        for i, choice in enumerate(choices, start=2):
            xlsx_text(lists.cell(row=i, column=n, value=choice))
        validation = DataValidation(
            type="list", formula1=f"'{CLUSTERS_SHEET}'!${letter}$2:${letter}${len(choices) + 1}",
            allow_blank=True, showDropDown=False, showErrorMessage=True, errorStyle="warning",
            errorTitle="Not a proposed cluster",
            error="Keep it as a new cluster name? (Yes keeps it.)",
            showInputMessage=True, promptTitle="Cluster", prompt=XLSX_PROMPT)
        column = get_column_letter(label_col)
        validation.add(f"{column}2:{column}{len(q_rows) + 1}")
        sheet.add_data_validation(validation)
    workbook.remove(default)
    if not by_question:
        workbook.create_sheet("sheet", index=0).append(ANNOTATOR_COLUMNS)
    workbook.save(path)

