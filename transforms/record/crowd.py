"""Stage 4 of ReCoRD (§3.4): the crowd validation round trip and the train/dev/test splits.

Plain Python over pyarrow tables (not Beam): quality control is a sequential process over the
submissions in the order workers made them, and the inputs are one crowd batch.

The HITs are exported by `transforms.record.hits_export`; the workers' results are read, judged
and quality-controlled by `transforms.record.hits_results`. Here (`import_results`):

* Blocked workers: every assignment of a blocked worker, before or after the block, is discarded
  and listed in `republish.csv`.
* Validation: a triple's `correct_answers` is the number of distinct unblocked workers whose
  answer is correct and `judgements` the number of distinct unblocked workers who answered it (a
  worker's repeated submissions of one triple count once: the first). Train triples need
  `splits.train_min_correct` correct answers and come only from passages whose `split` is
  `splits.train_from`; dev/test triples need `splits.eval_min_correct` and come from the other
  passages.
* Dev/test draw: eval passages are ordered by sha1(f"{seed}:{passage_id}") and taken whole, each
  going to whichever of dev/test holds fewer triples (dev on ties) while that split is under its
  target, so no passage is in both and the two sizes differ by at most one passage's triples.
  Targets are `splits.dev_size` / `splits.test_size`, scaled by `validated / reference_total`
  when that ratio is below 1 (validated = train-validated train-origin triples plus the eval
  pool), rounded half up, and at least 1 each when the eval pool is not empty.
* Accounting: every input triple ends in exactly one of train, dev, test or `rejects/` (stage
  `human_filter`) with a reason: `no_judgements`, `blocked_only`, `not_validated`,
  `not_train_origin_and_not_selected` or `passage_missing`. Rows of the run's `queries/` table
  with `reader_correct` true (dropped by the machine filter) are not triples of this stage; they
  are counted in the summary as `machine_filtered_excluded`.
"""
from __future__ import annotations

import csv
import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Sequence, Union

from data_specs.models import LimitsSection, RecordHitsSection, RecordSplitsSection
from transforms.core.accounting import stage_entry
from transforms.core.crowd.platforms import FORMATS, OWN_CSV, detect_results_format
from transforms.core.errors import UserError
from transforms.core.hashing import seeded_digest
from transforms.core.io.cells import csv_row
from transforms.core.io.tables import write_json, write_rows
from transforms.record import hits_pages
from transforms.record.hits_export import answer_texts, candidate_options, load_run, platform_rows
from transforms.record.hits_results import (
    READ_RESULTS,
    Submission,
    TripleKey,
    WorkerState,
    judge,
    read_results,
    results_stage,
    run_quality_control,
)

PathLike = Union[str, Path]

STAGE = "human_filter"
REPUBLISH_COLUMNS = ("assignment_id", "triple_id", "worker_id")
WORKER_COLUMNS = ("worker_id", "submissions", "correct", "accuracy", "blocked", "blocked_after")
SPLITS = ("train", "dev", "test")

NO_JUDGEMENTS = "no_judgements"
BLOCKED_ONLY = "blocked_only"
NOT_VALIDATED = "not_validated"
NOT_SELECTED = "not_train_origin_and_not_selected"
PASSAGE_MISSING = "passage_missing"


# --------------------------------------------------------------------------- validation and splits

@dataclass
class Tally:
    """A triple's judgements by unblocked workers, and whether blocked workers answered it."""

    workers: set[str] = field(default_factory=set)
    correct: set[str] = field(default_factory=set)
    blocked_submissions: int = 0


def tally_triples(submissions: Iterable[Submission], workers: Mapping[str, WorkerState]) -> dict[str, Tally]:
    """Per triple: distinct unblocked workers and those correct (each worker's first answer counts)."""
    tallies: dict[str, Tally] = {}
    for sub in submissions:
        tally = tallies.setdefault(sub.triple_id, Tally())
        if workers[sub.worker_id].blocked:
            tally.blocked_submissions += 1
        elif sub.worker_id not in tally.workers:
            tally.workers.add(sub.worker_id)
            if sub.correct:
                tally.correct.add(sub.worker_id)
    return tallies


def passage_hash(seed: int, passage_id: str) -> str:
    """The dev/test draw order of a passage: sha1 of f"{seed}:{passage_id}" (hex)."""
    return seeded_digest(seed, passage_id)


def eval_targets(validated: int, pool: int, splits: RecordSplitsSection) -> tuple[int, int]:
    """Dev and test sizes: the spec's, scaled by validated/reference_total when below 1, >= 1 each."""
    ratio = min(1.0, validated / splits.reference_total)
    floor = 1 if pool else 0
    dev = max(floor, math.floor(splits.dev_size * ratio + 0.5))
    test = max(floor, math.floor(splits.test_size * ratio + 0.5))
    return dev, test


