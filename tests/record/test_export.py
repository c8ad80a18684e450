"""Golden-file tests of the ReCoRD exporters on hand-written passages and queries."""
from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from data_specs import load_schema
from transforms.core.io.tables import read_table
from transforms.record.export import EXPORTERS, export_record_json, export_superglue_jsonl

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
# UPDATE_GOLDEN=1 pytest tests/record/test_export.py rewrites the golden files and fails ("golden
# updated"), so that a rewrite never passes as a comparison; read them by eye, then run it again.
UPDATE = os.environ.get("UPDATE_GOLDEN", "0") not in ("", "0")

SEP = "\n@highlight\n"
# Passage "aaa111" has an NBSP before "Reed"; "bbb222" has curly quotes around the shop's name.
TEXT_A = SEP.join([
    "Tom Reed scored twice as Leeds beat Hull 2-1 on Saturday.\u00a0Reed now has ten goals this season.",
    "Leeds climb to third after beating Hull",
])
TEXT_B = SEP.join([
    "Maria Lopez opened a bakery in Lyon. The shop, called \u201cLe Pain\u201d, drew crowds on its first day.",
    "Maria Lopez left a bank job for baking",
    "Lyon residents queued for hours",
])
TEXT_C = "A quiet day in Oslo." + SEP + "Nothing happened"


def span(text: str, mention: str, nth: int = 0) -> dict[str, Any]:
    """The nth occurrence of `mention` in `text`, with an inclusive end."""
    start = -1
    for _ in range(nth + 1):
        start = text.index(mention, start + 1)
    return {"start": start, "end": start + len(mention) - 1, "text": mention}


def entity(text: str, mention: str, nth: int, label: str, chain: int) -> dict[str, Any]:
    return {**span(text, mention, nth), "label": label, "chain": chain}


def passage(pid: str, source: str, text: str, entities: list[dict[str, Any]]) -> dict[str, Any]:
    body_end = text.find(SEP)
    return {
        "passage_id": pid, "source": source, "url": f"http://example.com/{pid}", "split": "train",
        "text": text, "body_end": body_end, "passage_paragraphs": 1, "rest_paragraphs": 2,
        "tokens": len(text[:body_end].split()), "entities": entities,
    }


def query(qid: str, pid: str, sentence: str, mention: str, label: str, chain: int,
          answers: list[dict[str, Any]]) -> dict[str, Any]:
    start = sentence.index(mention)
    return {
        "query_id": qid, "passage_id": pid,
        "query": sentence[:start] + "@placeholder" + sentence[start + len(mention):],
        "sentence": sentence, "sentence_index": 0, "placeholder_start": start, "mention": mention,
        "label": label, "chain": chain, "answers": answers, "filters_passed": ["ngram", "question"],
    }


PASSAGES = [
    passage("bbb222", "CNN", TEXT_B, [
        entity(TEXT_B, "Maria Lopez", 0, "PERSON", 0),
        entity(TEXT_B, "Lyon", 0, "GPE", 1),
        entity(TEXT_B, "Le Pain", 0, "ORG", 2),
        entity(TEXT_B, "Maria Lopez", 1, "PERSON", 0),
        entity(TEXT_B, "Lyon", 1, "GPE", 1),
    ]),
    passage("ccc333", "", TEXT_C, [entity(TEXT_C, "Oslo", 0, "GPE", 0)]),
    passage("aaa111", "Daily mail", TEXT_A, [
        entity(TEXT_A, "Tom Reed", 0, "PERSON", 0),
        entity(TEXT_A, "Leeds", 0, "ORG", 1),
        entity(TEXT_A, "Hull", 0, "ORG", 2),
        entity(TEXT_A, "Reed", 1, "PERSON", 0),
        entity(TEXT_A, "Leeds", 1, "ORG", 1),
        entity(TEXT_A, "Hull", 1, "ORG", 2),
    ]),
]
QUERIES = [
    query("bbb222-q1", "bbb222", "Customers said Le Pain sells the best croissants in town.",
          "Le Pain", "ORG", 2, [span(TEXT_B, "Le Pain")]),
    query("aaa111-q2", "aaa111", "Hull fans left early as Reed sealed the win.",
          "Reed", "PERSON", 0, [span(TEXT_A, "Tom Reed"), span(TEXT_A, "Reed", 1)]),
    query("aaa111-q1", "aaa111", "The Leeds manager praised the striker\u2019s finishing.",
          "Leeds", "ORG", 1, [span(TEXT_A, "Leeds"), span(TEXT_A, "Leeds", 1)]),
]


