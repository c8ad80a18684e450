"""ProtoQA question reading on damaged inputs (issue #10): latin-1 lines, NULs, wrong field types
and lines that are not JSON are named `read` rejects and the run goes on.
Inputs: tests/data/protoqa/damaged (invented)."""
from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path

import apache_beam as beam
import pyarrow.parquet as pq
import pytest
from apache_beam.testing.util import assert_that, equal_to

from data_specs import load_spec
from pipeline.cli.main import main
from tests.conftest import beam_test_pipeline
from transforms.core.accounting import Reject
from transforms.core.errors import UserError
from transforms.protoqa.questions import CurateQuestions
from transforms.protoqa.read import ReadQuestionLines, parse_question, read_id_list

DAMAGED = Path(__file__).resolve().parents[1] / "data" / "protoqa" / "damaged"
SCRAPED = DAMAGED / "scraped_damaged.jsonl"
LATIN1 = DAMAGED / "scraped_latin1.jsonl"
SPEC = load_spec("protoqa")


def line_id(number: int, path: Path = SCRAPED) -> str:
    """The record id of a line without a usable metadata.id: line-{sha1 of the line}."""
    raw = path.read_bytes().split(b"\n")[number - 1].strip()
    return "line-" + hashlib.sha1(raw).hexdigest()[:12]


READ_REJECTS = [
    ("read", "bad_field_type", "dmg_q3"), ("read", "bad_field_type", "dmg_q4"),
    ("read", "bad_field_type", "dmg_q5"), ("read", "bad_field_type", line_id(6)),
    ("read", "malformed_row", line_id(7)), ("read", "malformed_row", line_id(8)),
    ("read", "malformed_row", line_id(9)), ("read", "malformed_row", line_id(10)),
]


# ---------------------------------------------------------------------------- plain functions

def test_field_types_are_checked_with_clear_reasons():
    def reject(row) -> tuple[str, str]:
        [outcome] = parse_question(json.dumps(row))
        assert isinstance(outcome, Reject)
        return outcome.reason, outcome.detail

    good = {"metadata": {"id": "q"}, "question": {"original": "Name A Tool.", "normalized": "name a tool."},
            "answers": {"raw": {"hammer": 3}}}
    assert not isinstance(parse_question(json.dumps(good))[0], Reject)
    assert reject({**good, "question": {"original": "Name A Tool.", "normalized": 5}}) == (
        "bad_field_type", "question.normalized must be a string, got int")
    assert reject({**good, "question": {"original": ["Name"]}}) == (
        "bad_field_type", "question.original must be a string, got list")
    assert reject({**good, "question": 12}) == ("bad_field_type", "question must be an object or a string, got int")
    assert reject({**good, "answers": {"raw": {"hammer": "3"}}}) == (
        "bad_field_type", "answers.raw['hammer'] must be an integer count, got str")
    assert reject({**good, "answers": {"raw": {"hammer": True}}}) == (
        "bad_field_type", "answers.raw['hammer'] must be an integer count, got bool")
    assert reject({**good, "answers": {"raw": {"hammer": 2.5}}})[0] == "bad_field_type"
    assert reject({**good, "answers": [1]}) == ("bad_field_type", "answers must be an object, got list")
    assert reject({**good, "metadata": {"id": "q", "source": 3}}) == (
        "bad_field_type", "metadata.source must be a string, got int")
    assert reject({**good, "metadata": "q"}) == ("bad_field_type", "metadata must be an object, got str")
    assert reject({"metadata": {"id": "q"}}) == ("malformed_row", "row has no question")
    assert reject({"question": {"normalized": "x"}}) == ("malformed_row", "row has no question.original")
    assert reject([1, 2]) == ("malformed_row", "a line must be a JSON object, got list")


