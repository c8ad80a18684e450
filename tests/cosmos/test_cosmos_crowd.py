"""Cosmos QA stages 2-3 on simulated worker data: validation, NOTA rules, splits, release export."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from data_specs import load_schema, load_spec
from pipeline import cosmos
from pipeline.cli import main
from transforms.core.errors import UserError
from transforms.core.io import read_table
from transforms.cosmos import crowd, nota, release
from transforms.cosmos.scorers import MiniLMAnswers

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "cosmos" / "golden"
NOTA = "None of the above choices ."


def write_paragraphs(run: Path, n: int = 6) -> dict[str, str]:
    texts = {f"blog{i}/0000#p000": f"Paragraph {i}: my friend Sam lost the keys to the van on day {i}, "
             f"so we waited at the station in the rain until his brother came with a spare set." for i in range(n)}
    schema = load_schema("cosmos", "paragraphs")
    rows = [{"blog_id": pid.split("/")[0], "story_id": pid.split("#")[0], "paragraph_id": pid, "text": t,
             "n_words": len(t.split()), "n_tokens": 0, "first_sentence": 0, "n_sentences": 1,
             "cut_before": float("nan"), "cut_after": float("nan"), "origin": "test"} for pid, t in texts.items()]
    (run / "paragraphs").mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), run / "paragraphs" / "part-0.parquet")
    (run / "summary.json").write_text('{"stages": {}}')   # a finished stage-1 run has one
    return texts


def question_row(assignment, worker, paragraph, number=1, correct=("They were stuck without a way home .",),
                 incorrect=("They wanted to buy a van .", "The station was closed for good .",
                            "Sam's brother lives on the moon ."), question="Why did they wait at the station ?"):
    row = {"hit_id": f"HIT{assignment}", "assignment_id": assignment, "worker_id": worker,
           "paragraph_id": paragraph, "question_number": str(number), "question_type": "causes",
           "question": question}
    for k in range(2):
        row[f"correct_{k + 1}"] = correct[k] if k < len(correct) else ""
    for k in range(3):
        row[f"incorrect_{k + 1}"] = incorrect[k] if k < len(incorrect) else ""
    return row


def judgement(set_id, worker, chosen="1", paragraph="yes", question="yes", commonsense="yes", without="no"):
    return {"set_id": set_id, "worker_id": worker, "assignment_id": f"V-{set_id}-{worker}",
            "paragraph_sensible": paragraph, "question_sensible": question, "chosen_answer": chosen,
            "needs_commonsense": commonsense, "answerable_without_paragraph": without}


def write_csv(path: Path, rows: list[dict]) -> Path:
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


class FakeScorer:
    """Scores a negative by its length: the shortest negative is the least challenging."""

    name = "fake"

    def __init__(self):
        self.calls = []

    def score(self, items):
        self.calls.append(items)
        return [[float(len(a)) for a in answers] for _, _, answers in items]


def cosmos_spec(*overrides: str):
    return load_spec("cosmos", ["splits.excellent_workers=[W-EXCELLENT]", *overrides])


@pytest.fixture
def spec():
    return cosmos_spec()


@pytest.fixture
def simulated(tmp_path, spec):
    """Six paragraphs; one set per case below, validated by 3 simulated workers each."""
    run = tmp_path / "run"
    ids = sorted(write_paragraphs(run))
    questions = [
        question_row("A1", "W-EXCELLENT", ids[0]),                                   # 3/3 correct
        question_row("A2", "W2", ids[1], correct=("They had no keys .", "They could not drive the van .")),
        question_row("A3", "W2", ids[2]),                                            # exactly 2 correct
        question_row("A4", "W3", ids[3]),                                            # only 1 correct
        question_row("A5", "W3", ids[4]),                                            # one dissatisfied
        question_row("A6", "W-EXCELLENT", ids[5]),                                   # unanswerable
        question_row("A6", "W-EXCELLENT", ids[5], number=2, question="What might Sam do next time ?"),
        question_row("A7", "W4", ids[0], incorrect=("Only two wrong answers .", "The second one .")),
        question_row("A8", "W4", "no-such-paragraph"),
        question_row("A1", "W-EXCELLENT", ids[0], number=3),                         # a third question
    ]
    validations = []
    for s in ("A1#q1", "A2#q1"):
        validations += [judgement(s, f"V{k}") for k in range(3)]
    validations += [judgement("A3#q1", "V0"), judgement("A3#q1", "V1", chosen="They wanted to buy a van ."),
                    judgement("A3#q1", "V2", chosen="they were stuck without a way home")]
    validations += [judgement("A4#q1", "V0"), judgement("A4#q1", "V1", chosen="3"), judgement("A4#q1", "V2", chosen="4")]
    validations += [judgement("A5#q1", "V0"), judgement("A5#q1", "V1"), judgement("A5#q1", "V2", question="no")]
    validations += [judgement("A6#q1", "V0"), judgement("A6#q1", "V1", without="yes"), judgement("A6#q1", "V2", chosen="2")]
    validations += [judgement("A6#q2", "V0"), judgement("A6#q2", "V1", commonsense="no"), judgement("A6#q2", "V2")]
    validations += [judgement("A9#q1", "V0")]                                        # unknown set
    validations += [judgement("A1#q1", "V0", chosen="2")]                            # repeated worker: ignored
    return run, write_csv(tmp_path / "questions.csv", questions), write_csv(tmp_path / "validations.csv", validations)


def import_simulated(simulated, output):
    """`csdata cosmos hits import` of the `simulated` sets into `output` (overlap scorer,
    W-EXCELLENT as the excellent worker); returns `output`."""
    run, questions, validations = simulated
    assert main(["cosmos", "hits", "import", str(run), "--questions", str(questions),
                 "--validations", str(validations), "--output", str(output),
                 "--set", "answer_scorer.name=overlap", "--set", "splits.excellent_workers=[W-EXCELLENT]"]) == 0
    return output


def test_import_applies_validation_rules_and_accounts_for_every_set(tmp_path, simulated, spec):
    run, questions, validations = simulated
    out = tmp_path / "qa"
    summary = cosmos.run_hits_import(spec, run, questions, validations, out, scorer=FakeScorer())
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


def test_unanswerable_rule(tmp_path, simulated, spec):
    run, questions, validations = simulated
    out = tmp_path / "qa"
    cosmos.run_hits_import(spec, run, questions, validations, out, scorer=FakeScorer())
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
    qset = crowd.QuestionSet("s", "p", "", "a", "w", 1, "", "q?", ["yes"], ["n1", "n2", "n3"])
    j = lambda intended, commonsense=True, without=False: crowd.Judgement(  # noqa: E731
        "v", True, True, "yes" if intended else "n1", intended, commonsense, without)
    qset.judgements = [j(True), j(True), j(False)]
    assert not nota.is_unanswerable(qset, 2)
    qset.judgements = [j(True), j(True), j(False, without=True)]
    assert nota.is_unanswerable(qset, 2)               # the vote may come from any validator
    qset.judgements = [j(True), j(False), j(False, commonsense=False)]
    assert not nota.is_unanswerable(qset, 2)          # only one intended answer


def test_false_negative_replaces_the_weakest_negative(tmp_path, simulated):
    run, questions, validations = simulated
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


def test_splits_draw_dev_test_only_from_excellent_workers(spec):
    rows = []
    for p in range(40):
        worker = "W-EXCELLENT" if p % 2 else f"W{p}"
        for q in range(2):
            rows.append({"paragraph_id": f"p{p}", "worker_id": worker, "id": f"p{p}-{q}"})
    # 80 instances of a reference 100: dev and test scale to 0.8 of 10 and 20.
    splits = spec.splits.model_copy(update={"reference_total": 100, "dev_size": 10, "test_size": 20})
    targets = nota.assign_splits(rows, splits, spec.seed)
    assert targets == {"instances": 80, "eval_pool": 40, "dev_target": 8, "test_target": 16}
    by_split = {s: [r for r in rows if r["split"] == s] for s in nota.SPLITS}
    assert len(by_split["dev"]) == 8 and len(by_split["test"]) == 16
    assert all(r["worker_id"] == "W-EXCELLENT" for s in ("dev", "test") for r in by_split[s])
    splits_of = {}
    for r in rows:
        splits_of.setdefault(r["paragraph_id"], set()).add(r["split"])
    assert all(len(v) == 1 for v in splits_of.values())    # no paragraph in two splits


def test_eval_targets_scale_down_for_small_inputs(spec):
    splits = spec.splits
    assert nota.eval_targets(35588, 10000, splits) == (3000, 7000)
    assert nota.eval_targets(71176, 10000, splits) == (3000, 7000)
    assert nota.eval_targets(3559, 500, splits) == (300, 700)
    assert nota.eval_targets(5, 2, splits) == (1, 1)
    assert nota.eval_targets(2, 0, splits) == (0, 0)


def test_release_export_matches_golden(tmp_path, simulated):
    run, questions, validations = simulated
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


def test_question_hits_export(tmp_path, spec):
    run = tmp_path / "run"
    texts = write_paragraphs(run, 3)
    n = crowd.export_question_hits(run, tmp_path / "hits.csv", spec.hits)
    rows = list(csv.DictReader((tmp_path / "hits.csv").open(encoding="utf-8")))
    assert n == 3 and [r["paragraph_id"] for r in rows] == sorted(texts)
    text = rows[0]["instructions"]
    for needle in ("causes", "effects", "facts about entities", "counterfactuals", "up to 2 questions",
                   "1 to 2 correct answers", "3 incorrect answers"):
        assert needle in text


def test_bad_yes_no_value_is_an_error(tmp_path, simulated, spec):
    run, questions, _ = simulated
    bad = write_csv(tmp_path / "bad.csv", [judgement("A1#q1", "V0", paragraph="maybe")])
    with pytest.raises(UserError, match="paragraph_sensible"):
        cosmos.run_hits_import(spec, run, questions, bad, tmp_path / "qa", scorer=FakeScorer())


def test_minilm_answer_scorer_ranks_an_unrelated_negative_lowest():
    pytest.importorskip("transformers")
    scorer = MiniLMAnswers()
    paragraph = "Our flight to Lisbon was cancelled because of the storm, so we slept at the airport."
    question = "Why did they sleep at the airport ?"
    negatives = ["The hotel near the airport was full .", "Penguins eat fish in cold water .",
                 "They wanted to watch the planes ."]
    scores = scorer.score([(paragraph, question, negatives)])[0]
    assert nota.weakest_negative(scores) == 1


def test_cli_round_trip(tmp_path, simulated):
    run, questions, validations = simulated
    assert main(["cosmos", "hits", "export", str(run), "--output", str(tmp_path / "hits.csv")]) == 0
    qa = tmp_path / "qa"
    import_simulated(simulated, qa)
    assert main(["cosmos", "export", str(qa), "--output", str(tmp_path / "release")]) == 0
    assert sorted(p.name for p in (tmp_path / "release").iterdir()) == ["csdata-run.json", "dev.csv", "provenance.json",
                                                                     "test.jsonl", "train.csv"]
    assert cosmos.is_run(qa)
    text = cosmos.stats(qa)
    assert "unanswerable questions %" in text and "6.7" in text
    with pytest.raises(SystemExit):
        main(["cosmos", "export", str(qa), "--output", str(tmp_path / "r2"), "--runner=apache_beam.runners.portability.fn_api_runner.FnApiRunner"])