def write_run(root: Path, passages: list[dict[str, Any]], queries: list[dict[str, Any]]) -> Path:
    """Write passages (two shards, the later rows first) and queries (one shard) as Parquet."""
    layout = {"passages": [passages[-1:], passages[:-1]], "queries": [queries]}
    for table, shards in layout.items():
        folder = root / table
        folder.mkdir(parents=True)
        schema = load_schema("record", table)
        for i, rows in enumerate(shards):
            pq.write_table(pa.Table.from_pylist(rows, schema=schema), folder / f"part-{i:05d}.parquet")
    return root


@pytest.fixture
def golden_run(tmp_path: Path) -> Path:
    return write_run(tmp_path / "run", PASSAGES, QUERIES)


def export(name: str, output_dir: Path) -> bytes:
    buffer = io.StringIO()
    EXPORTERS[name](output_dir, buffer)
    return buffer.getvalue().encode("utf-8")


@pytest.mark.parametrize("name, golden", [
    ("record-json", "record_export.json"),
    ("superglue-jsonl", "superglue_export.jsonl"),
])
def test_export_matches_golden(golden_run: Path, name: str, golden: str) -> None:
    data = export(name, golden_run)
    if UPDATE:
        (GOLDEN / golden).write_bytes(data)
        pytest.fail(f"golden updated: {GOLDEN / golden} (read it by eye, then run without UPDATE_GOLDEN)",
                    pytrace=False)
    assert data == (GOLDEN / golden).read_bytes()


def test_record_json_is_valid_and_spans_match(golden_run: Path) -> None:
    raw = export("record-json", golden_run).decode("utf-8")
    doc = json.loads(raw)
    assert doc["version"] == "1.0"
    assert raw == json.dumps(doc, indent=4)  # the official file's layout
    assert [d["id"] for d in doc["data"]] == ["aaa111", "bbb222"]  # ccc333 has no queries
    assert [q["id"] for q in doc["data"][0]["qas"]] == ["aaa111-q1", "aaa111-q2"]
    for item in doc["data"]:
        text = item["passage"]["text"]
        for ent in item["passage"]["entities"]:
            assert list(ent) == ["start", "end"]
        for qa in item["qas"]:
            assert qa["answers"]
            for ans in qa["answers"]:
                assert text[ans["start"] : ans["end"] + 1] == ans["text"]


def test_superglue_idx_numbering(golden_run: Path) -> None:
    lines = [json.loads(line) for line in export("superglue-jsonl", golden_run).decode().splitlines()]
    assert [line["idx"] for line in lines] == [0, 1]
    assert [qa["idx"] for line in lines for qa in line["qas"]] == [0, 1, 2]
    assert list(lines[0]) == ["source", "passage", "qas", "idx"]
    assert list(lines[0]["qas"][0]) == ["query", "answers", "idx"]


def test_empty_record_json_matches_json_dumps(tmp_path: Path) -> None:
    root = write_run(tmp_path / "run", PASSAGES, [])
    buffer = io.StringIO()
    export_record_json(root, buffer)
    assert buffer.getvalue() == json.dumps({"version": "1.0", "data": []}, indent=4)
    buffer = io.StringIO()
    export_superglue_jsonl(root, buffer)
    assert buffer.getvalue() == ""


def test_read_table_concatenates_sorted_shards(golden_run: Path) -> None:
    assert read_table(golden_run, "passages").column("passage_id").to_pylist() == ["aaa111", "bbb222", "ccc333"]


def test_read_table_without_shards(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="passages"):
        read_table(tmp_path, "passages")
