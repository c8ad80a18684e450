"""ProtoQA question curation: the pure rules and the Beam transform on the invented samples."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import apache_beam as beam
from apache_beam.testing.util import assert_that, equal_to

from data_specs import load_spec
from filters.protoqa import (
    answer_problem,
    coverage_problem,
    excluded_class,
    flag_reason,
    normalize_question,
    omitted,
    same_question,
)
from tests.conftest import beam_test_pipeline
from transforms.protoqa.cluster_prep import normalize_answer_text
from transforms.protoqa.questions import CurateQuestions, pick_question, question_row, scraped_jsonl
from transforms.protoqa.read import parse_question, read_id_list
from transforms.protoqa.release import top_k_coverage

DATA = Path(__file__).resolve().parents[1] / "data" / "protoqa"
SPEC = load_spec("protoqa")


def test_normalize_question_like_protoqa_data():
    assert normalize_question("Name Something You\u2019d Find  In A Car.\u00a0") == "name something you'd find in a car."
    assert normalize_question("If \u201cIdol\u201d Had Pets ") == 'if "idol" had pets'


def test_normalize_answer_text_drops_case_punctuation_and_articles():
    assert normalize_answer_text("  The Dad's  CAR!! ", ["a", "an", "the"]) == ["dad's", "car"]
    assert normalize_answer_text("a-n apple", ["a", "an", "the"]) == ["n", "apple"]


def test_list_question_class():
    classes = SPEC.questions.excluded_classes
    assert excluded_class("name a vegetable.", classes) == "excluded_list_question"
    assert excluded_class("name a soft drink.", classes) == "excluded_list_question"
    assert excluded_class("name a vegetable kids hate to eat.", classes) is None
    assert excluded_class("name something you pack for the beach.", classes) is None


def test_omitted_by_id_or_question():
    assert omitted("q1", "x", ["q1"]) == "omitted"
    assert omitted("other", "name a thing.", [], ["name a thing."]) == "omitted"
    assert omitted("q2", "y", ["q1"], ["x"]) is None


def test_answer_problems():
    assert answer_problem({"a": 50, "b": 40}, 1, 100) is None
    assert answer_problem({}, 1, 100) == "too_few_answers"
    assert answer_problem({"a": 60, "b": 41}, 1, 100) == "answers_over_total"
    assert answer_problem({"a": 60, "b": 41}, 1, None) is None
    assert answer_problem({"a": -1}, 1, 100) == "bad_count"


def test_flags_from_list_and_patterns():
    patterns = SPEC.questions.flag_patterns
    assert flag_reason("q1", "name a chore husbands skip.", [], patterns) == "gendered"
    assert flag_reason("q2", "name a fruit.", ["q2"], patterns) == "listed"
    assert flag_reason("q3", "name a fruit.", [], patterns) == ""


def test_same_question_confirms_only_wording_variants():
    assert same_question("name a job at a big company.", "name a job in a big company.")
    assert same_question("name a food that does not need ice.", "name a food that doesnt need ice")
    assert not same_question("past or present, name a famous bob.", "past or present, name a famous joan.")


def test_coverage_rule_is_strictly_more_than():
    assert top_k_coverage([50, 30, 5, 5], 2, 100) == 80.0
    assert coverage_problem(85.0, 85) == "low_coverage"
    assert coverage_problem(85.01, 85) is None


def test_parse_question_and_malformed_rows():
    line = (DATA / "scraped.jsonl").read_text(encoding="utf-8").splitlines()[0]
    [question] = parse_question(line)
    assert question["question_id"] == "sample_q1"
    assert question["answers"][0] == ("sunscreen", 41)
    [reject] = parse_question('{"metadata": ')
    assert reject.reason == "malformed_row"


def test_pick_question_keeps_smallest_id():
    a = {"question_id": "b", "answers": []}
    b = {"question_id": "a", "answers": []}
    out = list(pick_question(("text", [a, b])))
    assert out[0] is b and out[1].reason == "duplicate_question"


def test_read_id_list_formats(tmp_path):
    ids, questions = read_id_list(str(DATA / "omitted.jsonl"))
    assert ids == ["sample_q12"] and questions == ["name a place where you have to whisper."]
    (tmp_path / "ids.txt").write_text("# comment\nx1\n\nx2\n")
    assert read_id_list(str(tmp_path / "ids.txt")) == (["x1", "x2"], [])


def test_scraped_jsonl_round_trips_the_format():
    line = (DATA / "scraped.jsonl").read_text(encoding="utf-8").splitlines()[0]
    [question] = parse_question(line)
    assert json.loads(scraped_jsonl(question_row(question, [], {}))) == json.loads(line)


def test_curate_questions_transform():
    lines = (DATA / "scraped.jsonl").read_text(encoding="utf-8").splitlines()
    omitted_ids, omitted_questions = read_id_list(str(DATA / "omitted.jsonl"))
    with beam_test_pipeline() as p:
        rows, rejects, tallies = (p | beam.Create(lines)
                                  | CurateQuestions(SPEC.questions, SPEC.seed, omitted_ids, omitted_questions,
                                                    ["sample_q10"]))
        assert_that(rows | "Ids" >> beam.Map(lambda r: (r["question_id"], r["flag_reason"])),
                    equal_to([("sample_q1", ""), ("sample_q2", ""), ("sample_q4", ""),
                              ("sample_q7", ""), ("sample_q8", ""), ("sample_q9", "gendered"),
                              ("sample_q10", "listed")]), label="kept")
        assert_that(rejects | "Reasons" >> beam.Map(lambda r: (r.stage, r.reason, r.record_id)),
                    equal_to([("read", "malformed_row", rejects_id_placeholder()),
                              ("dedup_exact", "duplicate_question", "sample_q3"),
                              ("dedup_near", "near_duplicate", "sample_q5"),
                              ("class_filter", "excluded_list_question", "sample_q6"),
                              ("omitted", "omitted", "sample_q12"),
                              ("answer_check", "answers_over_total", "sample_q11")]), label="rejects")


def rejects_id_placeholder() -> str:
    line = (DATA / "scraped.jsonl").read_text(encoding="utf-8").splitlines()[-1].strip()
    return "line-" + hashlib.sha1(line.encode("utf-8")).hexdigest()[:12]
