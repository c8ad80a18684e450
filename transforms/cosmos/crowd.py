"""Cosmos QA stages 2-3 (paper §2.2-2.4): the crowd round trip, "None of the above", splits.

Plain Python over pyarrow tables (one crowd batch is small and the rules are sequential).

**Question-writing task** (`export_question_hits`): one CSV row per paragraph of a `csdata cosmos
paragraphs` run: the paragraph, the instructions (the four question types; at most
`hits.max_questions` questions, each with 1..`hits.max_correct` correct and `hits.incorrect`
incorrect answers).

**Written question sets** (QUESTIONS.csv, one row per question): `assignment_id, worker_id,
paragraph_id, question_number, question, correct_1, correct_2, incorrect_1, incorrect_2,
incorrect_3` (blank answer cells are absent answers), optional `hit_id`, `question_type`. The set
id is `{assignment_id}#q{question_number}`.

**Validation results** (VALIDATIONS.csv, one row per worker and set): `set_id, worker_id,
paragraph_sensible, question_sensible, chosen_answer, needs_commonsense,
answerable_without_paragraph` (yes/no, true/false or 1/0), optional `assignment_id`.
`chosen_answer` is an answer's text or its number 1..k in the set's canonical order (correct
answers as written, then incorrect ones). Each worker's first row per set counts; the first
`hits.validators` workers of a set are used.

* A set is **valid** when it has `hits.validators` judgements, every one judged the paragraph
  sensible and the question sensible and related, and at least `hits.min_intended` workers chose
  a correct answer (`filters.cosmos.validation`).
* **Unanswerable** (§2.4): a valid set where at least one validator said it is answerable
  without the paragraph or needs no commonsense: its correct answer is replaced by the NOTA
  string (one instance: NOTA + the three incorrect answers).
* **False negatives** (§2.4): of the other valid sets, those with sha1(seed, "nota", set_id) <
  `nota.false_negative_rate` get their least challenging negative replaced by NOTA: the argmin
  over negatives of s(A|P,Q) + s(A|P) + s(A|Q) from the spec's `AnswerScorer`.
* **Instances**: one per correct answer (`q{n}_a{k}` as in the release ids): the correct answer
  and the three (possibly NOTA-replaced) negatives, in an order drawn by sha1(seed, id).
* **Splits**: paragraphs all of whose valid sets were written by `splits.excellent_workers` are
  drawn in sha1(seed, paragraph_id) order into dev or test (whichever is less full relative to
  its target) until both targets are met; everything else is train. Targets are
  `splits.dev_size` / `splits.test_size`, scaled by instances / `splits.reference_total` when that
  is below 1 (rounded half up, at least 1 when there are eligible paragraphs).
"""
from __future__ import annotations

import csv
import hashlib
import json
import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Sequence, TextIO, Union

from filters import cosmos as cosmos_filters
from transforms.core.hashing import unit_hash
from transforms.core.io import read_table, write_json, write_rows

PathLike = Union[str, Path]
QUESTION_STAGE = "question_sets"
VALIDATION_STAGE = "validation"
SPLITS = ("train", "dev", "test")
HIT_COLUMNS = ("paragraph_id", "blog_id", "paragraph", "instructions")
QUESTION_COLUMNS = ("assignment_id", "worker_id", "paragraph_id", "question_number", "question",
                    "correct_1", "correct_2", "incorrect_1", "incorrect_2", "incorrect_3")
VALIDATION_COLUMNS = ("set_id", "worker_id", "paragraph_sensible", "question_sensible",
                      "chosen_answer", "needs_commonsense", "answerable_without_paragraph")
RELEASE_COLUMNS = ("id", "context", "question", "answer0", "answer1", "answer2", "answer3", "label")
_YES = {"yes", "y", "true", "1"}
_NO = {"no", "n", "false", "0"}


# --------------------------------------------------------------------------- question-writing HITs

