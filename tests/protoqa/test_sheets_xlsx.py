"""ProtoQA annotator sheets as .xlsx workbooks: drop-downs of proposed clusters, the round trip,
and the official evaluator's stub workbook."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import openpyxl
import pytest

from data_specs import ProtoqaSpec, load_dataset_spec
from pipeline.cli.main import main
from tests.conftest import ROOT
from transforms.core.io.tables import write_rows
from transforms.protoqa.sheet_export import ANNOTATOR_COLUMNS, CLUSTERS_SHEET, _sheet_titles
from transforms.protoqa.sheet_read import SheetError, load_sheet, read_xlsx
from transforms.protoqa.sheets import adjudicate
from transforms.protoqa.steps import run_adjudicate, run_sheets_export, run_sheets_import

SPEC = load_dataset_spec(ProtoqaSpec, "protoqa", ["answers.proposals.embedder.name=none"])
INVALID = SPEC.sheets.invalid_labels
# the official evaluator's stub workbook, in the samples beside the checkout (../shared)
STUB = ROOT.parent / "shared" / "samples" / "protoqa" / "annotator_sheet_example" / "crowdsource_data_stub.xlsx"


def _prep_row(qid, question, answer, count, cluster, label):
    return {"question_id": qid, "question": question, "answer": answer, "count": count,
            "normalized": answer, "proposed_cluster": cluster, "proposed_label": label,
            "evidence": []}


PREP = [
    _prep_row("x1", "Name a fruit you peel.", "banana", 5, 0, "banana"),
    _prep_row("x1", "Name a fruit you peel.", "bananna", 2, 0, "banana"),
    _prep_row("x1", "Name a fruit you peel.", "orange", 4, 1, "orange"),
    _prep_row("x1", "Name a fruit you peel.", "lime", 1, 2, "lime"),
    _prep_row("x2", "Name a pet.", "dog", 3, 0, "dog"),
    _prep_row("x2", "Name a pet.", "cat", 2, 1, "cat"),
    _prep_row("x2", "Name a pet.", "fish", 1, 2, "fish"),
    _prep_row("x2", "Name a pet.", "rock", 1, 3, "rock"),
]


@pytest.fixture
def workbooks(tmp_path) -> list[str]:
    prep = tmp_path / "prep"
    write_rows(PREP, "protoqa", "answers", prep / "answers")
    return run_sheets_export(str(prep), str(tmp_path / "sheets"), ["A", "B"], "xlsx", INVALID)


def test_workbook_layout_and_drop_downs(workbooks):
    assert [Path(p).name for p in workbooks] == ["sheet_A.xlsx", "sheet_B.xlsx"]
    book = openpyxl.load_workbook(workbooks[0])
    assert book.sheetnames == ["x1", "x2", CLUSTERS_SHEET]
    assert book[CLUSTERS_SHEET].sheet_state == "hidden"
    sheet = book["x1"]
    rows = list(sheet.iter_rows(values_only=True))
    assert list(rows[0]) == ANNOTATOR_COLUMNS
    assert rows[1] == ("x1", "Name a fruit you peel.", "banana", 5, "banana", "banana", None)
    [validation] = sheet.data_validations.dataValidation
    assert validation.type == "list" and str(validation.sqref) == "G2:G5"
    assert validation.errorStyle == "warning"          # a new cluster name is allowed
    # the list: x1's proposed clusters once each, then the invalid labels
    assert validation.formula1 == f"'{CLUSTERS_SHEET}'!$A$2:$A$6"
    lists = book[CLUSTERS_SHEET]
    assert [lists.cell(row=r, column=1).value for r in range(1, 7)] == [
        "x1", "banana", "orange", "lime", "?", "invalid"]
    [second] = book["x2"].data_validations.dataValidation
    assert second.formula1 == f"'{CLUSTERS_SHEET}'!$B$2:$B$7" and str(second.sqref) == "G2:G5"


def _fill(path: str, labels: dict[str, list[str]]) -> None:
    book = openpyxl.load_workbook(path)
    for title, values in labels.items():
        for row, value in enumerate(values, start=2):
            book[title].cell(row=row, column=ANNOTATOR_COLUMNS.index("annotator_cluster") + 1,
                             value=value)
    book.save(path)


def test_filled_workbooks_round_trip_to_blanc_and_adjudication(workbooks, tmp_path):
    # x1 by hand: A {banana, bananna} {orange, lime}; B {banana, bananna, orange} {lime}.
    # Coreference links A 2, B 3, common 1: R 1/2, P 1/3, F 0.4. Non-coreference links A 4,
    # B 3, common 2: R 1/2, P 2/3, F 4/7. BLANC = (0.4 + 4/7) / 2.
    _fill(workbooks[0], {"x1": ["banana", "banana", "citrus", "citrus"],
                         "x2": ["dog", "cat", "fish", "?"]})
    _fill(workbooks[1], {"x1": ["peeled", "peeled", "peeled", "lime"],
                         "x2": ["dog", "cat", "fish", "invalid"]})
    result = run_sheets_import(SPEC, workbooks, str(tmp_path / "agree"))
    assert result["annotators"] == ["sheet_A", "sheet_B"]
    assert result["per_question"]["x1"]["blanc"] == pytest.approx((0.4 + 4 / 7) / 2 * 100)
    assert result["per_question"]["x2"]["blanc"] == pytest.approx(100.0)
    # the adjudicator takes A's labels: a record straight from A's workbook
    summary = run_adjudicate(SPEC, workbooks[0], str(tmp_path / "adj"))
    assert summary["stages"]["adjudicate"]["kept"] == 2
    records = [json.loads(line) for line in open(tmp_path / "adj" / "adjudicated.jsonl")]
    assert records[0]["answers"]["clusters"] == {
        "x1.0": {"count": 7, "answers": ["banana", "bananna"]},
        "x1.1": {"count": 5, "answers": ["orange", "lime"]}}
    assert records[1]["answers"]["raw"] == {"dog": 3, "cat": 2, "fish": 1, "rock": 1}
    assert records[1]["num"] == {"answers": 6, "clusters": 3}


def test_csv_and_xlsx_sheets_mix(workbooks, tmp_path):
    _fill(workbooks[0], {"x1": ["banana", "banana", "citrus", "citrus"], "x2": ["dog", "cat", "fish", "?"]})
    questions, _ = load_sheet(workbooks[0])
    csv_sheet = tmp_path / "sheet_C.csv"
    with open(csv_sheet, "w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=ANNOTATOR_COLUMNS)
        writer.writeheader()
        for q in questions:
            for r in q.rows:
                writer.writerow({"question_id": q.question_id, "question": q.question, "answer": r.answer,
                                 "count": r.count, "fixed_spelling": r.fixed, "proposed_cluster": "",
                                 "annotator_cluster": r.labels["annotator_cluster"]})
    result = run_sheets_import(SPEC, [workbooks[0], str(csv_sheet)], str(tmp_path / "agree"))
    assert result["macro_blanc"] == pytest.approx(100.0)


@pytest.mark.skipif(not STUB.exists(), reason=f"no ProtoQA sample at {STUB} (../shared beside the checkout)")
def test_the_official_stub_workbook_gives_its_clusters():
    questions, columns = read_xlsx(str(STUB))
    assert len(columns) == 5 and columns[2] == "Combined"   # each worksheet has its own annotators
    records, rejects = adjudicate(questions, "Combined", INVALID, "s")
    assert not rejects
    # the expected clusters: the stub's own conversion, crowdsource_data_stub.jsonl (answers-cleaned)
    stub_rows = [json.loads(line) for line in STUB.with_suffix(".jsonl").read_text(encoding="utf-8").splitlines()]
    assert [q.question for q in questions] == [s["question"] for s in stub_rows]
    for record, stub in zip(records, stub_rows):
        got = {(c["count"], tuple(sorted(c["answers"]))) for c in record["answers"]["clusters"].values()}
        assert got == {(c["count"], tuple(sorted(c["answers"]))) for c in stub["answers-cleaned"]}


def test_damaged_or_foreign_workbooks_are_one_error(tmp_path, capsys):
    fake = tmp_path / "sheet.xlsx"
    fake.write_text("question,answer\n", encoding="utf-8")
    with pytest.raises(SheetError, match="not a readable .xlsx workbook"):
        read_xlsx(str(fake))
    book = openpyxl.Workbook()
    book.active.append(["name", "value"])
    other = tmp_path / "other.xlsx"
    book.save(other)
    with pytest.raises(SheetError, match="no worksheet with question and answer columns"):
        read_xlsx(str(other))
    code = main(["protoqa", "sheets", "adjudicate", "--sheet", str(fake), "--output", str(tmp_path / "o")])
    assert code == 2 and len(capsys.readouterr().err.strip().splitlines()) == 1


def test_sheet_titles_are_valid_and_unique():
    titles = _sheet_titles(["r1q1", "a/b:c", "a_b_c", "_clusters", "x" * 40, "x" * 40])
    assert titles[:4] == ["r1q1", "a_b_c", "a_b_c~2", "_clusters~2"]
    assert titles[4] == "x" * 31 and titles[5] == "x" * 29 + "~2"
    assert all(len(t) <= 31 for t in titles) and len({t.lower() for t in titles}) == len(titles)


def test_cli_exports_xlsx_workbooks(tmp_path, capsys):
    prep = tmp_path / "prep"
    write_rows(PREP, "protoqa", "answers", prep / "answers")
    out = tmp_path / "sheets"
    assert main(["protoqa", "sheets", "export", "--prep", str(prep), "--output", str(out),
                 "--format", "xlsx", "--annotator", "Ann"]) == 0
    assert sorted(p.name for p in out.glob("sheet_*")) == ["sheet_Ann.xlsx"]
    assert capsys.readouterr().out.startswith(f"sheet_Ann.xlsx\n\noutput: {out}")
    assert [q.question_id for q in load_sheet(str(out / "sheet_Ann.xlsx"))[0]] == ["x1", "x2"]
