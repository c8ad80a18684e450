"""Stage 1 of ReCoRD (§3.1): drop duplicate articles, then cut passages from what is left.

Exact duplicates share an id; near duplicates are found with MinHash LSH: each article's
signature is cut into bands, articles meeting in a band bucket are compared, and an article is
dropped when it is similar to one with a smaller id. Both global steps group by key (id, band
bucket), so no worker ever holds the corpus.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Iterable, Iterator, Optional, Union

import apache_beam as beam

from data_specs.models import PassageSection
from filters import record as record_filters
from filters.text import tokenize
from transforms.core.accounting import Reject
from transforms.core.stages import Stage
from transforms.record.annotation import AnnotatedArticle
from transforms.record.article import SPLIT_STRATEGIES, TOKEN_COUNTS, Article, PassageSplit

DEDUP_ID = "dedup_exact"

SPLIT = "passage_split"


def pick_by_id(grouped: tuple[str, dict[str, list]]) -> Iterator[Union[Article, Reject]]:
    """Keep one article per id (smallest content key) and attach URL-list metadata."""
    article_id, groups = grouped
    # An id from the URL lists with no article was never read: nothing to keep or account.
    copies = sorted(groups["articles"], key=lambda a: (a.content_key(), a.origin))
    for i, copy in enumerate(copies):
        if i:
            yield Reject(DEDUP_ID, "duplicate_id", article_id, copy.origin)
        elif groups["urls"]:
            url, source, split = sorted(groups["urls"])[0]
            yield replace(copy, url=url, source=source or copy.source, split=split)
        else:
            yield copy


class DropDuplicateIds(beam.PTransform):
    """Group articles by id (joining the URL lists' url, source and split) and keep one each."""

    def __init__(self, url_info: Optional[beam.PCollection] = None):
        super().__init__()
        self._url_info = url_info

    def expand(self, articles):
        keyed = articles | "KeyById" >> beam.Map(lambda a: (a.id, a))
        if self._url_info is None:   # one GroupByKey: no empty URL side to join
            return (keyed | "GroupById" >> beam.GroupByKey()
                    | "Pick" >> Stage(DEDUP_ID, lambda g: pick_by_id((g[0], {"articles": g[1], "urls": []})),
                                      units=lambda g: sum(1 for _ in g[1])))
        grouped = {"articles": keyed, "urls": self._url_info} | "GroupById" >> beam.CoGroupByKey()
        return grouped | "Pick" >> Stage(DEDUP_ID, pick_by_id,
                                         units=lambda g: len(g[1]["articles"]))


def shingles(article: Article, size: int) -> set[bytes]:
    """Lowercased word `size`-grams of the article body, as bytes for MinHash."""
    words = [t.lower() for p in article.paragraphs for t in tokenize(p) if t[0].isalnum()]
    if len(words) < size:
        return {" ".join(words).encode("utf-8")} if words else set()
    return {" ".join(words[i : i + size]).encode("utf-8") for i in range(len(words) - size + 1)}


def split_article(article: Article, strategy: str, min_tokens: int,
                  max_highlights: int, tokens: str = "whitespace") -> Iterable[Union[PassageSplit, Reject]]:
    """Cut an article into passage and rest, or reject it with the reason (`tokens`: how a
    paragraph's tokens are counted, a key of `TOKEN_COUNTS`)."""
    if not article.highlights:
        return [Reject(SPLIT, "no_highlights", article.id, article.origin)]
    if len(article.highlights) > max_highlights:
        return [Reject(SPLIT, "too_many_highlights", article.id, str(len(article.highlights)))]
    split = SPLIT_STRATEGIES[strategy](article, min_tokens, TOKEN_COUNTS[tokens])
    if split is None:
        return [Reject(SPLIT, "passage_too_short", article.id,
                       f"fewer than {min_tokens} tokens in the whole body")]
    if not split.rest:
        return [Reject(SPLIT, "no_rest", article.id, "the passage takes every paragraph")]
    return [split]


def splittable(article: Article) -> Iterable[Union[Article, Reject]]:
    """Keep an article some passage split could send to annotation, whatever the spec's
    `passage` section: it has highlights and more than one paragraph (`record annotate`)."""
    if not article.highlights:
        return [Reject(SPLIT, "no_highlights", article.id, article.origin)]
    if len(article.paragraphs) < 2:
        return [Reject(SPLIT, "no_rest", article.id, "one paragraph: every split takes it all")]
    return [article]


def make_split_fn(passage: PassageSection):
    """The passage-split function configured by the spec's `passage` section."""
    strategy = passage.strategy
    if strategy not in SPLIT_STRATEGIES:
        raise ValueError(f"unknown passage.strategy {strategy!r}; known: {sorted(SPLIT_STRATEGIES)}")
    min_tokens, max_highlights = passage.min_tokens, passage.max_highlights
    tokens = passage.tokens
    return lambda article: split_article(article, strategy, min_tokens, max_highlights, tokens)


PASSAGE_STAGE = "passage_filter"


def filter_passage(article: AnnotatedArticle,
                   passage: PassageSection) -> Iterator[Union[AnnotatedArticle, Reject]]:
    """Keep passages with enough body tokens and distinct entities (spec `passage`)."""
    verdict = (record_filters.min_body_tokens(article.split.tokens, passage.min_tokens)
               or record_filters.min_distinct_entities((e.chain for e in article.passage_entities),
                                                        passage.min_entities))
    if verdict:
        yield Reject(PASSAGE_STAGE, verdict, article.split.article.id)
    else:
        yield article


def passage_row(article: AnnotatedArticle) -> dict:
    """The Parquet row of a kept passage (entity `end` inclusive, as in ReCoRD JSON)."""
    split = article.split
    return {
        "passage_id": split.article.id,
        "source": split.article.source,
        "url": split.article.url,
        "split": split.article.split,
        "encoding": split.article.encoding,
        "text": split.text,
        "body_end": split.body_end,
        "passage_paragraphs": split.passage_paragraphs,
        "rest_paragraphs": len(split.rest),
        "tokens": split.tokens,
        "entities": [{"start": e.start, "end": e.end - 1, "text": e.text, "label": e.label,
                      "chain": e.chain} for e in article.passage_entities],
    }
