"""`csdata protoqa release` also writes the Hugging Face layout and card (issue #14), and
`csdata protoqa reproduce` reruns it from the recorded input and spec."""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq

from pipeline.cli.main import main
from tests.conftest import hf_datasets
from tests.core.test_release_hf import check_with_datasets, header_problems
from transforms.core.reporting.release import CARD, read_card_header
from transforms.protoqa.release import hf_row

SAMPLES = Path(__file__).resolve().parents[1] / "data" / "protoqa"
RECORD = {"metadata": {"id": "q9", "source": "umass-crowdsource"},
          "question": {"original": "Name a pet.", "normalized": "name a pet."},
          "answers": {"raw": {"dog": 5, "a cat": 2, "asdf": 1},
                      "clusters": {"q9.0": {"count": 5, "answers": ["dog"]},
                                   "q9.1": {"count": 2, "answers": ["a cat", "cat"]}}},
          "num": {"answers": 7, "clusters": 2}}


def test_hf_row_turns_the_keyed_objects_into_lists():
    assert hf_row(RECORD) == {
        "metadata": {"id": "q9", "source": "umass-crowdsource"},
        "question": {"original": "Name a pet.", "normalized": "name a pet."},
        "answers": {"raw": [{"answer": "dog", "count": 5}, {"answer": "a cat", "count": 2},
                            {"answer": "asdf", "count": 1}],
                    "clusters": [{"id": "q9.0", "count": 5, "answers": ["dog"]},
                                 {"id": "q9.1", "count": 2, "answers": ["a cat", "cat"]}]},
        "num": {"answers": 7, "clusters": 2}}


def release(tmp_path: Path) -> Path:
    out = tmp_path / "release"
    assert main(["-q", "protoqa", "release", "--input", str(SAMPLES / "golden_adjudicated.jsonl"),
                 "--output", str(out)]) == 0
    return out


def test_release_writes_the_jsonl_and_the_hub_layout(tmp_path):
    out = release(tmp_path)
    for split, name in (("dev", "validation"), ("test", "test")):
        records = [json.loads(line) for line in (out / f"{split}.jsonl").read_text().splitlines()]
        table = [r for f in sorted((out / "data").glob(f"{name}-*.parquet")) for r in pq.read_table(f).to_pylist()]
        assert table == [hf_row(r) for r in records]
    assert sorted(p.name for p in (out / "data").iterdir()) == [
        "test-00000-of-00001.parquet", "validation-00000-of-00001.parquet"]
    header = read_card_header(out / CARD)
    assert header_problems(header) == []
    check_with_datasets(header)
    assert [e["split"] for e in header["configs"][0]["data_files"]] == ["validation", "test"]
    card = (out / CARD).read_text(encoding="utf-8")
    assert f'load_dataset("{out}")' in card and "boratko2020protoqa" in card
    assert "coverage" in card and "Every spec value is the paper's default." in card


def test_load_dataset_and_reproduce(tmp_path, capsys):
    out = release(tmp_path)
    loaded = hf_datasets("""
from datasets import load_dataset
loaded = load_dataset(release)
result = {"splits": list(loaded), "num_rows": {s: loaded[s].num_rows for s in loaded},
          "test_features": list(loaded["test"].features)}
""", release=str(out))
    assert loaded["splits"] == ["validation", "test"]
    assert loaded["num_rows"]["validation"] + loaded["num_rows"]["test"] == 2
    assert loaded["test_features"] == ["metadata", "question", "answers", "num"]
    capsys.readouterr()
    assert main(["protoqa", "reproduce", str(out), "--output", str(tmp_path / "new")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "default/test                 identical" in lines and lines[-1] == "identical"
    assert (tmp_path / "new" / "release" / "dev.jsonl").read_bytes() == (out / "dev.jsonl").read_bytes()
