"""ReCoRD's official metric (v1.0 evaluation script): normalised exact match and token F1.

Normalisation lowercases, drops punctuation, drops the articles a/an/the and collapses
whitespace; a prediction scores its best EM and F1 over all reference answers; a query without a
prediction scores 0; totals are averaged over all queries and reported on a 0-100 scale.
"""
from __future__ import annotations

import re
import string
from collections import Counter
from typing import Callable, Iterable, Mapping, Sequence

from transforms.core.errors import UserError
from transforms.core.io.untrusted import read_json_file

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_answer(text: str) -> str:
    """Lowercase, remove punctuation, remove articles, collapse whitespace (in that order)."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match_score(prediction: str, ground_truth: str) -> bool:
    """Whether the normalised strings are equal."""
    return normalize_answer(prediction) == normalize_answer(ground_truth)


def f1_score(prediction: str, ground_truth: str) -> float:
    """Token-overlap F1 of the normalised strings."""
    predicted = normalize_answer(prediction).split()
    truth = normalize_answer(ground_truth).split()
    common = Counter(predicted) & Counter(truth)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision, recall = same / len(predicted), same / len(truth)
    return 2 * precision * recall / (precision + recall)


def best_over_answers(metric: Callable[[str, str], float], prediction: str,
                      answers: Iterable[str]) -> float:
    """The best score of `prediction` against any reference answer (0 with no answers)."""
    return max((float(metric(prediction, answer)) for answer in answers), default=0.0)


def is_correct(prediction: str, answers: Sequence[str]) -> bool:
    """Exact match against any reference answer, as the machine filter judges a reader."""
    return best_over_answers(exact_match_score, prediction, answers) == 1.0


def evaluate(data: Sequence[Mapping], predictions: Mapping[str, str]) -> dict[str, float]:
    """EM and F1 (0-100) over every query of ReCoRD JSON `data` (its `"data"` list)."""
    total = exact = f1 = 0.0
    for passage in data:
        for qa in passage["qas"]:
            total += 1
            if qa["id"] not in predictions:
                continue
            answers = [a["text"] for a in qa["answers"]]
            exact += best_over_answers(exact_match_score, predictions[qa["id"]], answers)
            f1 += best_over_answers(f1_score, predictions[qa["id"]], answers)
    if not total:
        return {"exact_match": 0.0, "f1": 0.0}
    return {"exact_match": 100.0 * exact / total, "f1": 100.0 * f1 / total}


def read_evaluation_data(path: str) -> list[dict]:
    """The `data` list of a ReCoRD JSON file, checked for what `evaluate` reads (each entry's
    `qas`, each query's string `id` and `answers` with string `text`); anything else is one
    `UserError` naming the file and the first entry that is not so."""
    document = read_json_file(path, None, "ReCoRD JSON file")
    entries = document.get("data") if isinstance(document, dict) else None
    if not isinstance(entries, list):
        raise UserError(f"{path}: not a ReCoRD JSON file (expected an object with a \"data\" list)")
    for n, entry in enumerate(entries):
        qas = entry.get("qas") if isinstance(entry, dict) else None
        if not isinstance(qas, list) or not all(
                isinstance(qa, dict) and isinstance(qa.get("id"), str) and isinstance(qa.get("answers"), list)
                and all(isinstance(a, dict) and isinstance(a.get("text"), str) for a in qa["answers"])
                for qa in qas):
            raise UserError(f"{path}: data[{n}] is not a ReCoRD passage (qas: a list of {{id, answers: "
                            f"[{{text}}]}})")
    return entries


def read_predictions(path: str) -> dict[str, str]:
    """A predictions file: one JSON object of query id -> answer text; else one `UserError`."""
    predictions = read_json_file(path, None, "predictions file")
    if not isinstance(predictions, dict) or not all(isinstance(v, str) for v in predictions.values()):
        raise UserError(f"{path}: predictions must be one JSON object of query id -> answer text")
    return predictions
