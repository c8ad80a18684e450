"""ProtoQA answer collection: task export for MTurk / Label Studio and the results import.

The golden files in tests/data/platforms/protoqa_* were written by hand: the expected answers
follow the documented rules (submission order, a worker's first answer per question, blank and
rejected work as rejects), worked out on the three invented questions there.
"""
from __future__ import annotations

import csv
import io
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from data_specs import load_spec
from pipeline.cli.main import main
from tests.crowd_files import label_studio_export, mturk_results_csv
from transforms.core.crowd.mturk import template_variables
from transforms.core.errors import UserError
from transforms.protoqa.cluster_prep import read_crowd_answers
from transforms.protoqa.hits import (
    ANSWER_COLUMNS,
    HitQuestion,
    import_results,
    preview_page,
    read_questions,
    rejects_path,
    template,
)
from transforms.protoqa.steps import run_hits_export, run_hits_import

DATA = Path(__file__).resolve().parents[1] / "data" / "platforms"
QUESTIONS = DATA / "protoqa_questions.jsonl"
MTURK_RESULTS = DATA / "protoqa_mturk_results.csv"
LS_EXPORT = DATA / "protoqa_label_studio_export.json"


LIMITS = load_spec("protoqa").limits


def _csv_rows(path: Path) -> list[list[str]]:
    with open(path, encoding="utf-8", newline="") as handle:
        return list(csv.reader(handle))


@pytest.fixture
def mturk_hits(tmp_path) -> Path:
    run_hits_export(str(QUESTIONS), "mturk", str(tmp_path / "hits"))
    return tmp_path / "hits"


@pytest.fixture
def ls_hits(tmp_path) -> Path:
    run_hits_export(str(QUESTIONS), "label-studio", str(tmp_path / "ls"))
    return tmp_path / "ls"


def test_template_variables_and_batch_match_the_golden_files(mturk_hits):
    page = (mturk_hits / "template.html").read_text(encoding="utf-8")
    variables = json.loads((DATA / "protoqa_template_variables.json").read_text())
    assert template_variables(page) == variables == ["question_id", "question"]
    batch = _csv_rows(mturk_hits / "batch.csv")
    assert batch[0] == variables
    assert batch == _csv_rows(DATA / "protoqa_batch.csv")
    # the question reaches the page as JSON text with & (and <, >) escaped
    assert json.loads(batch[3][1]) == "Name something you’d find in a kitchen drawer & never use."


def test_template_is_one_plain_page_without_external_resources():
    page = template()
    lower = page.lower()
    assert "<link" not in lower and "@import" not in lower and "src=" not in lower
    assert lower.count("http") == 1            # the form's default action, MTurk's externalSubmit
    assert 'action="https://www.mturk.com/mturk/externalSubmit"' in page
    assert '<label for="answer">' in page and 'name="answer" required' in page
    assert 'name="viewport"' in page and '<html lang="en">' in page


def test_label_studio_config_and_tasks(ls_hits):
    root = ET.fromstring((ls_hits / "config.xml").read_text(encoding="utf-8"))
    text = root.find("Text")
    area = root.find("TextArea")
    assert text is not None and area is not None
    assert (text.get("name"), text.get("value")) == ("question", "$question")
    assert (area.get("name"), area.get("toName"), area.get("required")) == ("answer", "question", "true")
    tasks = json.loads((ls_hits / "tasks.json").read_text(encoding="utf-8"))
    assert tasks == [
        {"data": {"question_id": "p1", "question": "Name something people bring to a picnic."}},
        {"data": {"question_id": "p2", "question": "Name a reason you might be late for work."}},
        {"data": {"question_id": "p3",
                  "question": "Name something you’d find in a kitchen drawer & never use."}}]


def test_mturk_results_import_matches_the_golden_answers(mturk_hits, tmp_path):
    output = tmp_path / "answers.csv"
    summary = run_hits_import(load_spec("protoqa"), str(MTURK_RESULTS), str(output), "auto", str(mturk_hits))
    assert _csv_rows(output) == _csv_rows(DATA / "protoqa_answers_mturk.csv")
    assert summary["stages"]["import_answers"] == {
        "in": 9, "kept": 5, "balanced": True,
        "rejected": {"duplicate_worker": 2, "empty_answer": 1, "rejected_assignment": 1}}
    rejects = list(csv.DictReader(open(rejects_path(str(output)), encoding="utf-8")))
    assert [(r["reason"], r["record_id"]) for r in rejects] == [
        ("rejected_assignment", "p1#A3"), ("empty_answer", "p2#A5"),
        ("duplicate_worker", "p2#A6"),     # W1 answered p2 in A4 first (10:20 < 11:00)
        ("duplicate_worker", "p1#A7")]     # W4's A8 (11:05) was submitted before A7 (12:00)


