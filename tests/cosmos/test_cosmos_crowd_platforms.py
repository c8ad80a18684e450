"""Cosmos QA §2.2-2.3 on MTurk and Label Studio: both task pages, their batches, and the results
read back giving the same question sets, validations and splits as the own CSVs."""
from __future__ import annotations

import csv
import hashlib
import json
import re
from pathlib import Path

import pytest

from pipeline.cli import cosmos
from pipeline.cli.main import main
from tests.cosmos.crowd_sets import cosmos_spec, judgement, question_row, write_csv, write_paragraphs
from tests.cosmos.test_cosmos_crowd import FakeScorer
from tests.crowd_files import (
    label_studio_annotation,
    label_studio_export,
    label_studio_result,
    label_studio_task,
    mturk_header,
    mturk_results_csv,
    mturk_row,
)
from transforms.core.crowd.mturk import template_variables
from transforms.core.crowd.pages import form_field_names
from transforms.core.errors import UserError
from transforms.core.io.tables import read_table
from transforms.cosmos import crowd

PLATFORMS = Path(__file__).resolve().parents[1] / "data" / "platforms"


@pytest.fixture
def case(tmp_path):
    """Four paragraphs; five written sets (one assignment with two questions) and their validations."""
    run = tmp_path / "run"
    ids = sorted(write_paragraphs(run, 4))
    questions = [
        question_row("A1", "W-EXCELLENT", ids[0]),
        question_row("A2", "W2", ids[1], correct=("They had no keys .", "They could not drive the van .")),
        question_row("A3", "W3", ids[2]),
        question_row("A6", "W-EXCELLENT", ids[3]),
        question_row("A6", "W-EXCELLENT", ids[3], number=2, question="What might Sam do next time ?"),
    ]
    validations = []
    for s in ("A1#q1", "A2#q1"):
        validations += [judgement(s, f"V{k}") for k in range(3)]
    validations += [judgement("A3#q1", "V0"), judgement("A3#q1", "V1", chosen="3"), judgement("A3#q1", "V2", chosen="4")]
    validations += [judgement("A6#q1", "V0"), judgement("A6#q1", "V1", without="yes"), judgement("A6#q1", "V2")]
    validations += [judgement("A6#q2", "V0"), judgement("A6#q2", "V1", commonsense="no"),
                    judgement("A6#q2", "V2", question="no")]
    validations.append(judgement("A1#q1", "V0", chosen="2"))      # a repeated worker: ignored
    return run, questions, validations


def submitted(n: int) -> str:
    """The n-th SubmitTime, one second apart."""
    return f"Tue Jun 04 10:{n // 60:02d}:{n % 60:02d} PDT 2024"


