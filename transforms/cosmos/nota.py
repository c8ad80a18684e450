"""Cosmos QA stage 3 (paper §2.4): "None of the above" answers and the train / dev / test splits.

Applied to the valid question sets of a crowd batch (`transforms.cosmos.crowd`):

* **Unanswerable**: a valid set where at least one validator said it is answerable without the
  paragraph or needs no commonsense: its correct answer is replaced by the NOTA string
  (`nota.text`; one instance: NOTA + the three incorrect answers).
* **False negatives**: of the other valid sets, those with sha1(seed, "nota", set_id) <
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

import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from data_specs.models import CosmosSplitsSection, NotaSection
from transforms.core.hashing import seeded_order, unit_hash
from transforms.cosmos.crowd import intended_votes
from transforms.cosmos.crowd_results import QuestionSet
from transforms.cosmos.scorers import AnswerScorer

SPLITS = ("train", "dev", "test")


# --------------------------------------------------------------------------- the NOTA rules

def unanswerable_votes(qset: QuestionSet) -> int:
    return sum(j.answerable_without_paragraph or not j.needs_commonsense for j in qset.judgements)


def is_unanswerable(qset: QuestionSet, min_intended: int) -> bool:
    """§2.4: >= min_intended workers chose a correct answer, and >= 1 said it is answerable
    without the paragraph or needs no commonsense."""
    return intended_votes(qset) >= min_intended and unanswerable_votes(qset) >= 1


def takes_false_negative(set_id: str, seed: int, rate: float) -> bool:
    return unit_hash(seed, "nota", set_id) < rate


def weakest_negative(scores: Sequence[float]) -> int:
    """Index of the least challenging negative: the smallest summed score (first on ties)."""
    return min(range(len(scores)), key=lambda i: (scores[i], i))


@dataclass
class Decided:
    qset: QuestionSet
    unanswerable: bool
    negatives: list[str]          # after any NOTA replacement
    replaced: str = ""            # the negative replaced by NOTA


def decide_nota(valid: Sequence[QuestionSet], paragraphs: Mapping[str, Mapping[str, Any]],
                nota: NotaSection, min_intended: int, seed: int,
                make_scorer: Callable[[], AnswerScorer]) -> list[Decided]:
    """Apply both NOTA rules; `make_scorer()` is called (once) only when a set takes a false
    negative, and its `score` once for all of them."""
    decided: list[Decided] = []
    pending: list[Decided] = []
    for qset in valid:
        if is_unanswerable(qset, min_intended):
            decided.append(Decided(qset, True, list(qset.incorrect)))
        else:
            d = Decided(qset, False, list(qset.incorrect))
            decided.append(d)
            if takes_false_negative(qset.set_id, seed, nota.false_negative_rate):
                pending.append(d)
    if pending:
        items = [(paragraphs[d.qset.paragraph_id]["text"], d.qset.question, d.negatives) for d in pending]
        for d, scores in zip(pending, make_scorer().score(items)):
            k = weakest_negative(scores)
            d.replaced = d.negatives[k]
            d.negatives[k] = nota.text
    return decided


def set_row(d: Decided) -> dict[str, Any]:
    """The `sets` table row of a valid set and its NOTA outcome."""
    q = d.qset
    return {"set_id": q.set_id, "paragraph_id": q.paragraph_id, "blog_id": q.blog_id, "hit_id": q.hit_id,
            "assignment_id": q.assignment_id, "worker_id": q.worker_id,
            "question_number": q.question_number, "question_type": q.question_type,
            "question": q.question, "correct": q.correct, "incorrect": q.incorrect,
            "validators": len(q.judgements), "intended_votes": intended_votes(q),
            "unanswerable_votes": unanswerable_votes(q), "unanswerable": d.unanswerable,
            "nota_distractor": bool(d.replaced), "replaced_negative": d.replaced}


# --------------------------------------------------------------------------- instances and splits

def release_id(qset: QuestionSet, answer_number: int) -> str:
    return "##".join([qset.hit_id or qset.paragraph_id, qset.assignment_id, qset.worker_id,
                      qset.blog_id, f"q{qset.question_number}_a{answer_number}"])


def option_order(instance_id: str, seed: int, n: int = 4) -> list[int]:
    return sorted(range(n), key=lambda i: (unit_hash(seed, "order", instance_id, i), i))


def instances_of(d: Decided, paragraph_text: str, nota: NotaSection, seed: int) -> list[dict[str, Any]]:
    correct = [nota.text] if d.unanswerable else d.qset.correct
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


def eval_targets(total: int, pool: int, splits: CosmosSplitsSection) -> tuple[int, int]:
    ratio = min(1.0, total / splits.reference_total)
    floor = 1 if pool else 0
    return (max(_half_up(splits.dev_size * ratio), floor),
            max(_half_up(splits.test_size * ratio), floor))


def assign_splits(instances: Sequence[dict[str, Any]], splits: CosmosSplitsSection, seed: int) -> dict[str, Any]:
    """Set each instance's `split`; returns the targets. Paragraphs are never split across splits."""
    excellent = set(splits.excellent_workers)
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
    for p in seeded_order(eligible, seed):
        open_splits = [s for s in ("dev", "test") if filled[s] < targets[s]]
        if not open_splits:
            break
        split = min(open_splits, key=lambda s: (filled[s] / targets[s], s != "dev"))
        for row in by_paragraph[p]:
            row["split"] = split
        filled[split] += len(by_paragraph[p])
    return {"instances": len(instances), "eval_pool": pool, "dev_target": dev_target,
            "test_target": test_target}
