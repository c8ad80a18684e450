"""The similarity signals of `csdata protoqa assign` between a new answer and a cluster's strings.

Each is a plain function of two strings (or of an answer and a cluster's members): the WordNet
partition score of `transforms.protoqa.wordnet`, bounded for long strings
(`bounded_wordnet_score`); lemma overlap (`lemma_similarity`, `coverage`, `head_lemma`), with
WordNet's morphy as the lemmatiser; spelling similarity (`spelling_similarity`, from the edit
distance); and the cluster's size (`size_prior`). `transforms.protoqa.assign` weighs them.
"""
from __future__ import annotations

import math
from functools import cache
from typing import Sequence, Tuple

from transforms.protoqa import wordnet as pw
from transforms.protoqa.wordnet_index import wordnet


def levenshtein(a: str, b: str) -> int:
    """Edit distance (insertions, deletions, substitutions)."""
    if len(a) < len(b):
        a, b = b, a
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def spelling_similarity(a: str, b: str) -> float:
    """1 - Levenshtein(a, b) / max length (1.0 for equal strings, 0.0 with an empty one)."""
    if a == b:
        return 1.0
    if not a or not b:
        return 0.0
    return 1.0 - levenshtein(a, b) / max(len(a), len(b))


@cache
def lemma(token: str) -> str:
    """WordNet's base form of a token (morphy over noun, verb, adjective, adverb), else itself."""
    reader = wordnet()
    for pos in ("n", "v", "a", "r"):
        base = reader.morphy(token, pos)
        if base:
            return base
    return token


@cache
def lemmas(text: str) -> Tuple[str, ...]:
    """Lemmas of the content tokens of `text` in order (stopwords, punctuation-only dropped)."""
    return tuple(lemma(t) for t in pw.content_tokens(text) if any(ch.isalnum() for ch in t))


@cache
def lemma_set(text: str) -> frozenset:
    """The set of `lemmas(text)`."""
    return frozenset(lemmas(text))


def head_lemma(text: str) -> str:
    """The last content lemma of `text` (the head of an English noun phrase), "" if none."""
    found = lemmas(text)
    return found[-1] if found else ""


def lemma_similarity(a: str, b: str) -> float:
    """Jaccard overlap of the two lemma sets (1.0 when both are empty)."""
    la, lb = lemma_set(a), lemma_set(b)
    if not la and not lb:
        return 1.0
    return len(la & lb) / len(la | lb)


def coverage(answer: str, members: Sequence[str]) -> float:
    """Share of the answer's lemmas that occur in some member string (0.0 with no lemma)."""
    own = lemma_set(answer)
    if not own:
        return 0.0
    vocabulary = frozenset().union(*(lemma_set(m) for m in members))
    return len(own & vocabulary) / len(own)


def size_prior(count: int, total: int) -> float:
    """log(1 + count) / log(1 + total): 1.0 for a cluster holding every answer, 0.0 for none."""
    return math.log1p(max(count, 0)) / math.log1p(total) if total > 0 else 0.0


@cache
def bounded_wordnet_score(a: str, b: str, max_pairs: int) -> float:
    """The WordNet score of `transforms.protoqa.wordnet` (unrounded) for `assign`.

    Exact when the two strings have at most `max_pairs` pairs of partitions
    (`assign.max_partition_pairs`); beyond that (two long strings) a lower bound: every
    partition of the shorter side (the first `max_pairs` of them) against the longer side
    taken whole or as single tokens.
    """
    ta, tb = pw.content_tokens(a), pw.content_tokens(b)
    if (1 << max(len(ta) - 1, 0)) * (1 << max(len(tb) - 1, 0)) <= max_pairs:
        return pw.token_score(ta, tb)
    if ta == tb:
        return 1.0
    if pw.span_keys(ta).isdisjoint(pw.span_keys(tb)):
        return 0.0
    short, long_ = (ta, tb) if len(ta) <= len(tb) else (tb, ta)
    groupings_long = [[" ".join(long_)], list(long_)]
    best = 0.0
    for n, spans in enumerate(pw.partitions(len(short))):
        if n >= max_pairs:
            break
        groups = [" ".join(short[i:j]) for i, j in spans]
        for other in groupings_long:
            edges = [[k for k, g in enumerate(other) if pw.groups_match(group, g)]
                     for group in groups]
            best = max(best, pw.max_matching(edges, len(other)) / max(len(groups), len(other)))
    return best
