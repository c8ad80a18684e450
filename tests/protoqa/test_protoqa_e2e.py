"""End to end through `csdata protoqa ...` on the invented samples (MiniLM and spaCy included)."""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq

from pipeline.cli.main import main

DATA = Path(__file__).resolve().parents[1] / "data" / "protoqa"


def test_protoqa_end_to_end(tmp_path, capsys):
    out = tmp_path / "questions"
    assert main(["protoqa", "questions", "--input", str(DATA / "scraped.jsonl"), "--output", str(out),
                 "--omitted", str(DATA / "omitted.jsonl"), "--flagged", str(DATA / "flagged.txt")]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert all(stage["balanced"] for stage in summary["stages"].values())
    assert summary["stages"]["read"]["in"] == 13
    questions = pq.read_table(out / "questions").to_pylist()
    assert len(questions) == 7 and sum(q["flagged"] for q in questions) == 2
    assert len(pq.read_table(out / "rejects").to_pylist()) == 6
    assert len((out / "questions.jsonl").read_text().splitlines()) == 7

    prep = tmp_path / "prep"
    assert main(["protoqa", "cluster-prep", "--answers", str(DATA / "crowd_answers.csv"),
                 "--output", str(prep)]) == 0
    rows = {(r["question_id"], r["answer"]): r for r in pq.read_table(prep / "answers").to_pylist()}
    assert len(rows) == 28
    assert rows[("c1", "sandwiches")]["normalized"] == "sandwich"          # spaCy lemma
    assert rows[("c1", "a blanket")]["normalized"] == "blanket"            # article dropped
    assert rows[("c1", "Sandwhich")]["proposed_cluster"] == rows[("c1", "sandwich")]["proposed_cluster"]
    assert rows[("c2", "children")]["proposed_cluster"] == rows[("c2", "kids")]["proposed_cluster"]
    assert rows[("c1", "beverages")]["proposed_cluster"] == rows[("c1", "drinks")]["proposed_cluster"]
    assert any(e.startswith("embedding:") for e in rows[("c1", "beverages")]["evidence"])

    assert main(["protoqa", "sheets", "export", "--prep", str(prep), "--output", str(tmp_path / "sheets")]) == 0
    assert (tmp_path / "sheets" / "sheet_A.csv").read_text().startswith(
        "question_id,question,answer,count,fixed_spelling,proposed_cluster,annotator_cluster")
    assert main(["protoqa", "sheets", "import", "--sheet", str(DATA / "sheets" / "annotator_a.csv"),
                 "--sheet", str(DATA / "sheets" / "annotator_b.csv"), "--output", str(tmp_path / "agree")]) == 0
    assert "overall: macro" in capsys.readouterr().out
    assert main(["protoqa", "sheets", "adjudicate", "--sheet", str(DATA / "sheets" / "adjudicated.csv"),
                 "--output", str(tmp_path / "adj")]) == 0
    release = tmp_path / "release"
    assert main(["protoqa", "release", "--input", str(tmp_path / "adj" / "adjudicated.jsonl"),
                 "--output", str(release)]) == 0
    ids = [json.loads(line)["metadata"]["id"] for name in ("dev.jsonl", "test.jsonl")
           for line in (release / name).read_text().splitlines()]
    assert sorted(ids) == ["c1", "c2"]
    capsys.readouterr()
    for run_dir in (out, prep, release, tmp_path / "agree"):
        assert main(["stats", str(run_dir)]) == 0
    text = capsys.readouterr().out
    assert "clusters per question" in text and "top-8 coverage" in text and "BLANC between" in text


def test_non_beam_commands_reject_unknown_options(tmp_path, capsys):
    assert main(["protoqa", "release", "--input", "x.jsonl", "--output", str(tmp_path), "--bogus"]) == 2
    assert "--bogus" in capsys.readouterr().err
