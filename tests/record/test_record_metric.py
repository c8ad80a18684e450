"""The official ReCoRD metric on hand-computed cases and on the real examples' shape."""
import json
from pathlib import Path

import pytest

from transforms.record.metric import evaluate, exact_match_score, f1_score, is_correct, normalize_answer


def test_normalisation_steps():
    assert normalize_answer("  The  U.S.  Army's ") == "us armys"
    assert normalize_answer("An apple, a day") == "apple day"
    assert normalize_answer("theatre") == "theatre"  # "the" only as a word


def test_f1_by_hand():
    # prediction tokens: tracy morgan show; truth: morgan -> P = 1/3, R = 1, F1 = 0.5
    assert f1_score("Tracy Morgan show", "Morgan") == pytest.approx(0.5)
    assert f1_score("Paris", "London") == 0.0
    assert exact_match_score("the NBC", "NBC")


def test_evaluate_small_case_by_hand():
    data = [{"qas": [
        {"id": "q1", "answers": [{"text": "Tracy Morgan"}, {"text": "Morgan"}]},
        {"id": "q2", "answers": [{"text": "New Jersey Turnpike"}]},
        {"id": "q3", "answers": [{"text": "NBC"}]},
    ]}]
    predictions = {"q1": "Morgan", "q2": "New Jersey"}   # q3 unanswered scores 0
    # EM: 1 + 0 + 0 = 1/3 ; F1: 1 + (P=1, R=2/3 -> 0.8) + 0 = 1.8/3
    result = evaluate(data, predictions)
    assert result["exact_match"] == pytest.approx(100 / 3)
    assert result["f1"] == pytest.approx(60.0)


def test_is_correct_uses_any_reference():
    assert is_correct("morgan", ["Tracy Morgan", "Morgan"])
    assert not is_correct("Tracy", ["Tracy Morgan"])


SAMPLE = Path(__file__).resolve().parents[3] / "shared" / "samples" / "record" / "record_v1_dev_2examples.json"


@pytest.mark.skipif(not SAMPLE.exists(), reason="real ReCoRD samples not beside the checkout")
def test_real_release_examples_score_100_with_gold_and_0_without():
    data = json.loads(SAMPLE.read_text(encoding="utf-8"))["data"]
    gold = {qa["id"]: qa["answers"][-1]["text"] for p in data for qa in p["qas"]}
    assert evaluate(data, gold) == {"exact_match": 100.0, "f1": 100.0}
    assert evaluate(data, {}) == {"exact_match": 0.0, "f1": 0.0}