def test_lines_are_decoded_and_cleaned():
    [question] = parse_question(("f.jsonl:1", LATIN1.read_bytes().split(b"\n")[0]))
    assert question["original"] == "Name Something You Order At A Caf\u00e9."
    assert question["answers"] == [("cr\u00eapes", 45), ("coffee", 40)]
    [question] = parse_question(SCRAPED.read_bytes().split(b"\n")[1])      # raw and escaped NULs
    assert question["original"] == "Name Something You Find In A Garden Shed."
    assert question["answers"] == [("rake", 44), ("spade", 30)]
    [question] = parse_question(SCRAPED.read_bytes().split(b"\n")[0])      # after a BOM
    assert question["question_id"] == "dmg_q1"
    [reject] = parse_question(("f.jsonl:7", b"not json"))
    assert (reject.reason, reject.detail) == ("malformed_row", "f.jsonl:7: not JSON: Expecting value: line 1 column 1 (char 0)")
    [reject] = parse_question(LATIN1.read_bytes().split(b"\n")[0], encoding="strict")
    assert reject.reason == "not_utf8" and reject.record_id == line_id(1, LATIN1)
    [reject] = parse_question(SCRAPED.read_bytes().split(b"\n")[1], controls="reject")
    assert reject.reason == "control_characters"
    [reject] = parse_question('{"metadata": {"id": "q"}, "question": "Name A \\u0000Tool."}', controls="reject")
    assert (reject.reason, reject.record_id) == ("control_characters", "q")
    assert parse_question(b"  \n") == [] and parse_question("") == []


