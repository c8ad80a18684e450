"""Cosmos QA crowd data for tests (§2.2-2.3): a stage-1 run of invented paragraphs, question and
validation rows as the own CSVs hold them, and the simulated sets behind the `cosmos_simulated`
fixture (tests/conftest.py), one set per rule of the validation and NOTA steps."""
from __future__ import annotations

import csv
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from data_specs import load_schema, load_spec
from pipeline.cli.main import main


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


def cosmos_spec(*overrides: str):
    return load_spec("cosmos", ["splits.excellent_workers=[W-EXCELLENT]", *overrides])


def write_simulated(folder: Path) -> tuple[Path, Path, Path]:
    """Six paragraphs (a stage-1 run in `folder`/run), then questions.csv and validations.csv in
    `folder`: one set per case below, validated by 3 simulated workers each."""
    run = folder / "run"
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
    return run, write_csv(folder / "questions.csv", questions), write_csv(folder / "validations.csv", validations)


def import_simulated(simulated, output):
    """`csdata cosmos hits import` of the `simulated` sets (`write_simulated`) into `output`
    (overlap scorer, W-EXCELLENT as the excellent worker); returns `output`."""
    run, questions, validations = simulated
    assert main(["cosmos", "hits", "import", str(run), "--questions", str(questions),
                 "--validations", str(validations), "--output", str(output),
                 "--set", "answer_scorer.name=overlap", "--set", "splits.excellent_workers=[W-EXCELLENT]"]) == 0
    return output
