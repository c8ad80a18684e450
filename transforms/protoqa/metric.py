"""ProtoQA's generative evaluation (Boratko et al. 2020), equal to iesl/protoqa-evaluator.

A question has answer clusters, each a set of strings with a count (how many crowd workers
gave an answer of that cluster). A model gives a ranked list of answers. For each metric:

* **Preprocessing.** Every predicted answer becomes ``answer.lower()[:50].strip()``; cluster
  strings are used as they are.
* **Score matrix.** Entry (answer i, cluster j) is the best similarity of answer i to any string
  of cluster j: exact string equality (`exact`), or the WordNet score of
  `transforms.protoqa.wordnet` rounded half to even, so 0.5 gives 0 and only scores above 0.5
  count (`wordnet`).
* **Max Answers - k** keeps the first k predicted answers (None: all of them).
* **Max Incorrect - k** keeps the answers up to and including the k-th one that matches no
  cluster (a row whose maximum is 0). A repeated correct answer is not incorrect; it may still
  score only once, because each cluster is assigned to at most one answer.
* **Scaling and matching.** Columns are multiplied by the cluster counts, and answers are
  assigned to clusters one to one by the Hungarian algorithm
  (``scipy.optimize.linear_sum_assignment``) maximising the total.
* **Normalisation.** The total is divided by the oracle's: the clusters sorted by count
  (stable), each represented by one member string, evaluated under the same k. Because every
  member matches its own cluster, that is the sum of the k largest counts; only when a
  representative stops matching its cluster after preprocessing (a member over 50 characters
  or with capitals) is the oracle evaluated in full. The official code picks the
  representative in ``frozenset`` order (hash-seed dependent); we use the first listed member
  that still matches its cluster.
* **Assignment.** For the reported answer -> cluster mapping, every (answer, cluster) pair of
  the optimal assignment with a positive entry maps the answer to the cluster id, the other
  assigned answers map to None; a repeated answer keeps its first position and its last value,
  and with more answers than clusters the unassigned answers do not appear (all as the
  official dict does).
* **Mean.** Each metric is averaged over the questions of the predictions (a target question
  without predictions is not counted, as in the official evaluator; `evaluate` reports them).

Clusters whose member sets are identical are merged as the official ``{frozenset: count}`` dict
does (first position, last count). An empty ranked list scores 0 (the official code crashes).

**Loading.** Targets and predictions files are decoded by the one policy of
`transforms.core.io.text` (UTF-8 with a BOM stripped, else cp1252, else latin-1; raw control
characters removed). A file that cannot be scored is one `UserError` (the CLI prints one line,
exit 2) naming the file, the line when known and the question:

* targets: ``PATH:LINE: not JSON (...)``, ``PATH:LINE: not a protoqa-data question (question Q,
  cluster C: answers must be a list of strings, got str)`` (also a missing id, a count that is
  not an integer);
* predictions: ``PATH[:LINE]: not JSON (...)``, ``PATH[:LINE]: question Q: answer 2 must be a
  string, got int 3`` (numbers, null, nested lists, objects), ``... ranked answers must be a
  list of strings, got str``, ``predictions must be JSON objects, got list``;
* predicted questions the targets lack: `UnknownQuestions` (``N predicted question(s) not in the
  targets: Q, ...``).

The values themselves (`Question`, `Cluster`, the predictions) are read by
`transforms.protoqa.metric_inputs`.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from transforms.core.errors import UserError
from transforms.core.io.text import Decoded, decode_text
from transforms.core.io.untrusted import parse_json
from transforms.protoqa import wordnet as pw
from transforms.protoqa.metric_inputs import (
    Cluster,
    PredictionsError,
    Question,
    parse_predictions,
    question_from_json,
)

PREDICTION_LENGTH_LIMIT = 50
SIMILARITIES = ("exact", "wordnet")
MAX_ANSWERS = (None, 1, 3, 5, 10)
MAX_INCORRECT = (None, 1, 3, 5)


def metric_names() -> List[str]:
    """The official metric names, in the official order."""
    return ([f"Max Answers - {k}" for k in MAX_ANSWERS]
            + [f"Max Incorrect - {k}" for k in MAX_INCORRECT])


METRICS: Dict[str, Tuple[Optional[int], Optional[int]]] = {
    **{f"Max Answers - {k}": (k, None) for k in MAX_ANSWERS},
    **{f"Max Incorrect - {k}": (None, k) for k in MAX_INCORRECT},
}


def _read_lines(path: Union[str, Path]) -> List[str]:
    """A file's text lines, decoded by the one policy of transforms.core.io.text (UTF-8, a BOM
    stripped, else cp1252, else latin-1; raw control characters removed)."""
    decoded = decode_text(Path(path).read_bytes())
    assert isinstance(decoded, Decoded)          # the lenient policy always decodes
    return decoded.text.split("\n")


def load_targets(path: Union[str, Path]) -> Dict[str, Question]:
    """Read a targets JSONL file (e.g. ``dev.crowdsourced.jsonl``) into ``{qid: Question}``.

    A line that is not JSON or not a protoqa-data question is a `UserError` naming
    ``path:line`` and what is wrong.
    """
    targets: Dict[str, Question] = {}
    for number, line in enumerate(_read_lines(path), start=1):
        if line.strip():
            try:
                row = parse_json(line)
            except ValueError as error:
                raise UserError(f"{path}:{number}: not JSON ({error})") from None
            try:
                q = question_from_json(row)
            except (ValueError, TypeError, KeyError, AttributeError) as error:
                message = f"missing {error}" if isinstance(error, KeyError) else str(error)
                raise UserError(f"{path}:{number}: not a protoqa-data question ({message})") from None
            targets[q.qid] = q
    return targets


def load_predictions(path: Union[str, Path]) -> Dict[str, List[str]]:
    """Read a predictions file in either layout (see `parse_predictions`); a file that cannot
    be scored is one `UserError`: ``path[:line]: question ID: what is wrong``."""
    try:
        return parse_predictions("\n".join(_read_lines(path)))
    except PredictionsError as error:
        where = f"{path}:{error.line}" if error.line else str(path)
        raise UserError(f"{where}: {error}") from None


def preprocess_prediction(answer: str, length_limit: int = PREDICTION_LENGTH_LIMIT) -> str:
    """The official preprocessing of a predicted answer: ``lower()[:50].strip()``."""
    return answer.lower()[:length_limit].strip()


# --------------------------------------------------------------------------------------------
# Similarity: answer x cluster
# --------------------------------------------------------------------------------------------
def exact_cluster_score(prediction: str, cluster: Cluster) -> float:
    """1.0 when the (preprocessed) prediction equals a member string, else 0.0."""
    return float(prediction in cluster.answers)


def wordnet_cluster_score(prediction: str, cluster: Cluster) -> float:
    """``np.round`` of the best WordNet score over the members: 1.0 above 0.5, else 0.0."""
    tokens = pw.content_tokens(prediction)
    if pw.span_keys(tokens).isdisjoint(pw.cluster_keys(cluster.answers)):
        return 0.0
    return float(any(pw.token_match(tokens, pw.content_tokens(a)) for a in cluster.answers))


SIMILARITY_FUNCTIONS: Dict[str, Callable[[str, Cluster], float]] = {
    "exact": exact_cluster_score,
    "wordnet": wordnet_cluster_score,
}


def similarity_function(similarity: Union[str, Callable]) -> Callable[[str, Cluster], float]:
    """`exact` / `exact_match` / `wordnet`, or a callable ``(prediction, Cluster) -> score``."""
    if callable(similarity):
        return similarity
    name = {"exact_match": "exact"}.get(similarity, similarity)
    if name not in SIMILARITY_FUNCTIONS:
        raise ValueError(f"unknown similarity {similarity!r}; use one of {SIMILARITIES}")
    return SIMILARITY_FUNCTIONS[name]


def score_matrix(predictions: Sequence[str], question: Question,
                 similarity: Union[str, Callable] = "exact") -> np.ndarray:
    """(answers x clusters) matrix of (rounded) similarities of preprocessed answers.

    Repeated answers are scored once; the matrix is not yet scaled by the cluster counts.
    """
    score = similarity_function(similarity)
    memo: Dict[str, np.ndarray] = {}
    matrix = np.zeros((len(predictions), len(question.clusters)))
    for i, answer in enumerate(predictions):
        if answer not in memo:
            memo[answer] = np.array([score(answer, c) for c in question.clusters], dtype=float)
        matrix[i] = memo[answer]
    return matrix


# --------------------------------------------------------------------------------------------
# Scoring
# --------------------------------------------------------------------------------------------
def limit_incorrect(matrix: np.ndarray, k: Optional[int]) -> np.ndarray:
    """Cut the ranked rows just after the k-th row that matches no cluster (row max == 0)."""
    if k is None:
        return matrix
    incorrect = 0
    for i, best in enumerate(matrix.max(axis=1) if matrix.size else []):
        if best == 0:
            incorrect += 1
            if incorrect >= k:
                return matrix[: i + 1]
    return matrix


def optimal_assignment(scaled: np.ndarray) -> Tuple[float, np.ndarray, np.ndarray]:
    """Maximum-total one-to-one assignment of rows to columns (Hungarian algorithm)."""
    # Imported here: scipy.optimize is slow to import, and only a scoring run needs it.
    from scipy.optimize import linear_sum_assignment

    rows, cols = linear_sum_assignment(-scaled)
    return scaled[rows, cols].sum(), rows, cols


@dataclass
class QuestionScore:
    """One question's score under one metric and its answer -> cluster id (or None) map."""
    score: float
    assignment: Dict[str, Optional[str]]

    def to_json(self) -> dict:
        """The score and the assignment, as the per-question report holds them."""
        return {"score": float(self.score), "assignment": self.assignment}