def instructions(spec: Mapping[str, Any]) -> str:
    hits = spec["hits"]
    types = ", ".join(hits["question_types"])
    return (f"Read the paragraph and write up to {hits['max_questions']} questions that need "
            f"commonsense reasoning to answer: about {types}. Do not ask what the paragraph states "
            f"word for word. For each question write 1 to {hits['max_correct']} correct answers and "
            f"{hits['incorrect']} incorrect answers that are plausible and about as long as the "
            f"correct ones.")


def export_question_hits(run_dir: PathLike, out_csv: PathLike, spec: Mapping[str, Any]) -> int:
    """Write the question-writing task CSV (one row per paragraph, paragraph_id order)."""
    rows = sorted(read_table(run_dir, "paragraphs", ["paragraph_id", "blog_id", "text"]).to_pylist(),
                  key=lambda r: r["paragraph_id"])
    text = instructions(spec)
    out = Path(out_csv)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(HIT_COLUMNS)
        for r in rows:
            writer.writerow([r["paragraph_id"], r["blog_id"], r["text"], text])
    return len(rows)


# --------------------------------------------------------------------------- reading results

@dataclass
class QuestionSet:
    set_id: str
    paragraph_id: str
    hit_id: str
    assignment_id: str
    worker_id: str
    question_number: int
    question_type: str
    question: str
    correct: list[str]
    incorrect: list[str]
    blog_id: str = ""
    judgements: list["Judgement"] = field(default_factory=list)

    @property
    def options(self) -> list[str]:
        return [*self.correct, *self.incorrect]


@dataclass(frozen=True)
class Judgement:
    worker_id: str
    paragraph_sensible: bool
    question_sensible: bool
    chosen: str               # the chosen answer's text as resolved
    intended: bool            # chosen is a correct answer
    needs_commonsense: bool
    answerable_without_paragraph: bool


def _read_csv(path: PathLike, required: Sequence[str]) -> list[dict[str, str]]:
    with Path(path).open(encoding="utf-8-sig", newline="") as handle:
        reader = csv.DictReader(handle)
        missing = [c for c in required if c not in (reader.fieldnames or [])]
        if missing:
            raise ValueError(f"{path}: missing columns {missing}")
        return [{k: (v or "").strip() for k, v in row.items() if k is not None} for row in reader]


def yes_no(value: str, column: str) -> bool:
    lowered = value.strip().lower()
    if lowered in _YES:
        return True
    if lowered in _NO:
        return False
    raise ValueError(f"{column}: expected yes/no, got {value!r}")


def _norm(text: str) -> str:
    return " ".join(text.lower().split()).rstrip(" .")


def resolve_answer(chosen: str, options: Sequence[str]) -> str:
    """The option named by `chosen` (a number 1..k, or its text up to case/spaces/final dot)."""
    value = chosen.strip()
    if value.isdigit() and 1 <= int(value) <= len(options):
        return options[int(value) - 1]
    for option in options:
        if _norm(option) == _norm(value):
            return option
    return value


def rejection(stage: str, reason: str, record_id: str, detail: str = "") -> dict[str, str]:
    return {"stage": stage, "reason": reason, "record_id": record_id, "detail": detail}


def read_question_sets(path: PathLike, paragraphs: Mapping[str, Mapping[str, Any]],
                       spec: Mapping[str, Any]) -> tuple[list[QuestionSet], list[dict], int]:
    """Well-formed sets, rejects (stage question_sets) and the number of question rows read."""
    hits = spec["hits"]
    rows = _read_csv(path, QUESTION_COLUMNS)
    sets: list[QuestionSet] = []
    rejects: list[dict] = []
    seen: set[str] = set()
    for row in rows:
        set_id = f"{row['assignment_id']}#q{row['question_number']}"
        correct = [row[c] for c in ("correct_1", "correct_2", "correct_3") if row.get(c)]
        incorrect = [row[c] for c in ("incorrect_1", "incorrect_2", "incorrect_3", "incorrect_4") if row.get(c)]
        if set_id in seen:
            rejects.append(rejection(QUESTION_STAGE, "duplicate_set", set_id))
            continue
        seen.add(set_id)
        paragraph = paragraphs.get(row["paragraph_id"])
        if paragraph is None:
            rejects.append(rejection(QUESTION_STAGE, "paragraph_missing", set_id, row["paragraph_id"]))
            continue
        if not row["question_number"].isdigit() or not 1 <= int(row["question_number"]) <= int(hits["max_questions"]):
            rejects.append(rejection(QUESTION_STAGE, "too_many_questions", set_id,
                                     f"question_number {row['question_number']!r}"))
            continue
        reason = cosmos_filters.question_set(row["question"], correct, incorrect,
                                             int(hits["max_correct"]), int(hits["incorrect"]))
        if reason:
            rejects.append(rejection(QUESTION_STAGE, reason, set_id))
            continue
        sets.append(QuestionSet(set_id, row["paragraph_id"], row.get("hit_id", ""), row["assignment_id"],
                                row["worker_id"], int(row["question_number"]), row.get("question_type", ""),
                                row["question"], correct, incorrect, paragraph["blog_id"]))
    return sets, rejects, len(rows)


