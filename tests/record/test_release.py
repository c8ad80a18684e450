"""`csdata record release` and `reproduce` (issue #14): the Hugging Face layout of a ReCoRD run,
its dataset card, `datasets.load_dataset`, and the rerun from the recorded inputs and spec."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from pipeline.cli.main import main
from tests.conftest import hf_datasets
from tests.core.test_release_hf import check_with_datasets, header_problems
from transforms.core.io.tables import write_json, write_rows
from transforms.core.reporting.release import CARD, read_card_header

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "record_release_card_header.yaml"
BODY = "Ana Silva opened a cafe in Porto. Silva had worked in Lisbon for years."
TEXT = BODY + "\n@highlight\nA new cafe in Porto"
OTHER = "Rio Ferdinand joined Leeds. Ferdinand left West Ham.\n@highlight\nLeeds sign Ferdinand"


def mention(text: str, name: str, label: str, chain: int, nth: int = 0) -> dict:
    start = text.index(name) if nth == 0 else text.index(name, text.index(name) + 1)
    return {"start": start, "end": start + len(name) - 1, "text": name, "label": label, "chain": chain}


def passage(pid: str, text: str, split: str, entities: list[dict]) -> dict:
    return {"passage_id": pid, "source": "CNN", "url": "", "split": split, "encoding": "utf-8",
            "text": text, "body_end": text.index("\n"), "passage_paragraphs": 1, "rest_paragraphs": 1,
            "tokens": 12, "entities": entities}


def query(qid: str, pid: str, text: str, answers: list[dict]) -> dict:
    return {"query_id": qid, "passage_id": pid, "query": text, "sentence": text, "sentence_index": 0,
            "placeholder_start": 0, "mention": answers[0]["text"], "label": "PERSON", "chain": 0,
            "answers": [{k: a[k] for k in ("start", "end", "text")} for a in answers],
            "filters_passed": []}


P1 = [mention(TEXT, "Ana Silva", "PERSON", 0), mention(TEXT, "Porto", "GPE", 1),
      mention(TEXT, "Lisbon", "GPE", 2)]
P2 = [mention(OTHER, "Rio Ferdinand", "PERSON", 0), mention(OTHER, "Leeds", "ORG", 1)]
Q1 = query("p1-b", "p1", "@placeholder plans a second cafe.", [P1[0]])
Q2 = query("p1-a", "p1", "@placeholder is in Portugal.", [P1[1]])
Q3 = query("p2-a", "p2", "@placeholder paid a record fee.", [P2[1]])


def hand_run(root: Path) -> Path:
    """A finished generate run written by hand: p1 (train, 2 queries), p2 (validation, 1 query),
    p3 (test, no query: left out of the release)."""
    write_rows([passage("p1", TEXT, "train", P1), passage("p2", OTHER, "validation", P2),
                passage("p3", OTHER, "test", P2)], "record", "passages", root / "passages")
    write_rows([Q1, Q2, Q3], "record", "queries", root / "queries")
    write_rows([], "record", "rejects", root / "rejects")
    write_json(str(root / "summary.json"), {"stages": {"read": {"in": 3, "kept": 3, "rejected": {},
                                                                "balanced": True}}})
    return root


def rows(path: Path) -> list[dict]:
    return [r for f in sorted(path.parent.glob(path.name)) for r in pq.read_table(f).to_pylist()]


def sized_out(header: dict) -> dict:
    """The header with the byte counts (which depend on the pyarrow version) left out."""
    header = json.loads(json.dumps(header))
    for info in header["dataset_info"]:
        info.pop("download_size"), info.pop("dataset_size")
        for split in info["splits"]:
            split.pop("num_bytes")
    return header


def test_release_of_a_generate_run(tmp_path):
    release = tmp_path / "release"
    assert main(["record", "release", str(hand_run(tmp_path / "run")), "--output", str(release)]) == 0
    official = rows(release / "passages" / "train-*.parquet")
    assert official == [{"id": "p1", "source": "CNN", "passage": {
        "text": TEXT, "entities": [{"start": 0, "end": 8}, {"start": 27, "end": 31}, {"start": 54, "end": 59}]},
        "qas": [{"id": "p1-a", "query": "@placeholder is in Portugal.",
                 "answers": [{"start": 27, "end": 31, "text": "Porto"}]},
                {"id": "p1-b", "query": "@placeholder plans a second cafe.",
                 "answers": [{"start": 0, "end": 8, "text": "Ana Silva"}]}]}]
    assert [r["id"] for r in rows(release / "passages" / "validation-*.parquet")] == ["p2"]
    assert not list((release / "passages").glob("test-*"))         # p3 has no query
    flat = rows(release / "queries" / "validation-*.parquet")
    assert flat == [{"id": "p2-a", "passage_id": "p2", "source": "CNN", "passage": OTHER,
                     "query": "@placeholder paid a record fee.",
                     "entities": [{"start": 0, "end": 12, "text": "Rio Ferdinand"},
                                  {"start": 21, "end": 25, "text": "Leeds"}],
                     "answers": [{"start": 21, "end": 25, "text": "Leeds"}]}]
    header = read_card_header(release / CARD)
    assert header_problems(header) == []
    check_with_datasets(header)
    assert sized_out(header) == yaml.safe_load(GOLDEN.read_text(encoding="utf-8"))
    card = (release / CARD).read_text(encoding="utf-8")
    for section in ("## How it was built", "## Statistics", "## Reject funnel", "## Limitations",
                    "## Citation", "zhang2018record", "recorded no provenance"):
        assert section in card
    assert "unique passages" in card and "100730" in card        # Table 1 beside the paper's


def test_release_of_a_validated_run_uses_its_splits(tmp_path):
    run = tmp_path / "run"
    hand_run(run)
    extra = {"fold": 0, "reader": "lexical", "reader_answer": "", "reader_correct": False,
             "correct_answers": 2, "judgements": 3}
    for split, items in (("train", [Q1]), ("dev", [Q2, Q3]), ("test", [])):
        write_rows([{**q, **extra, "split": split} for q in items], "record", "validated_queries", run / split)
    release = tmp_path / "release"
    assert main(["record", "release", str(run), "--output", str(release)]) == 0
    assert [r["id"] for r in rows(release / "queries" / "validation-*.parquet")] == ["p1-a", "p2-a"]
    assert [r["id"] for r in rows(release / "passages" / "validation-*.parquet")] == ["p1", "p2"]
    assert rows(release / "queries" / "test-*.parquet") == []


def test_load_dataset_passages_and_queries(tmp_path):
    release = tmp_path / "release"
    assert main(["record", "release", str(hand_run(tmp_path / "run")), "--output", str(release)]) == 0
    passages, queries = hf_datasets("""