def draw_eval(pool: Mapping[str, Sequence[dict]], seed: int, dev_target: int,
              test_target: int) -> tuple[list[dict], list[dict], list[dict]]:
    """Split eval passages (whole) between dev and test in hash order; return dev, test, not selected."""
    chosen: dict[str, list[dict]] = {"dev": [], "test": []}
    target = {"dev": dev_target, "test": test_target}
    rest: list[dict] = []
    for passage_id in sorted(pool, key=lambda p: (passage_hash(seed, p), p)):
        open_splits = [s for s in ("dev", "test") if len(chosen[s]) < target[s]]
        if not open_splits:
            rest.extend(pool[passage_id])
            continue
        split = min(open_splits, key=lambda s: len(chosen[s]))  # dev first on ties
        chosen[split].extend(pool[passage_id])
    return chosen["dev"], chosen["test"], rest


@dataclass
class Outcome:
    """Where every triple went: split rows, rejects and the size targets."""

    splits: dict[str, list[dict]] = field(default_factory=lambda: {s: [] for s in SPLITS})
    rejects: list[dict] = field(default_factory=list)
    targets: dict[str, Any] = field(default_factory=dict)


def _reject(query: Mapping[str, Any], reason: str, detail: str) -> dict[str, str]:
    return {"stage": STAGE, "reason": reason, "record_id": query["query_id"], "detail": detail}


def _validated_row(query: Mapping[str, Any], tally: Tally) -> dict[str, Any]:
    return {**query, "correct_answers": len(tally.correct), "judgements": len(tally.workers)}


def _screen(query: dict, passage: Optional[Mapping[str, Any]], tally: Optional[Tally],
            splits: RecordSplitsSection) -> tuple[str, Union[dict, str]]:
    """`("train" | "eval", row)` for a validated triple, else `("reject", reason + detail)`."""
    if passage is None:
        return "reject", _reject(query, PASSAGE_MISSING, query["passage_id"])
    if tally is None:
        return "reject", _reject(query, NO_JUDGEMENTS, "")
    if not tally.workers:
        return "reject", _reject(query, BLOCKED_ONLY, f"{tally.blocked_submissions} blocked submissions")
    train_origin = passage["split"] == splits.train_from
    need = splits.train_min_correct if train_origin else splits.eval_min_correct
    if len(tally.correct) < need:
        role = "train" if train_origin else "dev/test"
        detail = f"{len(tally.correct)} correct of {len(tally.workers)} < {need} needed for {role}"
        return "reject", _reject(query, NOT_VALIDATED, detail)
    return ("train" if train_origin else "eval"), _validated_row(query, tally)


def assign_splits(triples: Sequence[dict], passages: Mapping[str, dict], tallies: Mapping[str, Tally],
                  splits: RecordSplitsSection, seed: int) -> Outcome:
    """Validate every triple and place it in train, dev, test or the rejects (the dev/test
    draw ordered by `seed`)."""
    outcome = Outcome()
    pool: dict[str, list[dict]] = {}
    for query in triples:
        passage, tally = passages.get(query["passage_id"]), tallies.get(query["query_id"])
        kind, value = _screen(query, passage, tally, splits)
        if kind == "reject":
            outcome.rejects.append(value)
        elif kind == "train":
            outcome.splits["train"].append({**value, "split": "train"})
        else:
            pool.setdefault(query["passage_id"], []).append(value)
    pool_size = sum(len(rows) for rows in pool.values())
    validated = len(outcome.splits["train"]) + pool_size
    dev_target, test_target = eval_targets(validated, pool_size, splits)
    dev, test, rest = draw_eval(pool, seed, dev_target, test_target)
    outcome.splits["dev"] = [{**row, "split": "dev"} for row in dev]
    outcome.splits["test"] = [{**row, "split": "test"} for row in test]
    outcome.rejects.extend(_reject(row, NOT_SELECTED, f"{row['correct_answers']} correct; dev/test full")
                           for row in rest)
    outcome.targets = {"validated": validated, "eval_pool": pool_size,
                       "dev_target": dev_target, "test_target": test_target}
    return outcome


# --------------------------------------------------------------------------- outputs

