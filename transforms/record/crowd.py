"""Stage 4 of ReCoRD (§3.4): the crowd validation round trip and the train/dev/test splits.

Plain Python over pyarrow tables (not Beam): quality control is a sequential process over the
submissions in the order workers made them, and the inputs are one crowd batch.

**Export** (`export_hits`): one CSV row per triple (query) of a `csdata record filter` run, in
(passage_id, query_id) order. Candidates are the passage's entity mentions merged by normalised
text (`normalize_answer`), numbered from 1 in order of first mention; every mention is shown in
the passage as `[n: mention]`, the same `n` for every mention of a candidate (a mention that
overlaps an earlier one, or whose normalised text is empty, is left unmarked). The query shows
`@placeholder` as `hits.placeholder_display`. Columns starting with `hidden_` hold the references
and must not be shown to workers.

**Platforms**: `--format mturk` / `label-studio` write the task page and batch of
`transforms.record.hits_pages` instead, and the import reads their results files.

**Import** (`import_results`): worker submissions (`worker_id, assignment_id, triple_id,
chosen_entity, feedback`, optional `submit_time`) are read in file order, or stably sorted by
`submit_time` when that column is present (numbers, then ISO 8601 times, then plain strings).
`chosen_entity` is an option number (an integer 1..number of options) or an option's text; it is
correct when it matches a reference answer (`is_correct`: normalised exact match).

* Quality control: after every `hits.qc_every` submissions, and once at the end, each worker's
  accuracy over all their submissions so far is recomputed; a worker with at least
  `hits.min_judged` submissions and accuracy below `hits.min_accuracy` is blocked for good
  (`blocked_after` = submissions processed at that checkpoint). Every assignment of a blocked
  worker, before or after the block, is discarded and listed in `republish.csv`.
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
import json
import logging
import math
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Sequence, Union

from data_specs.models import LimitsSection, RecordHitsSection, RecordSplitsSection
from transforms.core.accounting import Reject, stage_entry
from transforms.core.cells import csv_row, escaped_dict
from transforms.core.errors import UserError
from transforms.core.hashing import seeded_digest
from transforms.core.io import read_table, write_json, write_rows
from transforms.core.platforms import FORMATS, OWN_CSV, detect_results_format, fill_template
from transforms.core.untrusted import Skipped, read_csv_rows
from transforms.record import hits_pages
from transforms.record.metric import is_correct, normalize_answer
from transforms.record.readers.base import merge_candidates

PathLike = Union[str, Path]

STAGE = "human_filter"
READ_RESULTS = "read_results"    # the results file's rows (or annotations), before QC
PLACEHOLDER = "@placeholder"
HIDDEN_PREFIX = "hidden_"
HIT_COLUMNS = ("triple_id", "passage_id", "passage", "query", "options",
               HIDDEN_PREFIX + "reference_numbers", HIDDEN_PREFIX + "reference_texts")
RESULT_COLUMNS = ("worker_id", "assignment_id", "triple_id", "chosen_entity", "feedback")
REPUBLISH_COLUMNS = ("assignment_id", "triple_id", "worker_id")
WORKER_COLUMNS = ("worker_id", "submissions", "correct", "accuracy", "blocked", "blocked_after")
SPLITS = ("train", "dev", "test")

NO_JUDGEMENTS = "no_judgements"
BLOCKED_ONLY = "blocked_only"
NOT_VALIDATED = "not_validated"
NOT_SELECTED = "not_train_origin_and_not_selected"
PASSAGE_MISSING = "passage_missing"

log = logging.getLogger(__name__)


# --------------------------------------------------------------------------- candidates and HITs

@dataclass(frozen=True)
class Option:
    """A numbered candidate answer: the first mention's text of one normalised entity string."""

    number: int
    text: str
    key: str  # normalize_answer(text)


def candidate_options(entities: Iterable[Mapping[str, Any]]) -> list[Option]:
    """The passage's candidates (as the readers see them), numbered from 1 by first mention."""
    merged = merge_candidates((e["start"], e["end"], e["text"], e["label"]) for e in entities or [])
    return [Option(i + 1, c.text, normalize_answer(c.text)) for i, c in enumerate(merged)]


def mark_passage(text: str, entities: Iterable[Mapping[str, Any]], options: Sequence[Option]) -> str:
    """The passage with every candidate mention shown as `[n: mention]` (`end` inclusive)."""
    number = {opt.key: opt.number for opt in options}
    pieces: list[str] = []
    cursor = 0
    for start, stop, n in hits_pages.candidate_mentions(entities, number):
        pieces.append(text[cursor:start])
        pieces.append(f"[{n}: {text[start:stop]}]")
        cursor = stop
    pieces.append(text[cursor:])
    return "".join(pieces)


def answer_texts(query: Mapping[str, Any]) -> list[str]:
    """The distinct reference answer texts of a query, in order."""
    return list(dict.fromkeys(a["text"] for a in query.get("answers") or []))