from datasets import load_dataset
passages, queries = load_dataset(release), load_dataset(release, "queries")
result = [{"splits": list(passages), "answers": passages["train"][0]["qas"][1]["answers"],
           "features": list(passages["train"].features)},
          {"num_rows": {s: queries[s].num_rows for s in queries}, "features": list(queries["train"].features)}]
""", release=str(release))
    assert passages["splits"] == ["train", "validation"]
    assert passages["answers"] == [{"start": 0, "end": 8, "text": "Ana Silva"}]
    assert passages["features"] == ["id", "source", "passage", "qas"]
    assert queries["num_rows"] == {"train": 2, "validation": 1}
    assert queries["features"] == ["id", "passage_id", "source", "passage", "query", "entities", "answers"]


def test_reproduce_needs_recorded_provenance(tmp_path, capsys):
    release = tmp_path / "release"
    assert main(["record", "release", str(hand_run(tmp_path / "run")), "--output", str(release)]) == 0
    (release / "provenance.json").unlink()
    assert main(["record", "reproduce", str(release), "--output", str(tmp_path / "new")]) == 2
    assert "no provenance.json" in capsys.readouterr().err


@pytest.mark.slow   # two generate runs of the sample corpus (spaCy)
def test_reproduce_a_release_of_the_sample_corpus(tmp_path, record_generate_run, capsys, monkeypatch):
    release = tmp_path / "release"
    assert main(["record", "release", str(record_generate_run), "--output", str(release)]) == 0
    provenance = json.loads((release / "provenance.json").read_text(encoding="utf-8"))
    assert [s["command"] for s in provenance["steps"]] == ["record generate", "record release"]
    generate = provenance["steps"][0]
    assert generate["spec"]["dataset"] == "record" and len(generate["inputs"]) == 15
    assert all(len(i["sha256"]) == 64 for i in generate["inputs"])
    assert provenance["steps"][1]["upstreams"] == {"run_dir": 0}
    assert "spacy" in generate["versions"] and "csdata" in generate["versions"]
    shard = next((record_generate_run / "queries").glob("*.parquet"))
    assert pq.read_schema(shard).metadata[b"csdata.spec_sha256"].decode() == generate["spec_sha256"]
    capsys.readouterr()

    assert main(["-q", "record", "reproduce", str(release), "--output", str(tmp_path / "new")]) == 0
    out = capsys.readouterr().out
    assert "queries/train                identical" in out and out.rstrip().endswith("identical")
    assert json.loads((tmp_path / "new" / "reproduce.json").read_text())["identical"] is True

    # A changed row in the release: the rerun reports the table and exits 1.
    changed = tmp_path / "changed"
    shutil.copytree(release, changed)
    path = next((changed / "queries").glob("train-*.parquet"))
    table = pq.read_table(path)
    first = table.to_pylist()
    first[0]["query"] = "@placeholder was changed."
    import pyarrow as pa

    pq.write_table(pa.Table.from_pylist(first, schema=table.schema), path)
    assert main(["-q", "record", "reproduce", str(changed), "--output", str(tmp_path / "new2")]) == 1
    out = capsys.readouterr().out
    assert "queries/train                differs: " in out and "passages/train               identical" in out
    assert "differ: queries/train" in out

    # A recorded input whose bytes changed: refused before anything runs.
    provenance["steps"][0]["inputs"][0]["sha256"] = "0" * 64
    (changed / "provenance.json").write_text(json.dumps(provenance), encoding="utf-8")
    assert main(["record", "reproduce", str(changed), "--output", str(tmp_path / "new3")]) == 2
    assert "recorded inputs changed" in capsys.readouterr().err
    assert not (tmp_path / "new3").exists()
