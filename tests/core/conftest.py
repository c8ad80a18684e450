"""Fixtures of tests/core: small finished runs written by hand, one per dataset, for the tests
of `csdata report` and `stats` (test_report.py, test_report_reference.py); every figure the tests
expect of them is counted by hand from these rows."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from transforms.core.accounting import stage_entry
from transforms.core.io.tables import write_rows


def _entity(start, text, label, chain):
    return {"start": start, "end": start + len(text) - 1, "text": text, "label": label, "chain": chain}


def _summary(folder: Path, stages: dict, **extra) -> None:
    (folder / "summary.json").write_text(json.dumps({"stages": stages, **extra}), encoding="utf-8")


@pytest.fixture
def tiny_record_run(tmp_path) -> Path:
    """A finished ReCoRD run written by hand: two passages with queries and one without (it must
    not count), six rejects and a summary."""
    run = tmp_path / "record"
    passages = [
        {"passage_id": "p1", "text": "Anna met Bob in Paris.\n@highlight\nBob left",
         "entities": [_entity(0, "Anna", "PERSON", 0), _entity(9, "Bob", "PERSON", 1),
                      _entity(16, "Paris", "GPE", 2)]},
        {"passage_id": "p2", "text": "Carl saw Dana at the lake.\n@highlight\nDana swam",
         "entities": [_entity(0, "Carl", "PERSON", 0), _entity(9, "Dana", "PERSON", 1)]},
        {"passage_id": "p3", "text": "Eve ran.", "entities": [_entity(0, "Eve", "PERSON", 0)]},
    ]
    queries = [
        {"query_id": "p1-a-0", "passage_id": "p1", "query": "@placeholder met Bob .", "label": "PERSON",
         "answers": [{"start": 0, "end": 3, "text": "Anna"}]},
        {"query_id": "p1-b-16", "passage_id": "p1", "query": "Anna met Bob in @placeholder", "label": "GPE",
         "answers": [{"start": 16, "end": 20, "text": "Paris"}]},
        {"query_id": "p2-c-0", "passage_id": "p2", "query": "@placeholder swam in the lake", "label": "PERSON",
         "answers": [{"start": 9, "end": 12, "text": "Dana"}]},
    ]
    rejects = ([{"stage": "dedup_exact", "reason": "duplicate_id", "record_id": f"dup{i}",
                 "detail": "SECRET-DETAIL"} for i in (2, 1)]
               + [{"stage": "sentence_filter", "reason": "too_short", "record_id": f"p1#s{i}", "detail": "3 tokens"}
                  for i in range(4)])
    write_rows(passages, "record", "passages", run / "passages")
    write_rows(queries, "record", "queries", run / "queries")
    write_rows(rejects, "record", "rejects", run / "rejects")
    _summary(run, {"read": stage_entry(5, 5, {}), "dedup_exact": stage_entry(5, 3, {"duplicate_id": 2}),
                   "sentence_filter": stage_entry(7, 3, {"too_short": 4})})
    return run


@pytest.fixture
def tiny_cosmos_run(tmp_path) -> Path:
    """A Cosmos QA paragraphs run written by hand: two paragraphs (30 and 45 words), one reject."""
    run = tmp_path / "cosmos"
    words = lambda n, w: " ".join([w] * n)  # noqa: E731
    rows = [{"blog_id": "b1", "story_id": "b1/1", "paragraph_id": "b1/1#p000", "text": words(30, "sun"),
             "n_words": 30, "flags": []},
            {"blog_id": "b2", "story_id": "b2/1", "paragraph_id": "b2/1#p002", "text": words(44, "rain") + " .",
             "n_words": 45, "flags": []}]
    write_rows(rows, "cosmos", "paragraphs", run / "paragraphs")
    write_rows([{"stage": "read", "reason": "no_posts", "record_id": "f.xml", "detail": ""}], "cosmos", "rejects",
               run / "rejects")
    _summary(run, {"read": stage_entry(3, 2, {"no_posts": 1})})
    return run


def protoqa_record(qid: str, counts: list[int]) -> dict:
    """A ProtoQA release record of invented question `qid` whose clusters have these answer counts."""
    clusters = {f"{qid}.{i}": {"count": n, "answers": [f"answer {qid} {i}"]} for i, n in enumerate(counts)}
    return {"metadata": {"id": qid, "source": "invented"},
            "question": {"original": f"Name thing {qid}.", "normalized": f"name thing {qid}."},
            "answers": {"raw": {f"answer {qid} {i}": n for i, n in enumerate(counts)}, "clusters": clusters},
            "num": {"answers": sum(counts), "clusters": len(counts)}}


@pytest.fixture
def tiny_protoqa_release(tmp_path) -> Path:
    """A ProtoQA release written by hand: two questions (dev.jsonl), one coverage reject."""
    run = tmp_path / "release"
    run.mkdir()
    (run / "csdata-run.json").write_text(json.dumps({"dataset": "protoqa", "command": "protoqa release"}),
                                         encoding="utf-8")   # a finished run
    records = [protoqa_record("q1", [50, 30, 20]), protoqa_record("q2", [40, 30, 10, 5, 5, 4, 3, 2, 1])]
    (run / "dev.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    _summary(run, {"coverage": stage_entry(3, 2, {"low_coverage": 1})},
             rejects=[{"stage": "coverage", "reason": "low_coverage", "record_id": "q0", "detail": "80.0"}])
    return run