def reference_numbers(options: Sequence[Option], answers: Sequence[str]) -> list[int]:
    """Numbers of the options that are a correct answer (normalised exact match)."""
    return [opt.number for opt in options if is_correct(opt.text, answers)]


def hit_row(passage: Mapping[str, Any], query: Mapping[str, Any], display: str) -> dict[str, str]:
    """One CSV row of the crowd task for a (passage, query) pair; `hidden_` columns are references."""
    options = candidate_options(passage["entities"])
    answers = answer_texts(query)
    return {
        "triple_id": query["query_id"],
        "passage_id": query["passage_id"],
        "passage": mark_passage(passage["text"], passage["entities"], options),
        "query": query["query"].replace(PLACEHOLDER, display),
        "options": json.dumps([{"number": o.number, "text": o.text} for o in options], ensure_ascii=False),
        HIDDEN_PREFIX + "reference_numbers": json.dumps(reference_numbers(options, answers)),
        HIDDEN_PREFIX + "reference_texts": json.dumps(answers, ensure_ascii=False),
    }


def _load_run(run_dir: PathLike) -> tuple[dict[str, dict], list[dict], int]:
    """Passages by id, the stage's triples in (passage_id, query_id) order, and machine-dropped rows."""
    passages = {p["passage_id"]: p for p in read_table(run_dir, "passages").to_pylist()}
    triples, excluded = [], 0
    for row in read_table(run_dir, "queries").to_pylist():
        if row.get("reader_correct") is True:
            excluded += 1
        else:
            triples.append(row)
    triples.sort(key=lambda q: (q["passage_id"], q["query_id"]))
    return passages, triples, excluded


def export_hits(run_dir: PathLike, out_path: PathLike, hits: RecordHitsSection, fmt: str = OWN_CSV) -> int:
    """Write the crowd task for every triple of a filter run; return the number of HITs.

    `fmt` `csv` (default): one CSV file (UTF-8, header row, `hidden_` reference columns);
    `mturk`: `template.html` and `batch.csv` under the directory `out_path`; `label-studio`:
    `config.xml` and `tasks.json` there (`transforms.record.hits_pages`). Triples whose passage is
    missing from `passages/` cannot be shown and are skipped with a warning (`import_results`
    rejects them as `passage_missing`).
    """
    if fmt not in FORMATS:
        raise UserError(f"unknown HIT format {fmt!r}: choose one of {', '.join(FORMATS)}")
    passages, triples, _ = _load_run(run_dir)
    display = hits.placeholder_display
    shown = []
    for query in triples:
        passage = passages.get(query["passage_id"])
        if passage is None:
            log.warning("triple %s: passage %s missing, no HIT", query["query_id"], query["passage_id"])
            continue
        shown.append((passage, query))
    if fmt != OWN_CSV:
        mturk_rows, ls_rows = platform_rows(shown, display)
        hits_pages.write_export(out_path, fmt, display, list(mturk_rows.values()), list(ls_rows.values()))
        return len(shown)
    out = Path(out_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(HIT_COLUMNS))
        writer.writeheader()
        for passage, query in shown:
            writer.writerow(escaped_dict(hit_row(passage, query, display)))
    return len(shown)


def platform_rows(shown: Iterable[tuple[Mapping[str, Any], Mapping[str, Any]]],
                  display: str) -> tuple[dict[str, dict[str, str]], dict[str, dict[str, Any]]]:
    """The MTurk batch rows and Label Studio task data of (passage, query) pairs, by triple id."""
    mturk_rows: dict[str, dict[str, str]] = {}
    ls_rows: dict[str, dict[str, Any]] = {}
    for passage, query in shown:
        options = candidate_options(passage["entities"])
        numbers = {opt.key: opt.number for opt in options}
        mturk_rows[query["query_id"]] = hits_pages.mturk_row(passage, query, numbers, display)
        ls_rows[query["query_id"]] = hits_pages.label_studio_data(passage, query, numbers,
                                                                  [o.text for o in options], display)
    return mturk_rows, ls_rows


def preview_page(run_dir: PathLike, hits: RecordHitsSection, triple_id: Optional[str] = None) -> str:
    """The MTurk page filled with one triple's batch row (the first in export order by default)."""
    passages, triples, _ = _load_run(run_dir)
    shown = [(passages[q["passage_id"]], q) for q in triples if q["passage_id"] in passages
             and (triple_id is None or q["query_id"] == triple_id)]
    if not shown:
        raise UserError(f"{run_dir}: no triple {triple_id!r} to preview" if triple_id
                        else f"{run_dir}: the run has no triple to preview")
    mturk_rows, _ = platform_rows(shown[:1], hits.placeholder_display)
    return fill_template(hits_pages.template(hits.placeholder_display), next(iter(mturk_rows.values())))


# --------------------------------------------------------------------------- submissions and QC

