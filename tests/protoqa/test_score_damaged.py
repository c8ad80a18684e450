"""`csdata protoqa score` on predictions and targets that cannot be scored (issue #10): one clear
error naming the file (and line) and the question, exit 2, no traceback.
Inputs: tests/data/protoqa/damaged (invented)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.cli.main import main
from transforms.core.errors import UserError
from transforms.protoqa import metric as pm
from transforms.protoqa import metric_inputs as mi

DAMAGED = Path(__file__).resolve().parents[1] / "data" / "protoqa" / "damaged"
TARGETS = Path(__file__).resolve().parents[1] / "data" / "protoqa_score" / "targets.jsonl"

BAD_PREDICTIONS = [
    ("predictions_numbers.json", "predictions_numbers.json: question t1: answer 2 must be a string, got int 3"),
    ("predictions_null.jsonl", "predictions_null.jsonl:2: question t2: answer 2 must be a string, got null"),
    ("predictions_nested.json",
     'predictions_nested.json: question t1: answer 1 must be a string, got list ["dog", "puppy"]'),
    ("predictions_string.json",
     "predictions_string.json: question t1: ranked answers must be a list of strings, got str"),
    ("predictions_not_json.txt", "predictions_not_json.txt: not JSON (Expecting value at line 1 column 1)"),
    ("predictions_broken_line.jsonl",
     "predictions_broken_line.jsonl:2: not JSON (Expecting ',' delimiter at column 25)"),
]


@pytest.mark.parametrize("name, message", BAD_PREDICTIONS)
def test_bad_predictions_are_one_user_error(name, message):
    with pytest.raises(UserError) as error:
        pm.load_predictions(DAMAGED / name)
    assert str(error.value) == f"{DAMAGED}/{message}"


def test_parse_predictions_names_line_and_question():
    with pytest.raises(mi.PredictionsError, match="question b: answer 1 must be a string, got object") as error:
        mi.parse_predictions('{"a": ["x"]}\n{"b": [{"text": "y"}]}\n')
    assert error.value.line == 2
    with pytest.raises(mi.PredictionsError, match="predictions must be JSON objects, got list"):
        mi.parse_predictions('[["x"]]')
    with pytest.raises(mi.PredictionsError, match="empty file"):
        mi.parse_predictions("  \n")
    assert mi.parse_predictions('{"question_id": 7, "ranked_answers": ["x"]}') == {"7": ["x"]}


def test_predictions_with_a_bom_are_read():
    assert pm.load_predictions(DAMAGED / "predictions_bom.json") == {"t1": ["Dog", "cat"], "t2": ["fridge"]}


@pytest.mark.parametrize("name, message", [
    ("targets_bad_cluster.jsonl", "targets_bad_cluster.jsonl:2: not a protoqa-data question "
                                  "(question t9, cluster t9.0: answers must be a list of strings, got str)"),
    ("targets_not_json.jsonl", "targets_not_json.jsonl:3: not JSON (Expecting value: line 1 column 39 (char 38))"),
])
def test_bad_targets_name_the_line(name, message):
    with pytest.raises(UserError) as error:
        pm.load_targets(DAMAGED / name)
    assert str(error.value) == f"{DAMAGED}/{message}"


def test_targets_type_checks(tmp_path):
    def problem(row) -> str:
        path = tmp_path / "t.jsonl"
        path.write_text(json.dumps(row) + "\n", encoding="utf-8")
        with pytest.raises(UserError) as error:
            pm.load_targets(path)
        return str(error.value).split(": ", 1)[1]

    clusters = {"q.0": {"count": 2, "answers": ["a"]}}
    assert problem([1]) == "not a protoqa-data question (a targets line must be a JSON object, got list)"
    assert problem({"metadata": {"id": ["q"]}, "answers": {"clusters": clusters}}) == (
        "not a protoqa-data question (question id must be a string, got list)")
    assert problem({"metadata": {"id": "q"}, "answers": {"clusters": {"q.0": {"count": None, "answers": ["a"]}}}}) == (
        "not a protoqa-data question (question q, cluster q.0: count must be an integer, got null)")
    assert problem({"metadata": {"id": "q"}, "answers": {"clusters": {"q.0": {"answers": ["a"]}}}}) == (
        "not a protoqa-data question (missing 'count')")
    assert problem({"metadata": {"id": "q"}, "answers": {"clusters": {"q.0": {"count": 1, "answers": [1]}}}}) == (
        "not a protoqa-data question (question q, cluster q.0: answers must be strings, got int 1)")


def test_unknown_predicted_question_is_a_user_error():
    targets = pm.load_targets(TARGETS)
    with pytest.raises(UserError, match="1 predicted question.s. not in the targets: zz") as error:
        pm.evaluate(targets, {"zz": ["a"]})
    assert isinstance(error.value, KeyError) and str(error.value).startswith("1 predicted")


@pytest.mark.parametrize("name, message", BAD_PREDICTIONS[:2] + BAD_PREDICTIONS[4:5])
def test_cli_score_with_bad_predictions_exits_2_with_one_line(name, message, capsys):
    code = main(["protoqa", "score", "--targets", str(TARGETS), "--predictions", str(DAMAGED / name)])
    captured = capsys.readouterr()
    assert code == 2
    assert captured.err.splitlines() == [f"csdata: error: {DAMAGED}/{message}"]
    assert captured.out == ""


def test_cli_score_with_bad_targets_and_unknown_questions(capsys, tmp_path):
    assert main(["protoqa", "score", "--targets", str(DAMAGED / "targets_not_json.jsonl"),
                 "--predictions", str(DAMAGED / "predictions_bom.json")]) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith(f"csdata: error: {DAMAGED}/targets_not_json.jsonl:3: not JSON")
    extra = tmp_path / "predictions.json"
    extra.write_text('{"t1": ["dog"], "t7": ["cat"]}', encoding="utf-8")
    assert main(["protoqa", "score", "--targets", str(TARGETS), "--predictions", str(extra)]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "csdata: error: 1 predicted question(s) not in the targets: t7")