def test_label_studio_import_matches_the_golden_answers(ls_hits, tmp_path):
    output = tmp_path / "answers.csv"
    summary = run_hits_import(load_spec("protoqa"), str(LS_EXPORT), str(output), "auto", str(ls_hits))
    assert _csv_rows(output) == _csv_rows(DATA / "protoqa_answers_label_studio.csv")
    assert summary["stages"]["import_answers"]["rejected"] == {
        "cancelled_annotation": 1, "duplicate_worker": 1, "empty_answer": 1}
    assert summary["stages"]["import_answers"]["in"] == 7


def test_imported_answers_are_what_cluster_prep_reads():
    rows, _, _ = import_results(str(MTURK_RESULTS), LIMITS)
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=ANSWER_COLUMNS)
    writer.writeheader()
    writer.writerows(rows)
    questions, rejects, n_rows = read_crowd_answers(io.BytesIO(out.getvalue().encode()), LIMITS)
    assert n_rows == 5 and not rejects
    assert [(q.question_id, dict(q.counts)) for q in questions] == [
        ("p1", {"potato salad": 1, "Sandwiches": 1, "drinks": 1}),
        ("p2", {"traffic": 1}), ("p3", {"spoons": 1})]
    assert questions[2].question == "Name something you’d find in a kitchen drawer & never use."


def test_a_300_kb_answer_is_a_reject_and_the_rest_is_imported(mturk_hits, tmp_path, capsys):
    """The issue's case: one answer field of 300 KB ended the import with `_csv.Error`."""
    big = tmp_path / "Batch_big_results.csv"
    text = MTURK_RESULTS.read_text(encoding="utf-8")
    big.write_text(text.replace(",Sandwiches,", "," + "Sandwiches " * 30_000 + ","), encoding="utf-8")
    output = tmp_path / "answers.csv"
    assert main(["protoqa", "hits", "import", str(big), "--hits", str(mturk_hits), "--output", str(output)]) == 0
    expected = [row for row in _csv_rows(DATA / "protoqa_answers_mturk.csv") if "A1" not in row]
    assert _csv_rows(output) == expected                                     # A1 (line 2) left out
    rejects = list(csv.DictReader(open(rejects_path(str(output)), encoding="utf-8")))
    [big_row] = [r for r in rejects if r["reason"] == "field_too_large"]
    assert big_row["record_id"] == "Batch_big_results.csv:line 2"
    assert big_row["detail"] == "Answer.answer: 330000 bytes, over 65536"
    assert len(rejects) == 5
    assert "field_too_large" in capsys.readouterr().out                      # in the summary table
    # a spec value raises the limit: the answer is read (and kept, as A1 was)
    assert main(["protoqa", "hits", "import", str(big), "--output", str(output),
                 "--set", "limits.max_field_bytes=400000"]) == 0
    assert ",Sandwiches Sandwiches " in output.read_text(encoding="utf-8")   # answer whitespace collapsed
    assert "field_too_large" not in open(rejects_path(str(output)), encoding="utf-8").read()


def test_a_label_studio_annotation_over_the_limits_is_a_reject(ls_hits, tmp_path):
    tasks = json.loads(LS_EXPORT.read_text(encoding="utf-8"))
    first = tasks[0]["annotations"][0]
    first["result"][0]["value"]["text"] = ["x" * 70_000]
    edited = label_studio_export(tmp_path / "export.json", tasks)
    rows, rejects, n_in = import_results(str(edited), LIMITS, "auto", str(ls_hits))
    golden = _csv_rows(DATA / "protoqa_answers_label_studio.csv")
    assert [r["answer"] for r in rows] == [row[2] for row in golden[1:] if row[4] != str(first["id"])]
    assert [(r.reason, r.record_id) for r in rejects if r.reason == "field_too_large"] == [
        ("field_too_large", f"export.json:task {tasks[0]['id']} annotation {first['id']}")]
    assert n_in == 7


