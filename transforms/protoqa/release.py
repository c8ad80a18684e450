"""ProtoQA annotator round trip and release: sheets, BLANC agreement, adjudication, coverage,
protoqa-data JSONL and the dev/test split. Plain Python: the crowdsourced set is ~150 questions.

Sheet formats (CSV, header row required):

* annotator sheet (`sheets export` writes one per annotator):
  `question_id, question, answer, count, fixed_spelling, proposed_cluster, annotator_cluster`
* adjudication sheet (`sheets import` writes it): `question_id, question, answer, count,
  fixed_spelling, annotator_a, annotator_b, adjudicated`
* the evaluator's stub sheet (protoqa-evaluator's annotator_sheet_example):
  `question, answer, fixed_spelling, <annotator A>, <annotator B>, Combined`; the question is
  given on the first row of each block only, one row per response, and a trailing row of
  spreadsheet formulas (no answer) is ignored.

Labels in `sheets.invalid_labels` (`?`, `invalid`) mean "no cluster": such answers stay in
`raw` and out of every cluster, and are not mentions for BLANC.
"""
from __future__ import annotations

import hashlib
import json
from typing import Sequence

from filters.protoqa import coverage_problem, top_k_coverage

COVERAGE = "coverage"

SPLIT = "split"

RELEASE_STAGES = [COVERAGE, SPLIT]

READINGS = {
    "all_raw": "top-k counts / every raw answer (invalid included), in %",
    "valid_only": "top-k counts / clustered answers (num.answers), in %",
    "absolute": "top-k counts as a number of answers (the paper's 'of the 100 answers')",
}

def coverages(record: dict, top_k: int) -> dict[str, float]:
    """A record's top-k coverage under each reading of the paper's rule."""
    counts = [c["count"] for c in record["answers"]["clusters"].values()]
    raw_total = sum(record["answers"]["raw"].values())
    return {"all_raw": top_k_coverage(counts, top_k, raw_total),
            "valid_only": top_k_coverage(counts, top_k, record["num"]["answers"]),
            "absolute": float(sum(sorted(counts, reverse=True)[:top_k]))}

def spec_reading(spec: dict) -> str:
    return "all_raw" if spec["coverage"]["invalid_in_denominator"] else "valid_only"

def coverage_report(records: Sequence[dict], spec: dict) -> dict:
    """Which questions each reading keeps (coverage MORE than min_coverage), and the spec's."""
    top_k, minimum = int(spec["coverage"]["top_k"]), float(spec["coverage"]["min_coverage"])
    rows, kept = [], {name: [] for name in READINGS}
    for record in records:
        values = coverages(record, top_k)
        qid = record["metadata"]["id"]
        rows.append({"question_id": qid, "raw_answers": sum(record["answers"]["raw"].values()),
                     "clustered_answers": record["num"]["answers"],
                     "clusters": record["num"]["clusters"], **{k: round(v, 2) for k, v in values.items()}})
        for name, value in values.items():
            if coverage_problem(value, minimum) is None:
                kept[name].append(qid)
    return {"top_k": top_k, "min_coverage": minimum, "rule": "keep when coverage > min_coverage",
            "spec_reading": spec_reading(spec), "readings": READINGS,
            "kept": {name: {"count": len(ids), "ids": ids} for name, ids in kept.items()},
            "dropped": {name: [r["question_id"] for r in rows if r["question_id"] not in set(kept[name])]
                        for name in READINGS},
            "questions": rows}

def split_records(records: Sequence[dict], seed: int, dev_size: int, test_size: int
                  ) -> dict[str, list[dict]]:
    """Dev / test by sha1(seed:id) order: the first share to dev, the next to test.

    With fewer questions than dev_size + test_size the dev share is round(n * dev / (dev+test));
    with more, the remainder is `unsplit`. Within a split, records are in hash order.
    """
    ordered = sorted(records, key=lambda r: hashlib.sha1(
        f"{seed}:{r['metadata']['id']}".encode("utf-8")).hexdigest())
    n = len(ordered)
    if n <= dev_size + test_size:
        n_dev = round(n * dev_size / (dev_size + test_size)) if dev_size + test_size else 0
        n_test = n - n_dev
    else:
        n_dev, n_test = dev_size, test_size
    return {"dev": ordered[:n_dev], "test": ordered[n_dev:n_dev + n_test],
            "unsplit": ordered[n_dev + n_test:]}

def dumps_record(record: dict) -> str:
    """One JSONL line as protoqa-data writes it (json.dumps defaults: ASCII escapes, ', ' and ': ')."""
    return json.dumps(record)


def read_text(path: str) -> str:
    with open(path, encoding="utf-8-sig") as handle:
        return handle.read()

def read_records(paths: Sequence[str]) -> list[dict]:
    records = []
    for path in paths:
        for line in read_text(path).splitlines():
            if line.strip():
                records.append(json.loads(line))
    return records
