"""BLANC (Recasens & Hovy 2011) with the Luo et al. (2014) extension for differing mention sets.

A clustering of mentions is seen as two sets of mention pairs (links):

* coreference links C: unordered pairs of distinct mentions in the same cluster;
* non-coreference links N: unordered pairs of distinct mentions in different clusters.

For a key K and a response R (here: annotator A and annotator B, or a reference and a proposal):

    Rc = |Ck & Cr| / |Ck|    Pc = |Ck & Cr| / |Cr|    Fc = 2 Rc Pc / (Rc + Pc)
    Rn = |Nk & Nr| / |Nk|    Pn = |Nk & Nr| / |Nr|    Fn = 2 Rn Pn / (Rn + Pn)
    BLANC = (Fc + Fn) / 2

Luo et al. (2014) compute the links of each side over that side's own mentions, so mentions that
only one side has (an answer one annotator marked `invalid` or `?`) simply produce links that
cannot be in the intersection: they lower recall or precision instead of being dropped. A ratio
with an empty denominator is 0. Their corner cases:

* neither side has a coreference link (all singletons on both sides): BLANC = Fn;
* neither side has a non-coreference link (one cluster on both sides): BLANC = Fc;
* both sets of both kinds empty (each side has at most one mention): 1 when the mention sets are
  equal, else 0.

BLANC is symmetric in K and R apart from swapping recall and precision. Everything here is pure.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from itertools import combinations
from typing import Hashable, Iterable, Mapping

Clustering = Mapping[Hashable, Hashable]   # mention -> cluster label


@dataclass(frozen=True)
class LinkCounts:
    """Link-set sizes of a key/response pair; summed over questions they give micro BLANC."""

    key_coref: int = 0
    response_coref: int = 0
    common_coref: int = 0
    key_noncoref: int = 0
    response_noncoref: int = 0
    common_noncoref: int = 0
    same_mentions: bool = True

    def __add__(self, other: LinkCounts) -> LinkCounts:
        return LinkCounts(*(a + b for a, b in zip(
            (self.key_coref, self.response_coref, self.common_coref,
             self.key_noncoref, self.response_noncoref, self.common_noncoref),
            (other.key_coref, other.response_coref, other.common_coref,
             other.key_noncoref, other.response_noncoref, other.common_noncoref))),
            same_mentions=self.same_mentions and other.same_mentions)


@dataclass(frozen=True)
class Blanc:
    """BLANC and its parts, each in [0, 1]."""

    blanc: float
    recall: float
    precision: float
    f_coref: float
    f_noncoref: float
    recall_coref: float
    precision_coref: float
    recall_noncoref: float
    precision_noncoref: float
    counts: LinkCounts

    def as_dict(self) -> dict:
        """The scores and link counts as a JSON-ready dict."""
        return asdict(self)


def links(clustering: Clustering) -> tuple[set[frozenset], set[frozenset]]:
    """(coreference links, non-coreference links) of one clustering."""
    coref, noncoref = set(), set()
    for a, b in combinations(sorted(clustering, key=repr), 2):
        pair = frozenset((a, b))
        (coref if clustering[a] == clustering[b] else noncoref).add(pair)
    return coref, noncoref


def link_counts(key: Clustering, response: Clustering) -> LinkCounts:
    """The coreference and non-coreference links of `key`, of `response` and of both."""
    kc, kn = links(key)
    rc, rn = links(response)
    return LinkCounts(len(kc), len(rc), len(kc & rc), len(kn), len(rn), len(kn & rn),
                      set(key) == set(response))


def _ratio(num: int, den: int) -> float:
    return num / den if den else 0.0


def _f(recall: float, precision: float) -> float:
    return 2 * recall * precision / (recall + precision) if recall + precision else 0.0


def blanc_from_counts(c: LinkCounts) -> Blanc:
    """BLANC from link counts, with the Luo et al. (2014) corner cases."""
    rc, pc = _ratio(c.common_coref, c.key_coref), _ratio(c.common_coref, c.response_coref)
    rn, pn = _ratio(c.common_noncoref, c.key_noncoref), _ratio(c.common_noncoref, c.response_noncoref)
    fc, fn = _f(rc, pc), _f(rn, pn)
    no_coref = c.key_coref == 0 and c.response_coref == 0
    no_noncoref = c.key_noncoref == 0 and c.response_noncoref == 0
    if no_coref and no_noncoref:
        score = 1.0 if c.same_mentions else 0.0
        return Blanc(score, score, score, score, score, score, score, score, score, c)
    if no_coref:
        return Blanc(fn, rn, pn, fc, fn, rc, pc, rn, pn, c)
    if no_noncoref:
        return Blanc(fc, rc, pc, fc, fn, rc, pc, rn, pn, c)
    return Blanc((fc + fn) / 2, (rc + rn) / 2, (pc + pn) / 2, fc, fn, rc, pc, rn, pn, c)


def blanc(key: Clustering, response: Clustering) -> Blanc:
    """BLANC of `response` against `key`; each maps mention -> cluster label."""
    return blanc_from_counts(link_counts(key, response))


def clusters_to_mapping(clusters: Iterable[Iterable[Hashable]]) -> dict:
    """`[[a, b], [c]]` -> `{a: 0, b: 0, c: 1}` (a mention in two clusters is an error)."""
    mapping: dict = {}
    for i, members in enumerate(clusters):
        for mention in members:
            if mention in mapping:
                raise ValueError(f"mention {mention!r} is in two clusters")
            mapping[mention] = i
    return mapping


def corpus_blanc(pairs: Iterable[tuple[Clustering, Clustering]]) -> dict:
    """Macro (mean of per-item BLANC) and micro (BLANC of summed link counts) over many items.

    Links never cross items (questions), so the micro figure is BLANC over the union of the
    items' link sets.
    """
    scores, total = [], LinkCounts()
    for key, response in pairs:
        counts = link_counts(key, response)
        scores.append(blanc_from_counts(counts).blanc)
        total = total + counts
    macro = sum(scores) / len(scores) if scores else 0.0
    return {"items": len(scores), "macro": macro, "micro": blanc_from_counts(total).blanc}