def _write_csv(path: Path, header: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(csv_row(row) for row in rows)


def _worker_rows(workers: Mapping[str, WorkerState]) -> Iterable[list[Any]]:
    for worker_id, s in workers.items():
        blocked_after = "" if s.blocked_after is None else s.blocked_after
        accuracy = f"{s.accuracy:.4f}"
        yield [worker_id, s.submissions, s.correct, accuracy, str(s.blocked).lower(), blocked_after]


def _write_outputs(out: Path, passages: Mapping[str, dict], outcome: Outcome,
                   submissions: Sequence[Submission], workers: Mapping[str, WorkerState],
                   file_metadata: Optional[Mapping[str, str]] = None, read_rejects: Sequence[dict] = ()) -> None:
    key = lambda r: (r["passage_id"], r["query_id"])  # noqa: E731
    for split in SPLITS:
        write_rows(sorted(outcome.splits[split], key=key), "record", "validated_queries", out / split,
                   file_metadata=file_metadata)
    used = sorted({r["passage_id"] for rows in outcome.splits.values() for r in rows})
    write_rows([passages[p] for p in used], "record", "passages", out / "passages", file_metadata=file_metadata)
    write_rows([*read_rejects, *sorted(outcome.rejects, key=lambda r: r["record_id"])], "record", "rejects", out / "rejects",
               file_metadata=file_metadata)
    discarded = (s for s in submissions if workers[s.worker_id].blocked)
    _write_csv(out / "republish.csv", REPUBLISH_COLUMNS,
               ([s.assignment_id, s.triple_id, s.worker_id] for s in discarded))
    _write_csv(out / "workers.csv", WORKER_COLUMNS, _worker_rows(workers))


def build_summary(inputs: int, excluded: int, outcome: Outcome, submissions: Sequence[Submission],
                  unknown: int, workers: Mapping[str, WorkerState], checkpoints: int) -> dict[str, Any]:
    """Counts per split, rejects by reason, workers blocked and the in = kept + rejected check.

    `stages` has the layout of `csdata record generate`'s summary, so
    `transforms.core.accounting.format_summary` prints it and `balanced` flags lost triples.
    """
    kept = {s: len(rows) for s, rows in outcome.splits.items()}
    blocked = [w for w, s in workers.items() if s.blocked]
    stage = stage_entry(inputs, sum(kept.values()), Counter(r["reason"] for r in outcome.rejects))
    return {
        "stages": {STAGE: stage},
        "splits": {s: {"triples": kept[s], "passages": len({r["passage_id"] for r in outcome.splits[s]})}
                   for s in SPLITS},
        "machine_filtered_excluded": excluded,
        "targets": outcome.targets,
        "submissions": {
            "read": len(submissions) + unknown,
            "judged": len(submissions),
            "unknown_triple": unknown,
            "discarded_blocked": sum(1 for s in submissions if workers[s.worker_id].blocked),
            "qc_checkpoints": checkpoints,
        },
        "workers": {"total": len(workers), "blocked": len(blocked), "blocked_ids": blocked},
    }


def import_results(run_dir: PathLike, results_path: PathLike, output_dir: PathLike,
                   hits: RecordHitsSection, splits: RecordSplitsSection, seed: int, limits: LimitsSection,
                   fmt: str = "auto", file_metadata: Optional[Mapping[str, str]] = None) -> dict[str, Any]:
    """Quality-control worker results, validate triples, draw the splits and write everything.

    `results_path` is the own results CSV, an MTurk batch results CSV or a Label Studio JSON
    export (`fmt` `csv`, `mturk`, `label-studio`, or `auto` to tell them apart). Writes `train/`,
    `dev/`, `test/` (schema `validated_queries`), `passages/`, `rejects/` Parquet,
    `republish.csv`, `workers.csv` and `summary.json` under `output_dir`, and returns the
    summary. In the own CSV, submissions naming a triple not in the run are counted
    (`unknown_triple`) and otherwise ignored; platform results from another export are one
    `UserError`. `file_metadata` (`transforms.core.reporting.provenance.file_metadata`) goes into every
    Parquet file written.
    """
    passages, triples, excluded = load_run(run_dir)
    keys = {}
    for q in triples:
        passage = passages.get(q["passage_id"])
        options = tuple(o.text for o in candidate_options(passage["entities"])) if passage else ()
        keys[q["query_id"]] = TripleKey(options, tuple(answer_texts(q)))
    if fmt == "auto":
        fmt = detect_results_format(results_path)
    if fmt == OWN_CSV:
        rows, skipped = read_results(results_path, limits)
    elif fmt in FORMATS:
        shown = [(passages[q["passage_id"]], q) for q in triples if q["passage_id"] in passages]
        mturk_rows, ls_rows = platform_rows(shown, hits.placeholder_display)
        rows, skipped = hits_pages.result_rows(results_path, fmt, mturk_rows, ls_rows, limits)
    else:
        raise UserError(f"unknown results format {fmt!r}: choose one of auto, {', '.join(FORMATS)}")
    submissions, unknown = judge(rows, keys)
    workers, checkpoints = run_quality_control(submissions, hits.qc_every, hits.min_accuracy,
                                               hits.min_judged)
    outcome = assign_splits(triples, passages, tally_triples(submissions, workers), splits, seed)
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    read_stage, read_rejects = results_stage(len(rows), skipped, results_path)
    _write_outputs(out, passages, outcome, submissions, workers, file_metadata, read_rejects)
    summary = build_summary(len(triples), excluded, outcome, submissions, unknown, workers, checkpoints)
    summary["stages"] = {READ_RESULTS: read_stage, **summary["stages"]}
    summary["results_format"] = fmt
    write_json(str(out / "summary.json"), summary)
    return summary