def _oracle_total(question: Question, similarity, max_answers: Optional[int],
                  max_incorrect: Optional[int]) -> float:
    """The oracle's total (see the module doc)."""
    score = similarity_function(similarity)
    order = sorted(range(len(question.clusters)), key=lambda j: question.clusters[j].count,
                   reverse=True)
    representatives, all_match = [], True
    for j in order:
        cluster = question.clusters[j]
        candidates = [preprocess_prediction(a) for a in cluster.answers]
        good = [c for c in candidates if c in cluster.answers or score(c, cluster) > 0]
        all_match &= bool(good)
        representatives.append(good[0] if good else candidates[0])
    if max_answers is not None:
        representatives, order = representatives[:max_answers], order[:max_answers]
    if all_match:
        return float(sum(question.clusters[j].count for j in order))
    matrix = limit_incorrect(score_matrix(representatives, question, similarity), max_incorrect)
    total, _, _ = optimal_assignment(matrix * question.counts[None])
    return float(total)


def score_question(answers: Sequence[str], question: Question, *,
                   max_answers: Optional[int] = None, max_incorrect: Optional[int] = None,
                   similarity: Union[str, Callable] = "exact",
                   matrix: Optional[np.ndarray] = None) -> QuestionScore:
    """Score one ranked list of raw answers under one metric (module doc, step by step).

    `matrix`, when given, is `score_matrix` of the preprocessed answers (shared by metrics).
    """
    answers = list(answers)[:max_answers] if max_answers is not None else list(answers)
    prepared = [preprocess_prediction(a) for a in answers]
    if not prepared or not question.clusters:
        return QuestionScore(0.0, {})
    if matrix is None:
        matrix = score_matrix(prepared, question, similarity)
    matrix = limit_incorrect(matrix[: len(prepared)], max_incorrect)
    scaled = matrix * question.counts[None]
    total, rows, cols = optimal_assignment(scaled)
    assignment: Dict[str, Optional[str]] = {}
    for r, c in zip(rows, cols):
        assignment[prepared[r]] = question.clusters[c].cluster_id if scaled[r, c] > 0 else None
    oracle = _oracle_total(question, similarity, max_answers, max_incorrect)
    return QuestionScore(total / oracle if oracle else 0.0, assignment)


