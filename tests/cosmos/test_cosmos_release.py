"""`csdata cosmos release` and `reproduce` (issue #14): the release columns in the Hugging Face
layout, the card, `datasets.load_dataset`, and the rerun of the crowd import from its records."""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq

from pipeline.cli.main import main
from tests.conftest import hf_datasets
from tests.core.test_release_hf import check_with_datasets, header_problems
from tests.cosmos.crowd_sets import judgement, question_row, write_csv, write_paragraphs
from transforms.core.reporting.release import CARD, read_card_header

EXCELLENT = "W-EXCELLENT"
COLUMNS = ["id", "context", "question", "answer0", "answer1", "answer2", "answer3", "label"]


def qa_run(tmp_path: Path) -> Path:
    """Stage 1 written by hand, then `cosmos hits import` of four sets that all validate: two
    by the excellent worker (dev/test), two by others (train)."""
    run = tmp_path / "paragraphs"
    ids = sorted(write_paragraphs(run, 4))
    sets = [("A1", EXCELLENT, ids[0]), ("A2", EXCELLENT, ids[1]), ("A3", "W2", ids[2]), ("A4", "W3", ids[3])]
    questions = write_csv(tmp_path / "questions.csv", [question_row(a, w, p) for a, w, p in sets])
    validations = write_csv(tmp_path / "validations.csv",
                            [judgement(f"{a}#q1", f"V{k}") for a, _, _ in sets for k in range(3)])
    qa = tmp_path / "qa"
    assert main(["-q", "cosmos", "hits", "import", str(run), "--questions", str(questions),
                 "--validations", str(validations), "--output", str(qa),
                 "--set", "answer_scorer.name=overlap", "--set", f"splits.excellent_workers=[{EXCELLENT}]"]) == 0
    return qa


def split_rows(release: Path, split: str) -> list[dict]:
    return [r for f in sorted((release / "data").glob(f"{split}-*.parquet")) for r in pq.read_table(f).to_pylist()]


def test_release_columns_splits_and_card(tmp_path):
    qa = qa_run(tmp_path)
    release = tmp_path / "release"
    assert main(["cosmos", "release", str(qa), "--output", str(release)]) == 0
    train, dev, test = (split_rows(release, s) for s in ("train", "validation", "test"))
    assert len(train) == 2 and len(dev) + len(test) == 2
    assert all(list(r) == COLUMNS for r in train + dev + test)
    assert all(r["label"] == -1 for r in test)                   # hidden, as in the published test file
    published = {r["id"]: r for r in pq.read_table(next((qa / "train").glob("*.parquet"))).to_pylist()}
    assert [{c: published[r["id"]][c] for c in COLUMNS} for r in train] == train
    header = read_card_header(release / CARD)
    assert header_problems(header) == []
    check_with_datasets(header)
    assert header["configs"][0]["config_name"] == "default" and header["license"] == "cc-by-4.0"
    assert header["task_categories"] == ["multiple-choice"]
    card = (release / CARD).read_text(encoding="utf-8")
    assert "answer_scorer.name` | `overlap` | `minilm`" in card          # the spec differences
    assert "huang2019cosmos" in card and "## Reject funnel" in card


def test_a_paragraphs_run_is_refused(tmp_path, capsys):
    run = tmp_path / "paragraphs"
    write_paragraphs(run, 2)
    assert main(["cosmos", "release", str(run), "--output", str(tmp_path / "release")]) == 2
    assert "cosmos hits import" in capsys.readouterr().err


def test_load_dataset_and_reproduce(tmp_path, capsys):
    release = tmp_path / "release"
    assert main(["cosmos", "release", str(qa_run(tmp_path)), "--output", str(release)]) == 0
    loaded = hf_datasets("""
from datasets import load_dataset
loaded = load_dataset(release)
result = {"splits": list(loaded), "features": list(loaded["train"].features),
          "label_dtype": loaded["train"].features["label"].dtype}
""", release=str(release))
    assert loaded["splits"] == ["train", "validation", "test"]
    assert loaded["features"] == COLUMNS
    assert loaded["label_dtype"] == "int32"
    capsys.readouterr()
    assert main(["-q", "cosmos", "reproduce", str(release), "--output", str(tmp_path / "new")]) == 0
    out = capsys.readouterr().out
    assert "default/train                identical" in out and out.rstrip().endswith("identical")
    steps = json.loads((release / "provenance.json").read_text())["steps"]
    assert [s["command"] for s in steps] == ["cosmos hits import", "cosmos release"]
    assert {Path(i["path"]).name for i in steps[0]["inputs"]} >= {"questions.csv", "validations.csv"}
