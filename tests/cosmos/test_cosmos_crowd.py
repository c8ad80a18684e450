"""Cosmos QA stages 2-3 on simulated worker data: validation, NOTA rules, splits, release export."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from pipeline.cli import cosmos
from pipeline.cli.main import main
from tests.cosmos.crowd_sets import cosmos_spec, import_simulated, judgement, write_csv, write_paragraphs
from transforms.core.errors import UserError
from transforms.core.io.tables import read_table
from transforms.cosmos import crowd, crowd_results, nota, release
from transforms.cosmos.scorers import MiniLMAnswers

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "cosmos" / "golden"
NOTA = "None of the above choices ."


class FakeScorer:
    """Scores a negative by its length: the shortest negative is the least challenging."""

    name = "fake"

    def __init__(self):
        self.calls = []

    def score(self, items):
        self.calls.append(items)
        return [[float(len(a)) for a in answers] for _, _, answers in items]


def test_import_applies_validation_rules_and_accounts_for_every_set(tmp_path, cosmos_simulated, cosmos_crowd_spec):
    run, questions, validations = cosmos_simulated
    out = tmp_path / "qa"
    summary = cosmos.run_hits_import(cosmos_crowd_spec, run, questions, validations, out, scorer=FakeScorer())
    assert summary["stages"]["question_sets"] == {
        "in": 10, "kept": 7, "balanced": True,
        "rejected": {"paragraph_missing": 1, "too_few_incorrect_answers": 1, "too_many_questions": 1}}
    assert summary["stages"]["validation"] == {
        "in": 7, "kept": 5, "balanced": True,
        "rejected": {"answer_not_agreed": 1, "judged_unsatisfactory": 1}}
    assert summary["validations"] == {"read": 23, "used": 21, "unknown_set": 1, "repeated": 1}
    sets = {r["set_id"]: r for r in read_table(out, "sets").to_pylist()}
    assert sorted(sets) == ["A1#q1", "A2#q1", "A3#q1", "A6#q1", "A6#q2"]
    assert sets["A3#q1"]["intended_votes"] == 2            # exactly two correct workers: valid
    rejects = {r["record_id"]: r["reason"] for r in read_table(out, "rejects").to_pylist()}
    assert rejects["A4#q1"] == "answer_not_agreed"         # one correct worker: invalid
    assert rejects["A5#q1"] == "judged_unsatisfactory"     # one dissatisfied worker: invalid


def test_unanswerable_rule(tmp_path, cosmos_simulated, cosmos_crowd_spec):
    run, questions, validations = cosmos_simulated
    out = tmp_path / "qa"
    cosmos.run_hits_import(cosmos_crowd_spec, run, questions, validations, out, scorer=FakeScorer())
    sets = {r["set_id"]: r for r in read_table(out, "sets").to_pylist()}
    # A6#q1: 2 of 3 chose the answer, one said answerable without the paragraph.
    # A6#q2: 3 chose it, one said it needs no commonsense. Both become NOTA questions.
    assert sets["A6#q1"]["unanswerable"] and sets["A6#q1"]["unanswerable_votes"] == 1
    assert sets["A6#q2"]["unanswerable"]
    assert not sets["A1#q1"]["unanswerable"] and not sets["A3#q1"]["unanswerable"]
    rows = [r for s in nota.SPLITS for r in read_table(out, s).to_pylist()]
    for r in rows:
        answers = [r[f"answer{i}"] for i in range(4)]
        if r["set_id"].startswith("A6"):
            assert answers[r["label"]] == NOTA and r["unanswerable"]
            assert sorted(answers) == sorted([NOTA, "They wanted to buy a van .", "The station was closed for good .",
                                              "Sam's brother lives on the moon ."])
        else:
            assert answers[r["label"]] != NOTA
    # A2 has two correct answers: two instances q1_a1 and q1_a2; the others one each.
    ids = sorted(r["id"] for r in rows)
    assert [i.rsplit("##", 1)[1] for i in ids if "##A2##" in i] == ["q1_a1", "q1_a2"]
    assert len(rows) == 6


def test_unanswerable_needs_two_intended_and_one_vote():
    qset = crowd_results.QuestionSet("s", "p", "", "a", "w", 1, "", "q?", ["yes"], ["n1", "n2", "n3"])
    j = lambda intended, commonsense=True, without=False: crowd_results.Judgement(  # noqa: E731
        "v", True, True, "yes" if intended else "n1", intended, commonsense, without)
    qset.judgements = [j(True), j(True), j(False)]
    assert not nota.is_unanswerable(qset, 2)
    qset.judgements = [j(True), j(True), j(False, without=True)]
    assert nota.is_unanswerable(qset, 2)               # the vote may come from any validator
    qset.judgements = [j(True), j(False), j(False, commonsense=False)]
    assert not nota.is_unanswerable(qset, 2)          # only one intended answer


def test_false_negative_replaces_the_weakest_negative(tmp_path, cosmos_simulated):
    run, questions, validations = cosmos_simulated
    spec = cosmos_spec("nota.false_negative_rate=1.0")   # every answerable valid set
    scorer = FakeScorer()
    out = tmp_path / "qa"
    summary = cosmos.run_hits_import(spec, run, questions, validations, out, scorer=scorer)
    assert summary["nota"] == {"unanswerable_sets": 2, "false_negative_sets": 3, "valid_sets": 5}
    assert len(scorer.calls) == 1 and len(scorer.calls[0]) == 3     # one batch, answerable sets only
    sets = {r["set_id"]: r for r in read_table(out, "sets").to_pylist()}
    # The fake scorer ranks negatives by length: the shortest is the least challenging.
    assert sets["A1#q1"]["replaced_negative"] == "They wanted to buy a van ."
    assert not sets["A6#q1"]["nota_distractor"]
    for row in read_table(out, "train").to_pylist() + read_table(out, "dev").to_pylist():
        answers = [row[f"answer{i}"] for i in range(4)]
        if not row["unanswerable"]:
            assert NOTA in answers and answers[row["label"]] != NOTA
            assert "They wanted to buy a van ." not in answers


def test_false_negative_sampling_rate_and_determinism():
    ids = [f"set{i}" for i in range(4000)]
    chosen = [nota.takes_false_negative(i, 1909, 0.7) for i in ids]
    assert 0.68 < sum(chosen) / len(ids) < 0.72
    assert chosen == [nota.takes_false_negative(i, 1909, 0.7) for i in ids]
    assert nota.weakest_negative([0.3, 0.1, 0.1]) == 1


def test_splits_draw_dev_test_only_from_excellent_workers(cosmos_crowd_spec):
    rows = []
    for p in range(40):
        worker = "W-EXCELLENT" if p % 2 else f"W{p}"
        for q in range(2):
            rows.append({"paragraph_id": f"p{p}", "worker_id": worker, "id": f"p{p}-{q}"})
    # 80 instances of a reference 100: dev and test scale to 0.8 of 10 and 20.
    splits = cosmos_crowd_spec.splits.model_copy(update={"reference_total": 100, "dev_size": 10, "test_size": 20})
    targets = nota.assign_splits(rows, splits, cosmos_crowd_spec.seed)
    assert targets == {"instances": 80, "eval_pool": 40, "dev_target": 8, "test_target": 16}
    by_split = {s: [r for r in rows if r["split"] == s] for s in nota.SPLITS}
    assert len(by_split["dev"]) == 8 and len(by_split["test"]) == 16
    assert all(r["worker_id"] == "W-EXCELLENT" for s in ("dev", "test") for r in by_split[s])
    splits_of = {}
    for r in rows:
        splits_of.setdefault(r["paragraph_id"], set()).add(r["split"])
    assert all(len(v) == 1 for v in splits_of.values())    # no paragraph in two splits


def test_eval_targets_scale_down_for_small_inputs(cosmos_crowd_spec):
    splits = cosmos_crowd_spec.splits
    assert nota.eval_targets(35588, 10000, splits) == (3000, 7000)
    assert nota.eval_targets(71176, 10000, splits) == (3000, 7000)
    assert nota.eval_targets(3559, 500, splits) == (300, 700)
    assert nota.eval_targets(5, 2, splits) == (1, 1)
    assert nota.eval_targets(2, 0, splits) == (0, 0)


def test_release_export_matches_golden(tmp_path, cosmos_simulated):
    run, questions, validations = cosmos_simulated
    spec = cosmos_spec("nota.false_negative_rate=1.0")
    qa = tmp_path / "qa"
    cosmos.run_hits_import(spec, run, questions, validations, qa, scorer=FakeScorer())
    out = tmp_path / "release"
    counts = release.export_release(qa, out)
    assert counts == {"train.csv": 3, "dev.csv": 1, "test.jsonl": 2}
    for name in ("train.csv", "dev.csv", "test.jsonl"):
        assert (out / name).read_text(encoding="utf-8") == (GOLDEN / name).read_text(encoding="utf-8"), name
    header = (out / "train.csv").read_text(encoding="utf-8").split("\n")[0]
    assert header == "id,context,question,answer0,answer1,answer2,answer3,label"
    test_rows = [json.loads(line) for line in (out / "test.jsonl").read_text(encoding="utf-8").splitlines()]
    assert all("label" not in r and set(r) == {"id", "context", "question", "answer0", "answer1",
                                                "answer2", "answer3"} for r in test_rows)
    nota_rows = [r for r in csv.DictReader((out / "train.csv").open(encoding="utf-8"))
                 if NOTA in [r[f"answer{i}"] for i in range(4)]]
    assert nota_rows, "the exact release NOTA string appears in the export"


def test_question_hits_export(tmp_path, cosmos_crowd_spec):
    run = tmp_path / "run"
    texts = write_paragraphs(run, 3)
    n = crowd.export_question_hits(run, tmp_path / "hits.csv", cosmos_crowd_spec.hits)
    rows = list(csv.DictReader((tmp_path / "hits.csv").open(encoding="utf-8")))
    assert n == 3 and [r["paragraph_id"] for r in rows] == sorted(texts)
    text = rows[0]["instructions"]
    for needle in ("causes", "effects", "facts about entities", "counterfactuals", "up to 2 questions",
                   "1 to 2 correct answers", "3 incorrect answers"):
        assert needle in text


def test_bad_yes_no_value_is_an_error(tmp_path, cosmos_simulated, cosmos_crowd_spec):
    run, questions, _ = cosmos_simulated
    bad = write_csv(tmp_path / "bad.csv", [judgement("A1#q1", "V0", paragraph="maybe")])
    with pytest.raises(UserError, match="paragraph_sensible"):
        cosmos.run_hits_import(cosmos_crowd_spec, run, questions, bad, tmp_path / "qa", scorer=FakeScorer())


def test_minilm_answer_scorer_ranks_an_unrelated_negative_lowest():
    pytest.importorskip("transformers")
    scorer = MiniLMAnswers()
    paragraph = "Our flight to Lisbon was cancelled because of the storm, so we slept at the airport."
    question = "Why did they sleep at the airport ?"
    negatives = ["The hotel near the airport was full .", "Penguins eat fish in cold water .",
                 "They wanted to watch the planes ."]
    scores = scorer.score([(paragraph, question, negatives)])[0]
    assert nota.weakest_negative(scores) == 1


def test_cli_round_trip(tmp_path, cosmos_simulated):
    run, questions, validations = cosmos_simulated
    assert main(["cosmos", "hits", "export", str(run), "--output", str(tmp_path / "hits.csv")]) == 0
    qa = tmp_path / "qa"
    import_simulated(cosmos_simulated, qa)
    assert main(["cosmos", "export", str(qa), "--output", str(tmp_path / "release")]) == 0
    assert sorted(p.name for p in (tmp_path / "release").iterdir()) == ["csdata-run.json", "dev.csv", "provenance.json",
                                                                     "test.jsonl", "train.csv"]
    assert cosmos.is_run(qa)
    text = cosmos.stats(qa)
    assert "unanswerable questions %" in text and "6.7" in text
    with pytest.raises(SystemExit):
        main(["cosmos", "export", str(qa), "--output", str(tmp_path / "r2"), "--runner=apache_beam.runners.portability.fn_api_runner.FnApiRunner"])