class UnknownQuestions(UserError, KeyError):
    """Predictions for questions the targets do not have."""

    def __str__(self) -> str:           # KeyError's str() would quote the message
        return str(self.args[0]) if self.args else ""


def evaluate(targets: Mapping[str, Question], predictions: Mapping[str, Sequence[str]],
             similarity: Union[str, Callable] = "exact",
             metrics: Optional[Iterable[str]] = None,
             ) -> Tuple[Dict[str, float], Dict[str, Dict[str, QuestionScore]]]:
    """All metrics over every predicted question.

    Returns ``(means, per_question)``: ``means[metric]`` is the mean score over the questions of
    `predictions` (official: ``statistics.mean``), ``per_question[metric][qid]`` a
    `QuestionScore`. The similarity matrix is computed once per question and shared by all
    metrics. A predicted question missing from the targets raises `UnknownQuestions` (a
    ``KeyError`` and a `UserError`: the CLI prints it as one line).
    """
    names = list(metrics) if metrics is not None else metric_names()
    unknown = [qid for qid in predictions if qid not in targets]
    if unknown:
        raise UnknownQuestions(f"{len(unknown)} predicted question(s) not in the targets: "
                               f"{', '.join(unknown[:5])}")
    per_question: Dict[str, Dict[str, QuestionScore]] = {name: {} for name in names}
    for qid, answers in predictions.items():
        question = targets[qid]
        prepared = [preprocess_prediction(a) for a in answers]
        matrix = score_matrix(prepared, question, similarity) if prepared else None
        for name in names:
            max_answers, max_incorrect = METRICS[name]
            per_question[name][qid] = score_question(
                answers, question, max_answers=max_answers, max_incorrect=max_incorrect,
                similarity=similarity, matrix=matrix)
    means = {name: (float(statistics.mean(s.score for s in per_question[name].values()))
                    if per_question[name] else 0.0) for name in names}
    return means, per_question


def missing_questions(targets: Mapping[str, Question],
                      predictions: Mapping[str, Sequence[str]]) -> List[str]:
    """Target questions without predictions (not counted in the means, as officially)."""
    return [qid for qid in targets if qid not in predictions]


def report_json(means: Mapping[str, float], per_question: Mapping[str, Mapping[str, QuestionScore]],
                similarity: str) -> dict:
    """The per-question report: the layout of the reference ``metrics`` section."""
    return {
        "similarity_function": {"exact": "exact_match"}.get(similarity, similarity),
        "metrics": {name: {"mean": means[name],
                           "per_question": {qid: s.to_json() for qid, s in scores.items()}}
                    for name, scores in per_question.items()},
    }