def attach_judgements(sets: Sequence[QuestionSet], path: PathLike, spec: Mapping[str, Any]) -> dict[str, int]:
    """Add each worker's first judgement of a set (at most hits.validators); returns row counts."""
    by_id = {s.set_id: s for s in sets}
    limit = int(spec["hits"]["validators"])
    counts = Counter()
    for row in _read_csv(path, VALIDATION_COLUMNS):
        counts["read"] += 1
        qset = by_id.get(row["set_id"])
        if qset is None:
            counts["unknown_set"] += 1
            continue
        if any(j.worker_id == row["worker_id"] for j in qset.judgements):
            counts["repeated"] += 1
            continue
        if len(qset.judgements) >= limit:
            counts["beyond_limit"] += 1
            continue
        chosen = resolve_answer(row["chosen_answer"], qset.options)
        qset.judgements.append(Judgement(
            row["worker_id"], yes_no(row["paragraph_sensible"], "paragraph_sensible"),
            yes_no(row["question_sensible"], "question_sensible"), chosen, chosen in qset.correct,
            yes_no(row["needs_commonsense"], "needs_commonsense"),
            yes_no(row["answerable_without_paragraph"], "answerable_without_paragraph")))
        counts["used"] += 1
    return dict(counts)


def validate(qset: QuestionSet, spec: Mapping[str, Any]) -> Optional[str]:
    hits = spec["hits"]
    judgements = qset.judgements
    satisfied = all(j.paragraph_sensible and j.question_sensible for j in judgements)
    return cosmos_filters.validation(len(judgements), int(hits["validators"]),
                                     sum(j.intended for j in judgements), int(hits["min_intended"]),
                                     satisfied)


def unanswerable_votes(qset: QuestionSet) -> int:
    return sum(j.answerable_without_paragraph or not j.needs_commonsense for j in qset.judgements)


def is_unanswerable(qset: QuestionSet, min_intended: int) -> bool:
    """§2.4: >= min_intended workers chose a correct answer, and >= 1 said it is answerable
    without the paragraph or needs no commonsense."""
    return sum(j.intended for j in qset.judgements) >= min_intended and unanswerable_votes(qset) >= 1


def takes_false_negative(set_id: str, seed: Any, rate: float) -> bool:
    return unit_hash(seed, "nota", set_id) < rate


def weakest_negative(scores: Sequence[float]) -> int:
    """Index of the least challenging negative: the smallest summed score (first on ties)."""
    return min(range(len(scores)), key=lambda i: (scores[i], i))


# --------------------------------------------------------------------------- instances and splits

@dataclass
class Decided:
    qset: QuestionSet
    unanswerable: bool
    negatives: list[str]          # after any NOTA replacement
    replaced: str = ""            # the negative replaced by NOTA


