"""The values the ProtoQA evaluator reads: protoqa-data targets and ranked predictions.

`question_from_json` turns one targets line into a `Question` with its answer `Cluster`s (the
protoqa-data layout and the older ``answers-cleaned`` layouts the official loader also accepts;
clusters whose member sets are identical are merged as the official ``{frozenset: count}`` dict
does: first position, last count). `parse_predictions` reads a predictions text, one JSON object
``{qid: [ranked answers]}`` or JSONL. Both say what is wrong with a value they refuse, naming the
question, the cluster or the answer's position; `transforms.protoqa.metric` adds the file and line.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Mapping, Optional, Tuple

import numpy as np

from transforms.core.io.untrusted import parse_json


@dataclass
class Cluster:
    """One answer cluster: its id, member strings (file order) and count."""
    cluster_id: str
    answers: Tuple[str, ...]
    count: int


@dataclass
class Question:
    """A ProtoQA question with its answer clusters (file order, identical sets merged)."""
    qid: str
    question: str
    clusters: List[Cluster] = field(default_factory=list)

    @property
    def counts(self) -> np.ndarray:
        """The clusters' counts, in cluster order."""
        return np.array([c.count for c in self.clusters])


def _merge_identical(clusters: Iterable[Cluster]) -> List[Cluster]:
    """Merge clusters with equal member sets like a ``{frozenset(answers): count}`` dict."""
    merged: Dict[frozenset, Cluster] = {}
    for cluster in clusters:
        key = frozenset(cluster.answers)
        if key in merged:
            merged[key].count = cluster.count
        else:
            merged[key] = Cluster(cluster.cluster_id, cluster.answers, cluster.count)
    return list(merged.values())


def _type_name(value: object) -> str:
    return {"NoneType": "null", "dict": "object"}.get(type(value).__name__, type(value).__name__)


def _member_strings(answers: object, where: str) -> Tuple[str, ...]:
    if not isinstance(answers, (list, tuple)):
        raise ValueError(f"{where}: answers must be a list of strings, got {_type_name(answers)}")
    for answer in answers:
        if not isinstance(answer, str):
            raise ValueError(f"{where}: answers must be strings, got {_type_name(answer)} {answer!r}")
    if not answers:
        raise ValueError(f"{where}: a cluster needs at least one answer")
    return tuple(answers)