def _rewrite_mturk(tmp_path: Path, edit) -> Path:
    """The golden results edited by `edit(header, rows)`, in the golden file's layout; a column
    left out of the header is left out of the rows."""
    with open(MTURK_RESULTS, encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        header, rows = list(reader.fieldnames or []), list(reader)
    header, rows = edit(header, rows)
    rows = [{c: row[c] for c in header if c in row} for row in rows]
    return mturk_results_csv(tmp_path / "edited.csv", header, rows, quoting=csv.QUOTE_MINIMAL)


def test_task_answers_json_column_is_read_like_answer_columns(tmp_path):
    def to_task_answers(header, rows):
        for row in rows:
            row["Answer.taskAnswers"] = json.dumps([{"answer": row["Answer.answer"]}])
        kept = [c for c in header if not c.startswith("Answer.")]
        return kept[:-2] + ["Answer.taskAnswers"] + kept[-2:], rows
    edited = _rewrite_mturk(tmp_path, to_task_answers)
    assert import_results(str(edited), LIMITS)[0] == import_results(str(MTURK_RESULTS), LIMITS)[0]


def test_a_missing_column_is_one_clear_error(tmp_path, capsys):
    edited = _rewrite_mturk(tmp_path, lambda h, r: ([c for c in h if c != "Answer.answer"], r))
    with pytest.raises(UserError, match="missing column 'Answer.answer'"):
        import_results(str(edited), LIMITS)
    code = main(["protoqa", "hits", "import", str(edited), "--output", str(tmp_path / "a.csv")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and err[0].startswith("warning: without --hits")
    assert len(err) == 2 and "Answer.answer" in err[1]
    assert not (tmp_path / "a.csv").exists()


def test_a_foreign_hit_is_one_clear_error(mturk_hits, ls_hits, tmp_path, capsys):
    def foreign_id(header, rows):
        rows[3]["Input.question_id"] = "r9q9"
        return header, rows
    with pytest.raises(UserError, match=r"A4 \(HIT HIT2\) is not from this export"):
        import_results(str(_rewrite_mturk(tmp_path, foreign_id)), LIMITS, "auto", str(mturk_hits))

    def other_text(header, rows):
        rows[0]["Input.question"] = json.dumps("Name something people bring to a wedding.")
        return header, rows
    edited = _rewrite_mturk(tmp_path, other_text)
    with pytest.raises(UserError, match="question differs"):
        import_results(str(edited), LIMITS, "auto", str(mturk_hits))
    code = main(["protoqa", "hits", "import", str(edited), "--hits", str(mturk_hits),
                 "--output", str(tmp_path / "a.csv")])
    assert code == 2 and len(capsys.readouterr().err.strip().splitlines()) == 1
    tasks = json.loads(LS_EXPORT.read_text(encoding="utf-8"))
    tasks[1]["data"]["question_id"] = "r9q9"
    foreign = label_studio_export(tmp_path / "foreign.json", tasks)
    with pytest.raises(UserError, match="r9q9"):
        import_results(str(foreign), LIMITS, "auto", str(ls_hits))
    with pytest.raises(UserError, match="is a mturk export"):
        import_results(str(LS_EXPORT), LIMITS, "auto", str(mturk_hits))


def test_a_results_file_of_another_layout_is_refused(tmp_path):
    own = tmp_path / "own.csv"
    own.write_text("question_id,question,answer\np1,Q,a\n", encoding="utf-8")
    with pytest.raises(UserError, match="neither an MTurk results CSV"):
        import_results(str(own), LIMITS)
    with pytest.raises(UserError, match="give a .csv path"):
        run_hits_import(load_spec("protoqa"), str(MTURK_RESULTS), str(tmp_path / "answers.jsonl"))


def test_read_questions_from_a_run_or_a_file_and_its_errors(tmp_path):
    assert read_questions(str(QUESTIONS))[1] == HitQuestion("p2", "Name a reason you might be late for work.")
    run = tmp_path / "run"
    run.mkdir()
    (run / "questions.jsonl").write_text(QUESTIONS.read_text(encoding="utf-8"), encoding="utf-8")
    assert [q.question_id for q in read_questions(str(run))] == ["p1", "p2", "p3"]
    with pytest.raises(UserError, match="no questions"):
        read_questions(str(tmp_path))
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"metadata": {"id": "x"}}\n', encoding="utf-8")
    with pytest.raises(UserError, match="bad.jsonl:1: not a protoqa-data row"):
        read_questions(str(bad))
    twice = tmp_path / "twice.jsonl"
    line = QUESTIONS.read_text(encoding="utf-8").splitlines()[0]
    twice.write_text(line + "\n" + line + "\n", encoding="utf-8")
    with pytest.raises(UserError, match="'p1' appears twice"):
        read_questions(str(twice))


def test_preview_page_is_filled_with_an_escaped_question():
    page = preview_page(read_questions(str(QUESTIONS)) + [HitQuestion("p4", "Name a <b>tag</b>.")], 3)
    assert "${" not in page
    assert 'name="question_id" value="p4"' in page
    assert "Name a \\u003cb\\u003etag\\u003c/b\\u003e." in page and "<b>" not in page
    with pytest.raises(UserError, match="out of range"):
        preview_page(read_questions(str(QUESTIONS)), 3)


def test_cli_export_then_import(tmp_path, capsys):
    hits = tmp_path / "hits"
    assert main(["protoqa", "hits", "export", str(QUESTIONS), "--output", str(hits)]) == 0
    assert (hits / "template.html").is_file() and (hits / "batch.csv").is_file()
    answers = tmp_path / "crowd.csv"
    assert main(["protoqa", "hits", "import", str(MTURK_RESULTS), "--hits", str(hits),
                 "--output", str(answers)]) == 0
    out = capsys.readouterr().out
    assert "import_answers" in out and "5 answers to 3 questions" in out
    assert _csv_rows(answers) == _csv_rows(DATA / "protoqa_answers_mturk.csv")
    assert (tmp_path / "crowd.rejects.csv").is_file()
