"""Crowd answers that look like spreadsheet formulas stay text in every file we write for people
(CSV and .xlsx sheets, disagreements, adjudication, MTurk batches, crowd answers) and come back
unchanged through import and adjudication (issue #30: CSV/formula injection)."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import openpyxl
import pytest

from data_specs import ProtoqaSpec, load_dataset_spec, load_spec
from transforms.core.crowd.mturk import write_mturk_batch
from transforms.core.io.cells import csv_cell, read_csv_cell
from transforms.core.io.tables import write_rows
from transforms.protoqa.cluster_prep import read_crowd_answers
from transforms.protoqa.hits import write_answers
from transforms.protoqa.sheet_export import ANNOTATOR_COLUMNS
from transforms.protoqa.steps import run_adjudicate, run_sheets_export, run_sheets_import

SPEC = load_dataset_spec(ProtoqaSpec, "protoqa", ["answers.proposals.embedder.name=none"])
HOSTILE = ['=HYPERLINK("http://evil.example","click")', "+44 20 7946 0000", "-2+3", "@SUM(A1)",
           "\tcmd", "'=already quoted", "plain"]
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


LIMITS = load_spec("protoqa").limits


@pytest.mark.parametrize("text", [*HOSTILE, "", "'", "''=x", "'hello", "=", "-"])
def test_a_cell_is_never_a_formula_and_reads_back_unchanged(text):
    written = csv_cell(text)
    assert not written.startswith(FORMULA_STARTS)
    assert read_csv_cell(written) == text


def _prep(answers: list[str]) -> list[dict]:
    return [{"question_id": "q1", "question": "Name something risky.", "answer": a, "count": 1,
             "normalized": a, "proposed_cluster": i, "proposed_label": a, "evidence": []}
            for i, a in enumerate(answers)]


def _cells(path: Path) -> list[str]:
    with path.open(encoding="utf-8", newline="") as handle:
        return [cell for row in csv.reader(handle) for cell in row]


def test_csv_sheets_adjudication_and_disagreements_hold_text_and_round_trip(tmp_path):
    prep = tmp_path / "prep"
    write_rows(_prep(HOSTILE), "protoqa", "answers", prep / "answers")
    sheets = run_sheets_export(str(prep), str(tmp_path / "sheets"), ["A", "B"], "csv", SPEC.sheets.invalid_labels)
    for path in sheets:
        assert not [c for c in _cells(Path(path)) if c.startswith(FORMULA_STARTS)]
        with open(path, encoding="utf-8", newline="") as handle:   # as a spreadsheet shows it
            rows = [{k: read_csv_cell(v) for k, v in row.items()} for row in csv.DictReader(handle)]
        for row in rows:   # A keeps every proposal, B puts all in one cluster
            row["annotator_cluster"] = row["proposed_cluster"] if Path(path).stem.endswith("A") else "one"
        with open(path, "w", encoding="utf-8", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(ANNOTATOR_COLUMNS))
            writer.writeheader()
            writer.writerows({k: csv_cell(v) for k, v in row.items()} for row in rows)
    run_sheets_import(SPEC, sheets, str(tmp_path / "agree"))
    for name in ("disagreements.csv", "adjudication.csv"):
        assert not [c for c in _cells(tmp_path / "agree" / name) if c.startswith(FORMULA_STARTS)]
    run_adjudicate(SPEC, sheets[0], str(tmp_path / "adj"))
    [record] = [json.loads(line) for line in open(tmp_path / "adj" / "adjudicated.jsonl")]
    assert sorted(record["answers"]["raw"]) == sorted(a.strip() for a in HOSTILE)   # cells are stripped


def test_xlsx_sheets_have_no_formula_cell_and_round_trip(tmp_path):
    prep = tmp_path / "prep"
    write_rows(_prep(HOSTILE), "protoqa", "answers", prep / "answers")
    [book_a, _] = run_sheets_export(str(prep), str(tmp_path / "sheets"), ["A", "B"], "xlsx",
                                    SPEC.sheets.invalid_labels)
    book = openpyxl.load_workbook(book_a)   # formulas are kept as formulas when loaded like this
    assert not [c.coordinate for s in book.worksheets for row in s.iter_rows() for c in row
                if c.data_type == "f"]
    sheet = book["q1"]
    for row in range(2, sheet.max_row + 1):   # the annotator keeps every proposal
        sheet.cell(row=row, column=ANNOTATOR_COLUMNS.index("annotator_cluster") + 1,
                   value=sheet.cell(row=row, column=ANNOTATOR_COLUMNS.index("proposed_cluster") + 1).value)
        sheet.cell(row=row, column=ANNOTATOR_COLUMNS.index("annotator_cluster") + 1).data_type = "s"
    book.save(book_a)
    run_adjudicate(SPEC, book_a, str(tmp_path / "adj"))
    [record] = [json.loads(line) for line in open(tmp_path / "adj" / "adjudicated.jsonl")]
    assert sorted(record["answers"]["raw"]) == sorted(a.strip() for a in HOSTILE)   # cells are stripped


def test_the_crowd_answers_csv_and_mturk_batches_hold_text(tmp_path):
    rows = [{"question_id": "q1", "question": "Name something risky.", "answer": a, "count": 1}
            for a in HOSTILE]
    write_answers(str(tmp_path / "answers.csv"), rows)
    assert not [c for c in _cells(tmp_path / "answers.csv") if c.startswith(FORMULA_STARTS)]
    [question], rejects, _ = read_crowd_answers(tmp_path / "answers.csv", LIMITS)
    assert sorted(question.counts) == sorted(a.strip() for a in HOSTILE) and not rejects
    write_mturk_batch(tmp_path / "batch.csv", ["question"], [{"question": a} for a in HOSTILE])
    assert not [c for c in _cells(tmp_path / "batch.csv") if c.startswith(FORMULA_STARTS)]
