"""Export a `csdata record generate` run to the published ReCoRD formats.

Two layouts are supported, both with inclusive entity/answer `end` offsets as stored in Parquet:

* `record-json`: the official ReCoRD JSON v1.0 file (`json.dumps(..., indent=4)`, ASCII-escaped,
  no trailing newline), passages in passage_id order, queries in query_id order;
* `superglue-jsonl`: the SuperGLUE JSONL layout, one passage per line with integer `idx`
  (passages numbered from 0 in passage_id order, queries numbered globally from 0 in
  (passage_id, query_id) order).

`release_rows` gives the same passages and queries per Hugging Face split for `csdata record
release` (`transforms.record.release`). Passages without queries are omitted from all three. Queries are grouped by passage once in a dict,
which is fine for ReCoRD's size; the JSON itself is written passage by passage.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Iterator, TextIO, Union

from transforms.core.io.tables import read_table

PathLike = Union[str, Path]


_PASSAGE_COLUMNS = ["passage_id", "source", "text", "entities"]


_QUERY_COLUMNS = ["query_id", "passage_id", "query", "answers"]


def _passages_with_queries(output_dir: PathLike) -> Iterator[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """Yield (passage, its queries sorted by query_id) in passage_id order, skipping query-less ones."""
    by_passage: dict[str, list[dict[str, Any]]] = {}
    for query in read_table(output_dir, "queries", _QUERY_COLUMNS).to_pylist():
        by_passage.setdefault(query["passage_id"], []).append(query)
    passages = read_table(output_dir, "passages", _PASSAGE_COLUMNS).to_pylist()
    passages.sort(key=lambda p: p["passage_id"])
    for passage in passages:
        queries = by_passage.get(passage["passage_id"])
        if queries:
            yield passage, sorted(queries, key=lambda q: q["query_id"])


def _passage_json(passage: dict[str, Any]) -> dict[str, Any]:
    return {
        "text": passage["text"],
        "entities": [{"start": e["start"], "end": e["end"]} for e in passage["entities"] or []],
    }


def _answers_json(query: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"start": a["start"], "end": a["end"], "text": a["text"]} for a in query["answers"] or []]


def export_record_json(output_dir: PathLike, out: TextIO) -> None:
    """Write the run as official ReCoRD JSON v1.0 (byte layout of `json.dumps(doc, indent=4)`)."""
    out.write('{\n    "version": "1.0",\n    "data": [')
    first = True
    for passage, queries in _passages_with_queries(output_dir):
        item = {
            "id": passage["passage_id"],
            "source": passage["source"],
            "passage": _passage_json(passage),
            "qas": [{"id": q["query_id"], "query": q["query"], "answers": _answers_json(q)} for q in queries],
        }
        # json.dumps escapes newlines inside strings, so indenting every line is safe.
        body = "\n".join(" " * 8 + line for line in json.dumps(item, indent=4).split("\n"))
        out.write(("\n" if first else ",\n") + body)
        first = False
    out.write("]\n}" if first else "\n    ]\n}")


def export_superglue_jsonl(output_dir: PathLike, out: TextIO) -> None:
    """Write the run as SuperGLUE ReCoRD JSONL: one passage per line, with integer `idx` fields."""
    query_idx = 0
    for passage_idx, (passage, queries) in enumerate(_passages_with_queries(output_dir)):
        qas = []
        for query in queries:
            qas.append({"query": query["query"], "answers": _answers_json(query), "idx": query_idx})
            query_idx += 1
        line = {"source": passage["source"], "passage": _passage_json(passage), "qas": qas, "idx": passage_idx}
        out.write(json.dumps(line) + "\n")


EXPORTERS: dict[str, Callable[[PathLike, TextIO], None]] = {
    "record-json": export_record_json,
    "superglue-jsonl": export_superglue_jsonl,
}


# ---- the rows of `csdata record release` (`transforms.record.release`) ----------------------
# A run's split names -> the Hub's (`dev` is `validation` there); "" (no URL list) is train.
HF_SPLITS = {"train": "train", "dev": "validation", "validation": "validation", "test": "test", "": "train"}
VALIDATED_SPLITS = ("train", "dev", "test")


def release_queries_by_split(output_dir: PathLike) -> dict[str, list[dict[str, Any]]]:
    """A run's queries per Hub split: the validated train/dev/test tables of a `hits import` run,
    else the `queries` table split by each passage's URL-list split (none: all train)."""
    root = Path(output_dir)
    found: dict[str, list[dict[str, Any]]] = {}
    if any((root / s).is_dir() for s in VALIDATED_SPLITS):
        for split in VALIDATED_SPLITS:
            if (root / split).is_dir():
                found[HF_SPLITS[split]] = read_table(root, split, _QUERY_COLUMNS).to_pylist()
        return found
    passage_split = {p["passage_id"]: p["split"] or "" for p in
                     read_table(root, "passages", ["passage_id", "split"]).to_pylist()}
    for query in read_table(root, "queries", _QUERY_COLUMNS).to_pylist():
        split = HF_SPLITS.get(passage_split.get(query["passage_id"], ""), "train")
        found.setdefault(split, []).append(query)
    return found


def release_rows(output_dir: PathLike) -> tuple[dict[str, list[dict]], dict[str, list[dict]]]:
    """(passages config, queries config) rows per split: one row per passage with its queries in
    the official ReCoRD JSON shape, and one row per query with its passage; both in id order,
    passages without queries left out (as in the exports)."""
    passages = {p["passage_id"]: p for p in read_table(output_dir, "passages", _PASSAGE_COLUMNS).to_pylist()}
    by_passage_rows: dict[str, list[dict]] = {}
    by_query_rows: dict[str, list[dict]] = {}
    for split, queries in release_queries_by_split(output_dir).items():
        grouped: dict[str, list[dict[str, Any]]] = {}
        for query in queries:
            grouped.setdefault(query["passage_id"], []).append(query)
        rows, flat = [], []
        for passage_id in sorted(grouped):
            passage = passages[passage_id]
            qas = sorted(grouped[passage_id], key=lambda q: q["query_id"])
            rows.append({"id": passage_id, "source": passage["source"], "passage": _passage_json(passage),
                         "qas": [{"id": q["query_id"], "query": q["query"], "answers": _answers_json(q)}
                                 for q in qas]})
            entities = [{"start": e["start"], "end": e["end"], "text": e["text"]}
                        for e in passage["entities"] or []]
            flat += [{"id": q["query_id"], "passage_id": passage_id, "source": passage["source"],
                      "passage": passage["text"], "query": q["query"], "entities": entities,
                      "answers": _answers_json(q)} for q in qas]
        by_passage_rows[split], by_query_rows[split] = rows, flat
    return by_passage_rows, by_query_rows
