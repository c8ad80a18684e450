"""Cosmos QA release export (the dataset as published with the paper, Huang et al. 2019).

`export_release` writes the splits of a `csdata cosmos hits import` run as the release files:
`train.csv` and `dev.csv` (`id, context, question, answer0..answer3, label`) and `test.jsonl`
(the same fields without `label`), rows in id order; NOTA answers are written as the release's
exact "None of the above choices ." string (`nota.text`).
"""
from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any, Iterable, Mapping, TextIO, Union

from transforms.core.io import read_table

PathLike = Union[str, Path]
RELEASE_COLUMNS = ("id", "context", "question", "answer0", "answer1", "answer2", "answer3", "label")


def write_release_csv(rows: Iterable[Mapping[str, Any]], handle: TextIO) -> None:
    writer = csv.writer(handle, lineterminator="\n")
    writer.writerow(RELEASE_COLUMNS)
    for r in rows:
        writer.writerow([r[c] for c in RELEASE_COLUMNS])


def write_release_jsonl(rows: Iterable[Mapping[str, Any]], handle: TextIO) -> None:
    for r in rows:
        handle.write(json.dumps({c: r[c] for c in RELEASE_COLUMNS if c != "label"}, ensure_ascii=False) + "\n")


def export_release(qa_dir: PathLike, out_dir: PathLike) -> dict[str, int]:
    """`train.csv`, `dev.csv` (with label) and `test.jsonl` (without) as in the Cosmos QA release."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    counts = {}
    for split, name, writer in (("train", "train.csv", write_release_csv), ("dev", "dev.csv", write_release_csv),
                                ("test", "test.jsonl", write_release_jsonl)):
        rows = sorted(read_table(qa_dir, split).to_pylist(), key=lambda r: r["id"])
        with (out / name).open("w", encoding="utf-8", newline="") as handle:
            writer(rows, handle)
        counts[name] = len(rows)
    return counts