@dataclass(frozen=True)
class Submission:
    """One worker answer, judged against the triple's references."""

    worker_id: str
    assignment_id: str
    triple_id: str
    chosen: str      # the chosen option's text (or the raw answer when it names no option)
    correct: bool


@dataclass
class WorkerState:
    """A worker's running tally and, once blocked, the checkpoint that blocked them."""

    submissions: int = 0
    correct: int = 0
    blocked_after: Optional[int] = None

    @property
    def accuracy(self) -> float:
        return self.correct / self.submissions if self.submissions else 0.0

    @property
    def blocked(self) -> bool:
        return self.blocked_after is not None


@dataclass(frozen=True)
class TripleKey:
    """What judging a triple needs: its option texts and its reference answers."""

    options: tuple[str, ...]
    answers: tuple[str, ...]


def resolve_choice(chosen: str, options: Sequence[str]) -> str:
    """The option text named by `chosen`: an integer 1..len(options) is a number, anything else a text."""
    value = (chosen or "").strip()
    if value.isdigit() and 1 <= int(value) <= len(options):
        return options[int(value) - 1]
    return value


def _time_key(values: Sequence[str]) -> list[Any]:
    """Sort keys for `submit_time` values: all numeric, else all ISO 8601, else the strings."""
    try:
        return [float(v) for v in values]
    except ValueError:
        pass
    try:
        return [datetime.fromisoformat(v.strip().replace("Z", "+00:00")).timestamp() for v in values]
    except ValueError:
        return list(values)


def read_results(results_csv_path: PathLike, limits: LimitsSection) -> tuple[list[dict[str, str]], list[Skipped]]:
    """Result rows in submission order (file order, or stably by `submit_time` when present),
    and the rows left out for `limits` or damage."""
    table = read_csv_rows(results_csv_path, limits)
    missing = [c for c in RESULT_COLUMNS if c not in table.header]
    if missing:
        raise UserError(f"{results_csv_path}: missing result columns {missing}")
    rows = [row for _, row in table.rows]
    if "submit_time" in table.header:
        keys = _time_key([r["submit_time"] for r in rows])
        order = sorted(range(len(rows)), key=lambda i: keys[i])
        rows = [rows[i] for i in order]
    return rows, table.skipped


def results_stage(read: int, skipped: Sequence[Skipped], source: PathLike) -> tuple[dict[str, Any], list[dict]]:
    """The summary entry of the `read_results` stage (unit: rows or annotations of the results
    file) and its rejects (record id `FILE:line N`, `FILE:task ID` or the assignment id)."""
    rejects = [Reject(READ_RESULTS, s.reason, s.record_id(source), s.detail).row() for s in skipped]
    return stage_entry(read + len(skipped), read, Counter(s.reason for s in skipped)), rejects


def judge(rows: Iterable[Mapping[str, str]], keys: Mapping[str, TripleKey]) -> tuple[list[Submission], int]:
    """Judge each result row against its triple; return the submissions and the unknown-triple count."""
    submissions, unknown = [], 0
    for row in rows:
        key = keys.get(row["triple_id"])
        if key is None:
            unknown += 1
            continue
        chosen = resolve_choice(row["chosen_entity"], key.options)
        submissions.append(Submission(row["worker_id"], row["assignment_id"], row["triple_id"],
                                      chosen, bool(chosen) and is_correct(chosen, key.answers)))
    return submissions, unknown


def _checkpoint(workers: Mapping[str, WorkerState], done: int, min_accuracy: float, min_judged: int) -> None:
    for state in workers.values():
        if not state.blocked and state.submissions >= min_judged and state.accuracy < min_accuracy:
            state.blocked_after = done


def run_quality_control(submissions: Sequence[Submission], qc_every: int, min_accuracy: float,
                        min_judged: int) -> tuple[dict[str, WorkerState], int]:
    """Replay submissions in order, checking workers every `qc_every` and at the end.

    Returns each worker's final state (sorted by worker id) and the number of checkpoints run.
    """
    if qc_every < 1:
        raise ValueError(f"hits.qc_every must be >= 1, got {qc_every}")
    workers: dict[str, WorkerState] = {}
    checkpoints = 0
    for done, sub in enumerate(submissions, start=1):
        state = workers.setdefault(sub.worker_id, WorkerState())
        state.submissions += 1
        state.correct += int(sub.correct)
        if done % qc_every == 0:
            _checkpoint(workers, done, min_accuracy, min_judged)
            checkpoints += 1
    if len(submissions) % qc_every or not submissions:
        _checkpoint(workers, len(submissions), min_accuracy, min_judged)
        checkpoints += 1
    return dict(sorted(workers.items())), checkpoints


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
    `UserError`. `file_metadata` (`transforms.core.provenance.file_metadata`) goes into every
    Parquet file written.
    """
    passages, triples, excluded = _load_run(run_dir)
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
