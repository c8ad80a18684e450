"""ProtoQA release (`csdata protoqa release`): the coverage filter, protoqa-data JSONL and the
dev / test split of the crowdsourced questions, and the same rows in the Hugging Face layout with
their dataset card (`hf_release`). Plain Python: there are ~150 of them. The step that writes a
release folder is `transforms.protoqa.steps.write_release_splits`.

The paper keeps a question when its top-k clusters cover MORE than `coverage.min_coverage`
percent of its answers; the denominator is read three ways (`READINGS`), and the spec picks one
(`coverage.invalid_in_denominator`). Dev and test are cut from the seeded sha1 order of the ids.
"""
from __future__ import annotations

import json
from typing import TYPE_CHECKING, Iterable, Sequence

from data_specs.models import CoverageSection, ReleaseSection
from filters.protoqa import coverage_problem
from transforms.core.hashing import seeded_order

if TYPE_CHECKING:
    from data_specs import ProtoqaSpec
    from transforms.core.reporting.release import Release

COVERAGE = "coverage"

SPLIT = "split"

RELEASE_STAGES = [COVERAGE, SPLIT]

READINGS = {
    "all_raw": "top-k counts / every raw answer (invalid included), in %",
    "valid_only": "top-k counts / clustered answers (num.answers), in %",
    "absolute": "top-k counts as a number of answers (the paper's 'of the 100 answers')",
}


def top_k_coverage(counts: Iterable[int], k: int, denominator: int) -> float:
    """Percentage of `denominator` answers covered by the `k` largest cluster counts."""
    top = sum(sorted(counts, reverse=True)[:k])
    return 100.0 * top / denominator if denominator else 0.0


def coverages(record: dict, top_k: int) -> dict[str, float]:
    """A record's top-k coverage under each reading of the paper's rule."""
    counts = [c["count"] for c in record["answers"]["clusters"].values()]
    raw_total = sum(record["answers"]["raw"].values())
    return {"all_raw": top_k_coverage(counts, top_k, raw_total),
            "valid_only": top_k_coverage(counts, top_k, record["num"]["answers"]),
            "absolute": float(sum(sorted(counts, reverse=True)[:top_k]))}


def spec_reading(coverage: CoverageSection) -> str:
    """The reading of `READINGS` the spec's `coverage` section asks for."""
    return "all_raw" if coverage.invalid_in_denominator else "valid_only"


def coverage_report(records: Sequence[dict], coverage: CoverageSection) -> dict:
    """Which questions each reading keeps (coverage MORE than min_coverage), and the spec's."""
    top_k, minimum = coverage.top_k, coverage.min_coverage
    rows: list[dict] = []
    kept: dict[str, list[str]] = {name: [] for name in READINGS}
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
            "spec_reading": spec_reading(coverage), "readings": READINGS,
            "kept": {name: {"count": len(ids), "ids": ids} for name, ids in kept.items()},
            "dropped": {name: [r["question_id"] for r in rows if r["question_id"] not in set(kept[name])]
                        for name in READINGS},
            "questions": rows}


def filter_coverage(records: Sequence[dict], coverage: CoverageSection) -> tuple[list[dict], list[dict]]:
    """(kept records, reject rows) of the coverage rule under the spec's reading."""
    reading = spec_reading(coverage)
    kept, rejects = [], []
    for record in records:
        value = coverages(record, coverage.top_k)[reading]
        reason = coverage_problem(value, coverage.min_coverage)
        if reason:
            rejects.append({"stage": COVERAGE, "reason": reason, "record_id": record["metadata"]["id"],
                            "detail": f"top-{coverage.top_k} coverage {value:.2f} ({reading})"})
        else:
            kept.append(record)
    return kept, rejects


def split_records(records: Sequence[dict], release: ReleaseSection, seed: int
                  ) -> dict[str, list[dict]]:
    """Dev / test by sha1(seed:id) order: the first share to dev, the next to test.

    With fewer questions than release.dev_size + test_size the dev share is
    round(n * dev / (dev+test)); with more, the remainder is `unsplit`. Within a split, records
    are in hash order.
    """
    dev_size, test_size = release.dev_size, release.test_size
    ordered = seeded_order(records, seed, key=lambda r: r["metadata"]["id"])
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
    """A local text file (a UTF-8 byte-order mark, as spreadsheet exports write, is dropped)."""
    with open(path, encoding="utf-8-sig") as handle:
        return handle.read()


def read_records(paths: Sequence[str]) -> list[dict]:
    """The protoqa-data records of JSONL files, in file and line order."""
    records = []
    for path in paths:
        for line in read_text(path).splitlines():
            if line.strip():
                records.append(json.loads(line))
    return records


