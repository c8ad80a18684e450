"""Agreement between two annotation backends on the same passages (`compare-annotators`).

Backend A is the reference. Entity spans: precision, recall and F1 of B's passage mention spans
(exact start and end) against A's. Chains: the same over coreference links — pairs of mentions
in one chain — counted among the mentions whose spans both backends found, so that span
disagreements do not count twice.
"""
from __future__ import annotations

from itertools import combinations
from typing import Iterable, Iterator

import apache_beam as beam

from transforms.record.annotation import AnnotatedArticle

COUNTS = ("articles", "spans_a", "spans_b", "spans_common", "links_a", "links_b", "links_common")


def _links(article: AnnotatedArticle, spans: set[tuple[int, int]]) -> set[tuple[tuple[int, int], ...]]:
    by_chain: dict[int, list[tuple[int, int]]] = {}
    for entity in article.passage_entities:
        if (entity.start, entity.end) in spans:
            by_chain.setdefault(entity.chain, []).append((entity.start, entity.end))
    return {pair for members in by_chain.values() for pair in combinations(sorted(set(members)), 2)}


def compare_articles(a: AnnotatedArticle, b: AnnotatedArticle) -> dict[str, int]:
    """Span and link counts of one article annotated by both backends."""
    spans_a = {(e.start, e.end) for e in a.passage_entities}
    spans_b = {(e.start, e.end) for e in b.passage_entities}
    common = spans_a & spans_b
    links_a, links_b = _links(a, common), _links(b, common)
    return {"articles": 1, "spans_a": len(spans_a), "spans_b": len(spans_b),
            "spans_common": len(common), "links_a": len(links_a), "links_b": len(links_b),
            "links_common": len(links_a & links_b)}


def prf(common: int, found: int, reference: int) -> dict[str, float]:
    """Precision, recall and F1 (0-100) of `found` items against `reference` ones."""
    precision = 100.0 * common / found if found else 0.0
    recall = 100.0 * common / reference if reference else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1}


def agreement(counts: dict[str, int]) -> dict:
    """The report of summed counts."""
    return {
        "articles": counts["articles"],
        "entity_spans": {**prf(counts["spans_common"], counts["spans_b"], counts["spans_a"]),
                         "a": counts["spans_a"], "b": counts["spans_b"], "common": counts["spans_common"]},
        "chains": {**prf(counts["links_common"], counts["links_b"], counts["links_a"]),
                   "a": counts["links_a"], "b": counts["links_b"], "common": counts["links_common"]},
    }


def compare_report(name_a: str, name_b: str, counts: dict[str, int],
                   rejected: Iterable[tuple[tuple[str, str], int]]) -> dict:
    """`compare.json`: the backends' names, their agreement, and each side's rejects by reason
    (`rejected` holds `((side "a" or "b", reason), count)` pairs)."""
    return {"a": name_a, "b": name_b, **agreement(counts),
            "rejected": {side: {reason: n for (s, reason), n in sorted(rejected) if s == side}
                         for side in ("a", "b")}}


def _compare_grouped(grouped: tuple[str, dict[str, list]]) -> Iterator[dict[str, int]]:
    _, groups = grouped
    for a in groups["a"][:1]:
        for b in groups["b"][:1]:
            yield compare_articles(a, b)


def _sum(rows: Iterable[dict[str, int]]) -> dict[str, int]:
    total = dict.fromkeys(COUNTS, 0)
    for row in rows:
        for key in COUNTS:
            total[key] += row[key]
    return total


class CompareAnnotations(beam.PTransform):
    """`(annotated by A, annotated by B)` -> one dict of summed counts (articles both annotated)."""

    def expand(self, pcolls):
        a, b = pcolls
        return (
            {"a": a | "KeyA" >> beam.Map(lambda x: (x.split.article.id, x)),
             "b": b | "KeyB" >> beam.Map(lambda x: (x.split.article.id, x))}
            | "JoinById" >> beam.CoGroupByKey()
            | "CountAgreement" >> beam.FlatMap(_compare_grouped)
            | "SumCounts" >> beam.CombineGlobally(_sum)
        )
