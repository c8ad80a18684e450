"""The `lexical` reader: logistic regression over candidate features (scikit-learn).

Features of the kind SAN-like readers exploit, computed per (query, candidate): overlap between
the words around `@placeholder` and the words around each mention of the candidate, matching
neighbour words, candidate frequency and first position, presence in the highlights, entity type
and type-by-neighbour-word cues, and whether the candidate already occurs in the query.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Optional, Sequence

from data_specs.models import LexicalReaderOptions
from transforms.core.progress.lines import TaskLog
from transforms.record.metric import normalize_answer
from transforms.record.readers.base import (
    PLACEHOLDER,
    Candidate,
    PickleModels,
    Triple,
    candidates,
    correct_flags,
)

_WORD = re.compile(r"\w+", re.UNICODE)
_STOP = frozenset("a an the of in on at to for and or but is was were are be been by with as "
                  "from that this it its he she his her they their said".split())


@dataclass(frozen=True)
class LexicalExample:
    """Candidate feature dicts of one triple, the candidate texts and the correct flags."""

    features: tuple[dict, ...]
    texts: tuple[str, ...]
    correct: tuple[bool, ...]


def _words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def _window(words_before: list[str], words_after: list[str], size: int) -> set[str]:
    return {w for w in words_before[-size:] + words_after[:size] if w not in _STOP}


def _mention_context(passage: str, start: int, end: int, size: int) -> tuple[list[str], list[str]]:
    # Enough characters for `size` words on each side without tokenising the whole passage.
    span = 12 * (size + 2)
    return _words(passage[max(0, start - span):start]), _words(passage[end:end + span])


def candidate_features(triple: Triple, cand: Candidate, n_cands: int, rank: int, max_count: int,
                       size: int) -> dict:
    """The feature dict of one candidate for one query."""
    at = triple.query.find(PLACEHOLDER)
    q_before, q_after = _words(triple.query[:max(at, 0)]), _words(triple.query[at + len(PLACEHOLDER):])
    q_window = _window(q_before, q_after, size)
    q_all = {w for w in q_before + q_after if w not in _STOP}
    left = q_before[-1] if q_before else "<s>"
    right = q_after[0] if q_after else "</s>"
    best = total = sentence_best = 0.0
    left_match = right_match = 0.0
    for start, end in cand.mentions:
        before, after = _mention_context(triple.passage, start, end, size)
        overlap = len(q_window & _window(before, after, size))
        best = max(best, overlap / (len(q_window) or 1))
        total += overlap
        wide = _window(before, after, 4 * size)
        sentence_best = max(sentence_best, len(q_all & wide) / (len(q_all) or 1))
        left_match = max(left_match, float(bool(before) and before[-1] == left))
        right_match = max(right_match, float(bool(after) and after[0] == right))
    count = len(cand.mentions)
    first = cand.mentions[0][0]
    label = cand.label
    return {
        "context_overlap_max": best,
        "context_overlap_sum": math.log1p(total),
        "query_overlap_max": sentence_best,
        "left_word_match": left_match,
        "right_word_match": right_match,
        "frequency": count / max_count,
        "log_count": math.log1p(count),
        "first_position": first / max(1, len(triple.passage)),
        "rank": rank / max(1, n_cands - 1),
        "in_highlights": float(any(s >= triple.body_end for s, _ in cand.mentions)),
        "in_body": float(any(s < triple.body_end for s, _ in cand.mentions)),
        "in_query": float(normalize_answer(cand.text) in normalize_answer(triple.query.replace(PLACEHOLDER, " "))),
        "tokens": math.log1p(len(cand.text.split())),
        f"label={label}": 1.0,
        f"label={label}|left={left}": 1.0,
        f"label={label}|right={right}": 1.0,
    }


class _Constant:
    """The model of a fold whose training data holds a single class: rank by frequency."""


class LexicalReader(PickleModels):
    """Candidate ranker: scikit-learn logistic regression on `candidate_features`.

    Options: `filter.readers.lexical` of the spec (window, C), plus the spec's `seed`.
    """

    name = "lexical"

    def __init__(self, options: LexicalReaderOptions, seed: int = 0):
        self.window = options.window
        self.C = options.C
        self.seed = seed

    def prepare(self, triple: Triple) -> LexicalExample:
        cands = candidates(triple)
        max_count = max((len(c.mentions) for c in cands), default=1)
        features = tuple(candidate_features(triple, c, len(cands), i, max_count, self.window)
                         for i, c in enumerate(cands))
        return LexicalExample(features, tuple(c.text for c in cands),
                              tuple(correct_flags(triple, cands)))

    def fit(self, examples: Sequence[LexicalExample], log: Optional[TaskLog] = None) -> Any:
        from sklearn.feature_extraction import DictVectorizer
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline

        rows = [f for e in examples for f in e.features]
        labels = [c for e in examples for c in e.correct]
        if len(set(labels)) < 2:
            return _Constant()
        model = make_pipeline(DictVectorizer(), LogisticRegression(
            C=self.C, max_iter=1000, class_weight="balanced", random_state=self.seed))
        model.fit(rows, labels)
        return model

    def predict(self, model: Any, examples: Sequence[LexicalExample]) -> list[str]:
        if isinstance(model, _Constant):
            scores = [f["frequency"] for e in examples for f in e.features]
        else:
            rows = [f for e in examples for f in e.features]
            scores = list(model.decision_function(rows)) if rows else []
        answers, at = [], 0
        for example in examples:  # one scoring call per batch, then split by example
            mine = scores[at: at + len(example.texts)]
            at += len(example.texts)
            answers.append(example.texts[max(range(len(mine)), key=mine.__getitem__)] if mine else "")
        return answers