def decide_nota(valid: Sequence[QuestionSet], paragraphs: Mapping[str, Mapping[str, Any]],
                spec: Mapping[str, Any], scorer=None) -> list[Decided]:
    """Apply both NOTA rules; `scorer` (an AnswerScorer) is built from the spec when needed."""
    nota, seed = spec["nota"]["text"], spec["seed"]
    rate = float(spec["nota"]["false_negative_rate"])
    min_intended = int(spec["hits"]["min_intended"])
    decided: list[Decided] = []
    pending: list[Decided] = []
    for qset in valid:
        if is_unanswerable(qset, min_intended):
            decided.append(Decided(qset, True, list(qset.incorrect)))
        else:
            d = Decided(qset, False, list(qset.incorrect))
            decided.append(d)
            if takes_false_negative(qset.set_id, seed, rate):
                pending.append(d)
    if pending:
        if scorer is None:
            from transforms.cosmos.scorers import make_answer_scorer
            scorer = make_answer_scorer(dict(spec))
        items = [(paragraphs[d.qset.paragraph_id]["text"], d.qset.question, d.negatives) for d in pending]
        for d, scores in zip(pending, scorer.score(items)):
            k = weakest_negative(scores)
            d.replaced = d.negatives[k]
            d.negatives[k] = nota
    return decided


def release_id(qset: QuestionSet, answer_number: int) -> str:
    return "##".join([qset.hit_id or qset.paragraph_id, qset.assignment_id, qset.worker_id,
                      qset.blog_id, f"q{qset.question_number}_a{answer_number}"])


def option_order(instance_id: str, seed: Any, n: int = 4) -> list[int]:
    return sorted(range(n), key=lambda i: (unit_hash(seed, "order", instance_id, i), i))


def instances_of(d: Decided, paragraph_text: str, spec: Mapping[str, Any]) -> list[dict[str, Any]]:
    nota, seed = spec["nota"]["text"], spec["seed"]
    correct = [nota] if d.unanswerable else d.qset.correct
    rows = []
    for k, answer in enumerate(correct, start=1):
        options = [answer, *d.negatives]
        iid = release_id(d.qset, k)
        order = option_order(iid, seed, len(options))
        row = {"id": iid, "set_id": d.qset.set_id, "paragraph_id": d.qset.paragraph_id,
               "worker_id": d.qset.worker_id, "context": paragraph_text, "question": d.qset.question,
               "label": order.index(0), "split": "", "unanswerable": d.unanswerable,
               "nota_distractor": bool(d.replaced)}
        for position, source in enumerate(order):
            row[f"answer{position}"] = options[source]
        rows.append(row)
    return rows


def _half_up(x: float) -> int:
    return int(math.floor(x + 0.5))


def eval_targets(total: int, pool: int, splits: Mapping[str, Any]) -> tuple[int, int]:
    ratio = min(1.0, total / splits["reference_total"]) if splits["reference_total"] else 1.0
    floor = 1 if pool else 0
    return (max(_half_up(splits["dev_size"] * ratio), floor),
            max(_half_up(splits["test_size"] * ratio), floor))


def assign_splits(instances: Sequence[dict[str, Any]], spec: Mapping[str, Any]) -> dict[str, Any]:
    """Set each instance's `split`; returns the targets. Paragraphs are never split across splits."""
    splits, seed = spec["splits"], spec["seed"]
    excellent = {str(w) for w in splits["excellent_workers"] or []}
    by_paragraph: dict[str, list[dict]] = {}
    for row in instances:
        by_paragraph.setdefault(row["paragraph_id"], []).append(row)
    eligible = [p for p, rows in by_paragraph.items() if all(r["worker_id"] in excellent for r in rows)]
    pool = sum(len(by_paragraph[p]) for p in eligible)
    dev_target, test_target = eval_targets(len(instances), pool, splits)
    filled = {"dev": 0, "test": 0}
    targets = {"dev": dev_target, "test": test_target}
    for row in instances:
        row["split"] = "train"
    for p in sorted(eligible, key=lambda p: hashlib.sha1(f"{seed}:{p}".encode("utf-8")).hexdigest()):
        open_splits = [s for s in ("dev", "test") if filled[s] < targets[s]]
        if not open_splits:
            break
        split = min(open_splits, key=lambda s: (filled[s] / targets[s], s != "dev"))
        for row in by_paragraph[p]:
            row["split"] = split
        filled[split] += len(by_paragraph[p])
    return {"instances": len(instances), "eval_pool": pool, "dev_target": dev_target,
            "test_target": test_target}