def _count(value: object, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError(f"{where}: count must be an integer, got {_type_name(value)}")
    try:
        return int(value)
    except (ValueError, OverflowError):
        raise ValueError(f"{where}: count must be an integer, got {value!r}") from None


def question_from_json(row: Mapping) -> Question:
    """Parse one targets line: protoqa-data format (``answers.clusters``) or the older
    ``answers-cleaned`` list/dict layouts the official loader also accepts. Raises
    ``ValueError`` (or ``TypeError`` / ``KeyError``) naming what is wrong."""
    if not isinstance(row, Mapping):
        raise ValueError(f"a targets line must be a JSON object, got {_type_name(row)}")
    if isinstance(row.get("metadata"), Mapping) and "id" in row["metadata"]:
        qid = row["metadata"]["id"]
    elif "questionid" in row:
        qid = row["questionid"]
    else:
        raise ValueError("targets line without metadata.id / questionid")
    if isinstance(qid, bool) or not isinstance(qid, (str, int)):
        raise ValueError(f"question id must be a string, got {_type_name(qid)}")
    qid = str(qid)
    question = row.get("question")
    if isinstance(question, Mapping):
        text = question.get("normalized") or question.get("normalized-question") or ""
    else:
        text = row.get("normalized-question") or question or ""
    answers = row.get("answers")
    clusters: List[Cluster] = []
    if isinstance(answers, Mapping) and "clusters" in answers:
        if not isinstance(answers["clusters"], Mapping):
            raise ValueError(f"question {qid}: answers.clusters must be an object")
        for cid, cluster in answers["clusters"].items():
            where = f"question {qid}, cluster {cid}"
            clusters.append(Cluster(cid, _member_strings(cluster["answers"], where),
                                    _count(cluster["count"], where)))
    elif isinstance(row.get("answers-cleaned"), list):
        for i, cluster in enumerate(row["answers-cleaned"]):
            where = f"question {qid}, cluster {i}"
            clusters.append(Cluster(f"{qid}.{i}", _member_strings(cluster["answers"], where),
                                    _count(cluster["count"], where)))
    elif isinstance(row.get("answers-cleaned"), Mapping):
        for i, (answer, count) in enumerate(row["answers-cleaned"].items()):
            clusters.append(Cluster(f"{qid}.{i}", (answer,), _count(count, f"question {qid}, answer {answer!r}")))
    else:
        raise ValueError(f"question {qid}: no answer clusters found")
    return Question(qid, str(text), _merge_identical(clusters))


class PredictionsError(ValueError):
    """Why a predictions file cannot be scored; `line` is its line number when known."""

    def __init__(self, message: str, line: Optional[int] = None):
        super().__init__(message)
        self.line = line


def _ranked_answers(qid: str, answers: object) -> List[str]:
    if not isinstance(answers, list):
        raise PredictionsError(f"question {qid}: ranked answers must be a list of strings, "
                               f"got {_type_name(answers)}")
    for position, answer in enumerate(answers, start=1):
        if not isinstance(answer, str):
            shown = "" if answer is None else " " + json.dumps(answer)[:60]
            raise PredictionsError(f"question {qid}: answer {position} must be a string, "
                                   f"got {_type_name(answer)}{shown}")
    return list(answers)


def _prediction_items(obj) -> Iterable[Tuple[str, List[str]]]:
    if not isinstance(obj, Mapping):
        raise PredictionsError(f"predictions must be JSON objects, got {_type_name(obj)}")
    if "question_id" in obj and "ranked_answers" in obj:
        qid = obj["question_id"]
        if not isinstance(qid, (str, int)) or isinstance(qid, bool):
            raise PredictionsError(f"question_id must be a string, got {_type_name(qid)}")
        yield str(qid), _ranked_answers(str(qid), obj["ranked_answers"])
        return
    for qid, answers in obj.items():
        yield str(qid), _ranked_answers(str(qid), answers)


def _json_objects(text: str) -> List[Tuple[Optional[int], object]]:
    """The JSON values of a predictions file with their line numbers (None: the whole file)."""
    try:
        return [(None, parse_json(text))]
    except ValueError as whole:
        lines = [(n, line) for n, line in enumerate(text.split("\n"), start=1) if line.strip()]
        if not lines:
            raise PredictionsError("empty file, not JSON") from None
        objects: List[Tuple[Optional[int], object]] = []
        for number, line in lines:
            try:
                objects.append((number, parse_json(line)))
            except ValueError as error:
                if not objects:      # not JSONL either: report the whole file's error
                    raise PredictionsError(f"not JSON ({_json_problem(whole)})") from None
                raise PredictionsError(f"not JSON ({_json_problem(error, line=False)})", number) from None
        return objects


def _json_problem(error: ValueError, line: bool = True) -> str:
    if isinstance(error, json.JSONDecodeError):
        return f"{error.msg} at line {error.lineno} column {error.colno}" if line else \
            f"{error.msg} at column {error.colno}"
    return str(error)


def parse_predictions(text: str) -> Dict[str, List[str]]:
    """Predictions from one JSON object ``{qid: [ranked answers]}`` or JSONL whose lines are
    such objects (one or more questions per line) or ``{"question_id", "ranked_answers"}``.

    Raises `PredictionsError` (a ``ValueError``) for text that is not JSON or answers that are
    not lists of strings, naming the line and the question id.
    """
    predictions: Dict[str, List[str]] = {}
    for number, obj in _json_objects(text):
        try:
            for qid, answers in _prediction_items(obj):
                predictions[qid] = answers
        except PredictionsError as error:
            raise PredictionsError(str(error), number) from None
    return predictions