# ---- the Hugging Face layout and card that `csdata protoqa release` writes too ---------------
CITATION = """@inproceedings{boratko2020protoqa,
  title     = {{ProtoQA}: A Question Answering Dataset for Prototypical Common-Sense Reasoning},
  author    = {Boratko, Michael and Li, Xiang and O'Gorman, Tim and Das, Rajarshi and Le, Dan and
               McCallum, Andrew},
  booktitle = {Proceedings of the 2020 Conference on Empirical Methods in Natural Language Processing (EMNLP)},
  pages     = {1122--1136},
  year      = {2020}
}"""
# The release's split -> the Hub's split name.
HF_SPLITS = {"dev": "validation", "test": "test", "unsplit": "unsplit"}


def hf_row(record: dict) -> dict:
    """A protoqa-data record as a row of schema `release`: the objects keyed by answer string
    (answers.raw) or cluster id (answers.clusters) become lists, in the record's order."""
    answers = record["answers"]
    return {
        "metadata": {"id": record["metadata"]["id"], "source": record["metadata"].get("source", "")},
        "question": {"original": record["question"].get("original", ""),
                     "normalized": record["question"].get("normalized", "")},
        "answers": {"raw": [{"answer": a, "count": c} for a, c in answers.get("raw", {}).items()],
                    "clusters": [{"id": k, "count": v["count"], "answers": list(v["answers"])}
                                 for k, v in answers.get("clusters", {}).items()]},
        "num": {"answers": record["num"]["answers"], "clusters": record["num"]["clusters"]},
    }


def release_rows(splits: dict[str, list[dict]]) -> dict[str, list[dict]]:
    """`split_records`' output as Hub splits of `hf_row` rows (an empty unsplit part left out)."""
    return {HF_SPLITS[name]: [hf_row(r) for r in records] for name, records in splits.items()
            if records or name != "unsplit"}


LIMITATIONS = """The answer clusters are the annotators' (the sheets' adjudicated column); the
clusters csdata proposes (exact match, WordNet, all-MiniLM-L6-v2 neighbours, MinHash) are
suggestions only and are not in this release. Questions are kept by the spec's coverage reading
(coverage.json lists what every reading keeps); dev and test are cut by sha1(seed:id)."""


def release_provenance(spec: ProtoqaSpec, inputs: Sequence[str], summary: dict) -> dict:
    """What the card says built the release: its one `protoqa release` step (inputs, spec,
    versions, stage tallies), in the shape of `provenance.json`."""
    from transforms.core.reporting.provenance import (
        describe_inputs,
        spec_data,
        spec_sha256,
        utc_now,
        versions,
    )

    data = spec_data(spec)
    return {"steps": [{"command": "protoqa release",
                       "argv": ["protoqa", "release", *[w for i in inputs for w in ("--input", i)]],
                       "inputs": describe_inputs(inputs), "spec": data, "spec_sha256": spec_sha256(data),
                       "versions": versions(), "finished": utc_now(), "stages": summary["stages"]}]}


def hf_release(spec: ProtoqaSpec, inputs: Sequence[str], splits: dict, built: str, statistics: str,
               funnel: str) -> Release:
    """A release (`splits`: `split_records`' output) as a Hugging Face `Release`: the rows of
    schema `release` and the card, whose "How it was built", "Statistics" and "Reject funnel"
    sections are `built`, `statistics` (the text `csdata stats` prints) and `funnel`."""
    from data_specs import load_schema
    from transforms.core.reporting.provenance import file_metadata, spec_data
    from transforms.core.reporting.release import Config, Release, code_block

    sections = [
        ("How it was built", built),
        ("Statistics", "Beside the paper's figures (`csdata stats RUN`):\n\n" + code_block(statistics)),
        ("Reject funnel", funnel),
        ("Limitations", " ".join(LIMITATIONS.split())),
        ("Provenance", "`provenance.json` records the inputs (path, size, sha256), the spec and the "
                       "versions; `csdata protoqa reproduce THIS_DIR --output NEW` reruns the release "
                       "from them and compares the rows."),
    ]
    return Release(
        pretty_name="ProtoQA (regenerated with csdata)",
        configs=[Config("default", load_schema("protoqa", "release"), release_rows(splits))],
        license="cc-by-4.0", task_categories=["question-answering"], task_ids=["open-domain-qa"],
        source_datasets=["original"],
        summary=("ProtoQA (Boratko et al. 2020): prototypical common-sense questions with the "
                 "crowd's answers grouped into clusters with counts, regenerated by csdata; rows "
                 "in the protoqa-data shape, with the objects keyed by answer or cluster id as lists."),
        sections=sections, citation=CITATION, file_metadata=file_metadata(spec_data(spec), inputs))