# --------------------------------------------------------------------------- import

def _stage(n_in: int, kept: int, rejects: Iterable[dict], stage: str) -> dict[str, Any]:
    reasons = dict(sorted(Counter(r["reason"] for r in rejects if r["stage"] == stage).items()))
    return {"in": n_in, "kept": kept, "rejected": reasons,
            "balanced": n_in == kept + sum(reasons.values())}


def set_row(d: Decided) -> dict[str, Any]:
    q = d.qset
    return {"set_id": q.set_id, "paragraph_id": q.paragraph_id, "blog_id": q.blog_id, "hit_id": q.hit_id,
            "assignment_id": q.assignment_id, "worker_id": q.worker_id,
            "question_number": q.question_number, "question_type": q.question_type,
            "question": q.question, "correct": q.correct, "incorrect": q.incorrect,
            "validators": len(q.judgements), "intended_votes": sum(j.intended for j in q.judgements),
            "unanswerable_votes": unanswerable_votes(q), "unanswerable": d.unanswerable,
            "nota_distractor": bool(d.replaced), "replaced_negative": d.replaced}


def import_results(run_dir: PathLike, questions_csv: PathLike, validations_csv: PathLike,
                   output_dir: PathLike, spec: Mapping[str, Any], scorer=None) -> dict[str, Any]:
    """Read written sets and validations, apply the NOTA rules, draw splits, write everything.

    Writes `sets/`, `train/`, `dev/`, `test/` (schema `instances`), `paragraphs/` (those with a
    valid set), `rejects/` and `summary.json` under `output_dir`; returns the summary.
    """
    paragraphs = {p["paragraph_id"]: p for p in read_table(run_dir, "paragraphs").to_pylist()}
    sets, rejects, n_rows = read_question_sets(questions_csv, paragraphs, spec)
    judgement_counts = attach_judgements(sets, validations_csv, spec)
    valid = []
    for qset in sets:
        reason = validate(qset, spec)
        if reason:
            rejects.append(rejection(VALIDATION_STAGE, reason, qset.set_id,
                                     f"{len(qset.judgements)} judgements, "
                                     f"{sum(j.intended for j in qset.judgements)} intended"))
        else:
            valid.append(qset)
    decided = decide_nota(valid, paragraphs, spec, scorer)
    instances = [row for d in decided for row in instances_of(d, paragraphs[d.qset.paragraph_id]["text"], spec)]
    targets = assign_splits(instances, spec)
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    key = lambda r: r["id"]  # noqa: E731
    for split in SPLITS:
        write_rows(sorted((r for r in instances if r["split"] == split), key=key), "cosmos", "instances", out / split)
    write_rows(sorted((set_row(d) for d in decided), key=lambda r: r["set_id"]), "cosmos", "sets", out / "sets")
    used = sorted({d.qset.paragraph_id for d in decided})
    write_rows([paragraphs[p] for p in used], "cosmos", "paragraphs", out / "paragraphs")
    write_rows(sorted(rejects, key=lambda r: (r["stage"], r["record_id"])), "cosmos", "rejects", out / "rejects")
    summary = {
        "dataset": "cosmos",
        "stages": {QUESTION_STAGE: _stage(n_rows, len(sets), rejects, QUESTION_STAGE),
                   VALIDATION_STAGE: _stage(len(sets), len(valid), rejects, VALIDATION_STAGE)},
        "validations": judgement_counts,
        "nota": {"unanswerable_sets": sum(d.unanswerable for d in decided),
                 "false_negative_sets": sum(bool(d.replaced) for d in decided),
                 "valid_sets": len(decided)},
        "splits": {s: sum(r["split"] == s for r in instances) for s in SPLITS},
        "targets": targets,
    }
    write_json(str(out / "summary.json"), summary)
    return summary


# --------------------------------------------------------------------------- release format

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
