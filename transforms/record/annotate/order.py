"""The order in which articles reach annotation: by decreasing annotation work, in chunks, so
that the local runner's workers get near-equal shares of the model's work.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator, Optional

import apache_beam as beam
from apache_beam.transforms.window import GlobalWindows

from transforms.record.article import Article

# How many articles `OrderByWorkFn` holds at most: sorted within chunks of this size, the halves
# of a chunk differ by at most about one article's work, and a worker never holds more.
WORK_ORDER_CHUNK = 500


def annotation_work(article: Article) -> int:
    """What annotating `article` may cost, in characters: its paragraphs' and highlights'."""
    return sum(map(len, article.paragraphs)) + sum(map(len, article.highlights))


def article_itself(article: Article) -> Article:
    """The article of an element that is one (the default `article_of`)."""
    return article


def work_order(article: Article) -> tuple[int, str]:
    """The sort key of `by_work`: decreasing `annotation_work`, ties by id."""
    return -annotation_work(article), article.id


def by_work(articles: Iterable[Any], article_of: Callable[[Any], Article] = article_itself,
            order: Optional[Callable[[Any], tuple[int, str]]] = None) -> list[Any]:
    """`articles` (or elements whose article is `article_of(element)`) by decreasing
    `annotation_work`, ties by id (deterministic); `order(element)` gives that key directly for
    elements that know their work but not their text."""
    return sorted(articles, key=order or (lambda e: work_order(article_of(e))))


class OrderByWorkFn(beam.DoFn):
    """Pass articles (or elements holding one: `article_of`) on in chunks of at most `chunk`,
    each by decreasing annotation work (a DoFn for the bundle: a chunk is what is held; the last
    one goes at the bundle's end)."""

    def __init__(self, chunk: int = WORK_ORDER_CHUNK, article_of: Callable[[Any], Article] = article_itself,
                 order: Optional[Callable[[Any], tuple[int, str]]] = None):
        self._chunk = chunk
        self._article_of = article_of
        self._order = order
        self._held: list[Any] = []

    def start_bundle(self) -> None:
        self._held = []

    def process(self, element: Any) -> Iterator[Any]:
        self._held.append(element)
        if len(self._held) >= self._chunk:
            held, self._held = self._held, []
            yield from by_work(held, self._article_of, self._order)

    def finish_bundle(self) -> Iterator[Any]:
        held, self._held = self._held, []
        for element in by_work(held, self._article_of, self._order):
            yield GlobalWindows.windowed_value(element)


class OrderByWork(beam.PTransform):
    """Articles in an order that balances the annotation work over the local runner's workers.

    `multi_processing` deals the keys of a grouping out to its workers in turn, in the order
    they reach the grouping; apply this just before the grouping that feeds annotation (the
    grouping by id), so that its keys arrive in pairs of near-equal work and each worker gets
    the same work to within about an article's per chunk. One step fused with its producer: nothing is moved, and other runners,
    which split their work in their own way, get the same elements. `article_of` gives the
    article of an element that is not one (a passage split); `order(element)` the sort key of
    an element that knows its work but not its text (`work_order`).
    """

    def __init__(self, chunk: int = WORK_ORDER_CHUNK, article_of: Callable[[Any], Article] = article_itself,
                 order: Optional[Callable[[Any], tuple[int, str]]] = None):
        super().__init__()
        self._chunk = chunk
        self._article_of = article_of
        self._order = order

    def expand(self, articles):
        return articles | "Order" >> beam.ParDo(OrderByWorkFn(self._chunk, self._article_of, self._order))
