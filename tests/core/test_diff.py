"""`csdata diff RUN --release FILE` (issue #31) on invented runs and published files; every
expected figure is counted by hand in the comments."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from pipeline.cli.main import main
from tests.cosmos.crowd_sets import write_paragraphs
from tests.record.test_release import P1, TEXT, hand_run
from transforms.protoqa.sheets import build_record


def run_diff(capsys, run: Path, release: Path) -> dict:
    assert main(["diff", str(run), "--release", str(release), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_record_run_against_an_official_file(tmp_path, capsys):
    run = hand_run(tmp_path / "run")     # p1: "plans a second cafe" (Ana Silva), "is in Portugal" (Porto)
    spans = [{"start": e["start"], "end": e["end"]} for e in P1]
    published = {"version": "v1.0", "data": [
        {"id": "p1", "source": "CNN", "passage": {"text": TEXT, "entities": spans}, "qas": [
            {"id": "p1-a", "query": "@placeholder is in Portugal.",
             "answers": [{"start": 27, "end": 31, "text": "Porto"}]},                       # identical
            {"id": "x-1", "query": "@placeholder plans a second cafe.",
             "answers": [{"start": 27, "end": 31, "text": "Porto"}]},                       # answers differ
            {"id": "p1-c", "query": "Silva had worked in @placeholder for years.",
             "answers": [{"start": 54, "end": 59, "text": "Lisbon"}]}]},                    # lost
        {"id": "p4", "source": "CNN", "passage": {"text": "Kim Lee won.\n@highlight\nLee wins",
                                                  "entities": [{"start": 0, "end": 6}]},
         "qas": [{"id": "p4-a", "query": "@placeholder won.", "answers": [{"start": 0, "end": 6, "text": "Kim Lee"}]}]},
    ]}
    release = tmp_path / "record.json"
    release.write_text(json.dumps(published), encoding="utf-8")
    report = run_diff(capsys, run, release)
    assert (report["passages"], report["passages_kept"], report["passage_text_identical"]) == (2, 1, 1)
    # entity spans: p1's 3 found of 3 published, p4's 1 missed: P 3/3, R 3/4, F1 6/7
    assert report["entity_spans"] == {"precision": 1.0, "recall": 0.75, "f1": 0.857}
    assert (report["published_queries"], report["queries_regenerated"], report["answers_identical"]) == (4, 2, 1)
    assert (report["ids_checked"], report["ids_identical"]) == (2, 1)
    assert report["lost_by_reason"] == {"no_reject_for_sentence": 1, "passage_rejected": 1}
    # Ana Silva for Porto: both spans are entities on both sides, so one missed and one wrong link
    assert report["answer_errors"] == {"link_missed": 1, "wrong_link": 1}
    assert [(q["passage_id"], q["verdict"], q["cause"]) for q in report["queries"]] == [
        ("p1", "answers differ", "both"), ("p1", "lost", "no_reject_for_sentence"), ("p4", "lost", "passage_rejected")]
    assert main(["diff", str(run), "--release", str(release)]) == 0
    assert "entity spans P / R / F1     1.000 / 0.750 / 0.857" in capsys.readouterr().out


def _protoqa_file(path: Path, questions: dict[str, list[list[str]]]) -> Path:
    """protoqa-data JSONL: each cluster of n strings counts n answers (one per string)."""
    lines = []
    for qid, clusters in questions.items():
        raw = {a: 1 for members in clusters for a in members}
        lines.append(json.dumps(build_record(qid, "test", f"Name a thing {qid}.", f"name a thing {qid}.", raw,
                                             [(len(m), m) for m in clusters])))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_protoqa_release_against_published_questions(tmp_path, capsys):
    ours = _protoqa_file(tmp_path / "ours.jsonl", {"q1": [["a", "b"], ["c"]], "q2": [["a"], ["b", "c"]],
                                                   "q4": [["x"]]})
    run = tmp_path / "release"
    assert main(["-q", "protoqa", "release", "--input", str(ours), "--output", str(run)]) == 0
    capsys.readouterr()
    published = _protoqa_file(tmp_path / "published.jsonl", {"q1": [["a", "b"], ["c"]], "q2": [["a", "b"], ["c"]],
                                                            "q3": [["z"]]})
    report = run_diff(capsys, run, published)
    assert report["questions"] == {"published": 3, "run": 3, "kept": 2, "dropped": ["q3"], "extra": ["q4"]}
    # q2: published links ab (coref), ac bc (non); ours bc (coref), ab ac (non): Fc 0, Fn 1/2 -> 25
    assert {q: row["blanc"] for q, row in report["per_question"].items()} == {"q1": 100.0, "q2": 25.0}
    assert report["per_question"]["q2"]["clusters"] == [2, 2]
    # micro: coref 1 common of 2 and 2, non-coref 3 of 4 and 4 -> (1/2 + 3/4) / 2
    assert report["blanc"] == {"macro": 62.5, "micro": 62.5}


def test_cosmos_run_against_a_published_csv(tmp_path, capsys):
    run = tmp_path / "cosmos"
    texts = list(write_paragraphs(run, n=3).values())
    release = tmp_path / "valid.csv"
    with release.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "context", "question", "answer0", "answer1", "answer2", "answer3", "label"])
        found = "  " + texts[0].replace(" ", "  ") + " "            # the same text, other whitespace
        for n, context in enumerate([found, "A context of another blog .", "A context of another blog ."]):
            writer.writerow([f"id{n}", context, "Why ?", "a", "b", "c", "d", "0"])
    report = run_diff(capsys, run, release)
    # two distinct published contexts; the first is paragraph 0 of the run
    assert report["paragraphs"] == {"run": 3, "published_contexts": 2, "published_found_in_run": 1}
    assert sum(row[1] for row in report["words_histogram"]) == 3
    assert sum(row[2] for row in report["words_histogram"]) == 2
    assert report["words"]["published"]["min"] == 6                  # "A context of another blog ."


@pytest.mark.parametrize("content", ['{"version": "v1.0", "data": "none"}\n', "id,context\n1,x\n"])
def test_a_file_of_another_dataset_is_one_line(tmp_path, capsys, content):
    release = tmp_path / "published.jsonl"
    release.write_text(content, encoding="utf-8")
    assert main(["diff", str(hand_run(tmp_path / "run")), "--release", str(release)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"csdata: error: --release {release}: not a published ReCoRD file")