def batch_rows(path: Path, key: str) -> dict[str, dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as handle:
        return {r[key]: r for r in csv.DictReader(handle)}


def writing_results(path: Path, questions: list[dict[str, str]], batch: dict[str, dict[str, str]]) -> Path:
    """The written sets as MTurk writing results: one assignment per assignment_id."""
    golden = json.loads((PLATFORMS / "cosmos_writing.fields.json").read_text(encoding="utf-8"))
    first: dict[str, dict[str, str]] = {}          # assignment id: its first question
    answers: dict[str, dict[str, str]] = {}
    for q in questions:
        n = q["question_number"]
        first.setdefault(q["assignment_id"], q)
        answers.setdefault(q["assignment_id"], {"paragraph_id": q["paragraph_id"]}).update({
            f"q{n}_type": q["question_type"], f"q{n}_question": q["question"],
            **{f"q{n}_correct{k}": q[f"correct_{k}"] for k in (1, 2)},
            **{f"q{n}_incorrect{k}": q[f"incorrect_{k}"] for k in (1, 2, 3)}})
    rows = [mturk_row(q["hit_id"], a, q["worker_id"], submitted(m), HITTypeId="T", answers=answers[a],
                      inputs={v: batch[q["paragraph_id"]][v] for v in golden["mturk_variables"]})
            for m, (a, q) in enumerate(first.items())]
    return mturk_results_csv(path, mturk_header(golden["mturk_variables"], golden["mturk_answers"]), rows)


def canonical(questions, set_id):
    q = next(r for r in questions if f"{r['assignment_id']}#q{r['question_number']}" == set_id)
    return [v for k in ("correct_1", "correct_2", "incorrect_1", "incorrect_2", "incorrect_3") if (v := q[k])]


def chosen_text(questions, row):
    options = canonical(questions, row["set_id"])
    value = row["chosen_answer"]
    return options[int(value) - 1] if value.isdigit() else value


def validation_results(path: Path, questions, validations, batch: dict[str, dict[str, str]]) -> Path:
    golden = json.loads((PLATFORMS / "cosmos_validation.fields.json").read_text(encoding="utf-8"))
    rows = [mturk_row(f"VH-{v['set_id']}", f"VA{n}", v["worker_id"], submitted(n), HITTypeId="T",
                      inputs={k: batch[v["set_id"]][k] for k in golden["mturk_variables"]},
                      answers={"set_id": v["set_id"], "chosen_answer": chosen_text(questions, v),
                               **{k: v[k] for k in ("paragraph_sensible", "question_sensible",
                                                    "needs_commonsense", "answerable_without_paragraph")}})
            for n, v in enumerate(validations)]
    return mturk_results_csv(path, mturk_header(golden["mturk_variables"], golden["mturk_answers"]), rows)


def test_templates_match_the_golden_fields(tmp_path, case):
    run, _, _ = case
    spec = cosmos_spec()
    assert crowd.export_question_hits(run, tmp_path / "w", spec.hits, "mturk") == 4
    assert crowd.export_question_hits(run, tmp_path / "wl", spec.hits, "label-studio") == 4
    pages = {"cosmos_writing": (tmp_path / "w" / "template.html", tmp_path / "wl" / "config.xml")}
    questions = write_csv(tmp_path / "q.csv", case[1])
    assert crowd.export_validation_hits(run, questions, tmp_path / "v", spec.hits, spec.seed, spec.limits, "mturk") == 5
    assert crowd.export_validation_hits(run, questions, tmp_path / "vl", spec.hits, spec.seed, spec.limits, "label-studio") == 5
    pages["cosmos_validation"] = (tmp_path / "v" / "template.html", tmp_path / "vl" / "config.xml")
    for name, (template, config) in pages.items():
        golden = json.loads((PLATFORMS / f"{name}.fields.json").read_text(encoding="utf-8"))
        page = template.read_text(encoding="utf-8")
        assert template_variables(page) == golden["mturk_variables"], name
        assert form_field_names(page) + golden["mturk_scripted_answers"] == golden["mturk_answers"], name
        with (template.parent / "batch.csv").open(encoding="utf-8", newline="") as handle:
            assert next(csv.reader(handle)) == golden["mturk_variables"]
        controls = re.findall(r'<(?:Choices|TextArea) name="([^"]+)"', config.read_text(encoding="utf-8"))
        assert controls == golden["label_studio_results"], name
        tasks = json.loads((config.parent / "tasks.json").read_text(encoding="utf-8"))
        assert all(list(t["data"]) == golden["label_studio_data"] for t in tasks)
        assert "src=" not in page and "href=" not in page


def test_validation_options_are_in_seeded_order_without_labels(tmp_path, case):
    run, questions, _ = case
    spec = cosmos_spec()
    crowd.export_validation_hits(run, write_csv(tmp_path / "q.csv", questions), tmp_path / "v", spec.hits, spec.seed, spec.limits,
                                 "mturk")
    batch = batch_rows(tmp_path / "v" / "batch.csv", "set_id")
    for set_id, row in batch.items():
        options = canonical(questions, set_id)
        digest = lambda o, s=set_id: hashlib.sha1(f"{spec.seed}:validation:{s}:{o}".encode()).hexdigest()  # noqa: E731
        assert json.loads(row["options"]) == sorted(options, key=lambda o: (digest(o), o))
    text = (tmp_path / "v" / "batch.csv").read_text(encoding="utf-8")
    assert "correct" not in text and "label" not in text


def test_mturk_round_trip_gives_the_own_csv_results(tmp_path, case):
    run, questions, validations = case
    spec = cosmos_spec()
    crowd.export_question_hits(run, tmp_path / "w", spec.hits, "mturk")
    written = writing_results(tmp_path / "written.csv", questions, batch_rows(tmp_path / "w" / "batch.csv", "paragraph_id"))
    own_q, own_v = write_csv(tmp_path / "q.csv", questions), write_csv(tmp_path / "v.csv", validations)
    got, _, _ = crowd.read_question_sets(written, {p["paragraph_id"]: p for p in read_table(run, "paragraphs").to_pylist()},
                                         spec.hits, spec.limits)
    assert sorted((s.set_id, s.question, tuple(s.correct), tuple(s.incorrect), s.question_type) for s in got) == sorted(
        (f"{q['assignment_id']}#q{q['question_number']}", q["question"],
         tuple(v for k in ("correct_1", "correct_2") if (v := q[k])),
         (q["incorrect_1"], q["incorrect_2"], q["incorrect_3"]), "causes") for q in questions)
    crowd.export_validation_hits(run, written, tmp_path / "v", spec.hits, spec.seed, spec.limits, "mturk")
    judged = validation_results(tmp_path / "judged.csv", questions, validations,
                                batch_rows(tmp_path / "v" / "batch.csv", "set_id"))
    platform = cosmos.run_hits_import(spec, run, written, judged, tmp_path / "qa-mturk", scorer=FakeScorer())
    own = cosmos.run_hits_import(spec, run, own_q, own_v, tmp_path / "qa-own", scorer=FakeScorer())
    read, own_read = platform["stages"].pop("read_results"), own["stages"].pop("read_results")
    assert platform["stages"] == own["stages"] and platform["splits"] == own["splits"]
    # one record per assignment: A6 wrote its two questions in one, the own CSV has a row each
    assert read == {**own_read, "in": own_read["in"] - 1, "kept": own_read["kept"] - 1}
    # valid: A1#q1, A2#q1, A6#q1; A3#q1 has one correct choice, A6#q2 one "question not sensible"
    assert platform["stages"]["validation"]["kept"] == 3
    for table in ("sets", "train", "dev", "test", "rejects"):
        assert read_table(tmp_path / "qa-mturk", table).to_pylist() == read_table(tmp_path / "qa-own", table).to_pylist()


def label_studio(path: Path, tasks: list[dict], key: str, annotations: dict[str, list[dict]],
                 task_ids: dict[str, str] | None = None) -> Path:
    return label_studio_export(path, [
        label_studio_task((task_ids or {}).get(t["data"][key], n), t["data"], annotations.get(t["data"][key], []),
                          project=2) for n, t in enumerate(tasks)])


def result(name: str, kind: str, value) -> dict:
    return label_studio_result(name, "paragraph" if name.startswith("q") else "question", kind, value)


def test_label_studio_round_trip_gives_the_own_csv_results(tmp_path, case):
    run, questions, validations = case
    spec = cosmos_spec()
    crowd.export_question_hits(run, tmp_path / "w", spec.hits, "label-studio")
    tasks = json.loads((tmp_path / "w" / "tasks.json").read_text(encoding="utf-8"))
    annotations: dict[str, list[dict]] = {}
    for q in questions:
        n = q["question_number"]
        by = annotations.setdefault(q["paragraph_id"], [])
        if not by or by[-1]["id"] != q["assignment_id"]:
            by.append(label_studio_annotation(q["assignment_id"], {"id": 1, "email": q["worker_id"]}, [],
                                              f"2024-06-04T10:00:0{len(by)}Z", lead_time=60))
        by[-1]["result"] += [result(f"q{n}_type", "choices", q["question_type"]),
                             result(f"q{n}_question", "textarea", q["question"]),
                             *(result(f"q{n}_correct{k}", "textarea", q[f"correct_{k}"]) for k in (1, 2) if q[f"correct_{k}"]),
                             *(result(f"q{n}_incorrect{k}", "textarea", q[f"incorrect_{k}"]) for k in (1, 2, 3))]
    # the task id is the HIT id of the sets; here one assignment per paragraph, as in `case`
    task_ids = {q["paragraph_id"]: q["hit_id"] for q in questions}
    written = label_studio(tmp_path / "written.json", tasks, "paragraph_id", annotations, task_ids)
    crowd.export_validation_hits(run, written, tmp_path / "v", spec.hits, spec.seed, spec.limits, "label-studio")
    vtasks = json.loads((tmp_path / "v" / "tasks.json").read_text(encoding="utf-8"))
    judged_by: dict[str, list[dict]] = {}
    for n, v in enumerate(validations):
        judged_by.setdefault(v["set_id"], []).append(label_studio_annotation(
            500 + n, {"id": 2, "email": v["worker_id"]},
            [result("chosen_answer", "choices", chosen_text(questions, v)),
             *(result(k, "choices", v[k]) for k in ("paragraph_sensible", "question_sensible",
                                                      "needs_commonsense", "answerable_without_paragraph"))],
            f"2024-06-04T11:00:{n:02d}Z", lead_time=30))
    judged_by["A2#q1"].append(label_studio_annotation(999, 3, [], "2024-06-04T09:00:00Z",
                                                      cancelled=True))    # cancelled: skipped
    judged = label_studio(tmp_path / "judged.json", vtasks, "set_id", judged_by)
    platform = cosmos.run_hits_import(spec, run, written, judged, tmp_path / "qa-ls", scorer=FakeScorer())
    own = cosmos.run_hits_import(spec, run, write_csv(tmp_path / "q.csv", questions),
                                 write_csv(tmp_path / "v.csv", validations), tmp_path / "qa-own", scorer=FakeScorer())
    read, own_read = platform["stages"].pop("read_results"), own["stages"].pop("read_results")
    assert platform["stages"] == own["stages"] and platform["validations"] == own["validations"]
    # A6's two questions are one annotation (one row each in the own CSV); one cancelled annotation
    assert read == {"in": own_read["in"], "kept": own_read["kept"] - 1,
                    "rejected": {"cancelled_annotation": 1}, "balanced": True}
    for table in ("sets", "train", "dev", "test"):
        assert read_table(tmp_path / "qa-ls", table).to_pylist() == read_table(tmp_path / "qa-own", table).to_pylist()
    rejects = read_table(tmp_path / "qa-ls", "rejects").to_pylist()
    assert [(r["stage"], r["reason"], r["record_id"]) for r in rejects if r["stage"] == "read_results"] == [
        ("read_results", "cancelled_annotation", "999")]
    assert [r for r in rejects if r["stage"] != "read_results"] == read_table(tmp_path / "qa-own", "rejects").to_pylist()


def test_foreign_validation_hit_is_one_clear_error(tmp_path, case):
    run, questions, validations = case
    spec = cosmos_spec()
    crowd.export_question_hits(run, tmp_path / "w", spec.hits, "mturk")
    written = writing_results(tmp_path / "written.csv", questions, batch_rows(tmp_path / "w" / "batch.csv", "paragraph_id"))
    crowd.export_validation_hits(run, written, tmp_path / "v", spec.hits, spec.seed, spec.limits, "mturk")
    batch = batch_rows(tmp_path / "v" / "batch.csv", "set_id")
    batch["A9#q1"] = dict(batch["A1#q1"], set_id="A9#q1")
    extra = [*validations, judgement("A9#q1", "V0", chosen="They wanted to buy a van .")]
    questions_plus = [*questions, question_row("A9", "W9", questions[0]["paragraph_id"])]
    judged = validation_results(tmp_path / "judged.csv", questions_plus, extra, batch)
    with pytest.raises(UserError, match=r"judged.csv: assignment VA\d+ \(HIT VH-A9#q1\) is not from this export: "
                                        r"set_id 'A9#q1' is not in the run"):
        cosmos.run_hits_import(spec, run, written, judged, tmp_path / "qa", scorer=FakeScorer())


def test_cli_validation_export_needs_the_written_sets(tmp_path, case, capsys):
    run, questions, _ = case
    assert main(["cosmos", "hits", "export", str(run), "--task", "validation", "--format", "mturk",
                 "--output", str(tmp_path / "v")]) == 2
    assert "needs --questions" in capsys.readouterr().err
    q = write_csv(tmp_path / "q.csv", questions)
    assert main(["cosmos", "hits", "export", str(run), "--task", "validation", "--questions", str(q),
                 "--format", "label-studio", "--output", str(tmp_path / "v")]) == 0
    assert (tmp_path / "v" / "config.xml").is_file() and "5 validation HITs" in capsys.readouterr().out


def test_preview_pages_are_filled(tmp_path, case):
    run, questions, _ = case
    spec = cosmos_spec()
    writing = crowd.preview_page(run, spec.hits, spec.seed, spec.limits)
    assert "${" not in writing and 'value="blog0/0000#p000"' in writing
    validation = crowd.preview_page(run, spec.hits, spec.seed, spec.limits, write_csv(tmp_path / "q.csv", questions), "A6#q2")
    assert "${" not in validation and 'value="A6#q2"' in validation and "What might Sam do next time ?" in validation