def test_read_id_list_decodes_latin1_and_names_a_broken_line(tmp_path):
    latin = tmp_path / "omitted.jsonl"
    latin.write_bytes(json.dumps({"metadata": {"id": "o1"}, "question": {"original": "Name A Caf\u00e9 Drink."}},
                                 ensure_ascii=False).encode("latin-1") + b"\n")
    assert read_id_list(str(latin)) == (["o1"], ["name a caf\u00e9 drink."])
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"metadata": {"id": "o1"}}\n{"metadata": \n', encoding="utf-8")
    with pytest.raises(UserError, match=r"broken\.jsonl:2: not a protoqa-data row"):
        read_id_list(str(broken))


# ------------------------------------------------------------------------------ Beam transforms

def test_curate_questions_reads_bytes_with_origins():
    with beam_test_pipeline() as p:
        lines = p | ReadQuestionLines([str(SCRAPED), str(LATIN1)])
        rows, rejects, tallies = lines | CurateQuestions(SPEC.questions, SPEC.seed)
        assert_that(rows | "Rows" >> beam.Map(lambda r: (r["question_id"], r["original"])), equal_to(
            [("dmg_q1", "Name Something You Bring To A Picnic."),
             ("dmg_q2", "Name Something You Find In A Garden Shed."),
             ("lat_q1", "Name Something You Order At A Caf\u00e9."),
             ("lat_q2", "Name Something You Keep In A Wallet.")]), label="Kept")
        assert_that(rejects | "Rejects" >> beam.Map(lambda r: (r.stage, r.reason, r.record_id)),
                    equal_to(READ_REJECTS + [("answer_check", "bad_count", "dmg_q11")]), label="Rejects")
        origins = (rejects | "ReadOnly" >> beam.Filter(lambda r: r.stage == "read")
                   | "Origin" >> beam.Map(lambda r: r.detail.split(": ")[0].rsplit(":", 1)[1]))
        assert_that(origins, equal_to([str(n) for n in range(3, 11)]), label="Origins")
        read_counts = (tallies | "Read" >> beam.Filter(lambda t: t[0][0] == "read")
                       | "Sum" >> beam.CombinePerKey(sum))
        assert_that(read_counts, equal_to([(("read", "in"), 13), (("read", "kept"), 5),
                                           (("read", "rejected.bad_field_type"), 4),
                                           (("read", "rejected.malformed_row"), 4)]), label="Tallies")


def test_lines_and_strings_over_the_limits_are_rejects(tmp_path):
    spec = load_spec("protoqa", ["limits.max_field_bytes=100", "limits.max_record_bytes=2000"])

    def row(qid: str, question: str, answer: str = "towel") -> str:
        return json.dumps({"metadata": {"id": qid}, "question": {"original": question},
                           "answers": {"raw": {answer: 3}}})

    path = tmp_path / "limits.jsonl"
    path.write_text("\n".join([
        row("q1", "Name something you take to the beach."),
        row("q2", "Name something you take to the beach.", "sun " * 30),       # a 120-byte answer
        row("q3", "Name something you take to the beach." + " really" * 500),  # a 3.5 KB line
        row("q4", "Name something you keep in a glovebox."),
    ]) + "\n", encoding="utf-8")
    with beam_test_pipeline() as p:
        rows, rejects, _ = (p | ReadQuestionLines([str(path)], spec.limits)
                            | CurateQuestions(spec.questions, spec.seed, limits=spec.limits))
        assert_that(rows | "Ids" >> beam.Map(lambda r: r["question_id"]), equal_to(["q1", "q4"]), label="Kept")
        assert_that(rejects | "Reasons" >> beam.Map(lambda r: (r.reason, r.detail.split(": ")[0])), equal_to([
            ("field_too_large", f"{path}:2"), ("record_too_large", f"{path}:3")]), label="Rejects")


def test_strict_policy_rejects_the_latin1_line():
    spec = load_spec("protoqa", ["questions.encoding=strict"])
    with beam_test_pipeline() as p:
        rows, rejects, _ = p | ReadQuestionLines([str(LATIN1)]) | CurateQuestions(spec.questions, spec.seed)
        assert_that(rows | "Ids" >> beam.Map(lambda r: r["question_id"]), equal_to(["lat_q2"]), label="Kept")
        assert_that(rejects | "Reasons" >> beam.Map(lambda r: (r.reason, r.record_id)),
                    equal_to([("not_utf8", line_id(1, LATIN1))]), label="Rejects")


# ------------------------------------------------------------------------------- end to end

def _questions_run(tmp_path, path: Path, caplog, capsys):
    out = tmp_path / "questions"
    with caplog.at_level(logging.WARNING):
        code = main(["protoqa", "questions", "--input", str(path), "--output", str(out)])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "Traceback" not in err
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    summary = json.loads((out / "summary.json").read_text())
    assert all(stage["balanced"] for stage in summary["stages"].values())
    questions = pq.read_table(out / "questions").to_pylist()
    rejects = {(r["stage"], r["reason"], r["record_id"]) for r in pq.read_table(out / "rejects").to_pylist()}
    return summary, questions, rejects


@pytest.mark.slow
def test_questions_run_on_damaged_lines(tmp_path, caplog, capsys):
    summary, questions, rejects = _questions_run(tmp_path, SCRAPED, caplog, capsys)
    assert summary["stages"]["read"] == {"in": 11, "kept": 3, "balanced": True,
                                         "rejected": {"bad_field_type": 4, "malformed_row": 4}}
    assert summary["stages"]["answer_check"]["rejected"] == {"bad_count": 1}
    assert [(q["question_id"], q["original"], [a["answer"] for a in q["answers"]]) for q in
            sorted(questions, key=lambda q: q["question_id"])] == [
        ("dmg_q1", "Name Something You Bring To A Picnic.", ["blanket", "sandwiches", "juice"]),
        ("dmg_q2", "Name Something You Find In A Garden Shed.", ["rake", "spade"])]
    assert rejects == set(READ_REJECTS) | {("answer_check", "bad_count", "dmg_q11")}


@pytest.mark.slow
def test_questions_run_on_a_latin1_line(tmp_path, caplog, capsys):
    summary, questions, rejects = _questions_run(tmp_path, LATIN1, caplog, capsys)
    assert summary["stages"]["read"] == {"in": 2, "kept": 2, "balanced": True, "rejected": {}}
    assert {q["question_id"]: q["original"] for q in questions} == {
        "lat_q1": "Name Something You Order At A Caf\u00e9.", "lat_q2": "Name Something You Keep In A Wallet."}
    assert rejects == set()
