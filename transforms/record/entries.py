"""ReCoRD's curation on entries: what the duplicate steps need of an article, never its text.

Dropping duplicate ids and near duplicates needs an article's id, a key of its content, its
MinHash signature and where it was read; the passage split and the models need its text. So an
article read in stage 1 becomes an `ArticleEntry` in the worker that read it, the two groupings
of curation (by id, by LSH band) carry entries (a few hundred bytes and the signature), and the
entries kept are grouped by the *read unit* they came from (a file, or a byte range of a big
JSONL file): each unit is read again by the worker it is dealt to, which emits the kept
articles and splits them (`ReadKeptAndSplit`). Nothing that grows with the corpus's text waits
in a grouping before the models; what grows is the entries (docs/runners.md).

With stored annotations (`--annotations`), the signatures stored with them are used where the
content matches (`SignEntries`): the entries are read unsigned, and only those without a stored
signature are read again to be signed.

A unit of many articles (an archive, a JSONL file or range) is read again in `SHARDS` groups
by a hash of the article id, so that its articles are spread over up to `SHARDS` workers at
the cost of reading it `SHARDS` times (a `.story` file is one group).

The passage split counts the kept entries as its input: an entry whose article is not found
again, or is found with other content (the input changed under the run), is a `passage_split`
reject `input_changed`, so the stage still balances and the change is seen.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterable, Iterator, Optional, Sequence, Union

import apache_beam as beam
import numpy as np
from apache_beam.io.filesystems import FileSystems

from transforms.core.accounting import Reject
from transforms.core.dedup import ELEMENT, MinHasher
from transforms.core.hashing import unit_hash
from transforms.core.io.files import WHOLE, NumberedRange
from transforms.core.stages import Stage, split_sides
from transforms.record.annotate.order import annotation_work
from transforms.record.article import Article
from transforms.record.curate import SPLIT, shingles
from transforms.record.raw_records import STORY_SUFFIXES
from transforms.record.read import input_section, read_articles_again

SHARDS = 8
INPUT_CHANGED = "input_changed"


@dataclass(frozen=True, eq=False)
class ArticleEntry:
    """An article as the curation steps see it: id, content key, origin, read unit, annotation
    work (characters), MinHash signature (None: near duplicates off, or no shingles) and the
    URL-list fields that `DropDuplicateIds` attaches."""

    id: str
    content: str
    origin: str
    unit: NumberedRange
    work: int
    signature: Optional[np.ndarray]
    url: str = ""
    source: str = ""
    split: str = ""

    def content_key(self) -> str:
        """The article's `Article.content_key` (what `pick_by_id` orders copies by)."""
        return self.content


def article_entry(unit: NumberedRange, article: Article, hasher: Optional[MinHasher] = None,
                  shingle_size: int = 5) -> ArticleEntry:
    """The entry of `article`, read from `unit`; signed by `hasher` over its `shingle_size`-word
    shingles when given."""
    signature = hasher.signature(shingles(article, shingle_size)) if hasher is not None else None
    return ArticleEntry(article.id, article.content_key(), article.origin, unit, annotation_work(article),
                        signature, article.url, article.source, article.split)


def entry_order(entry: ArticleEntry) -> tuple[int, str]:
    """`OrderByWork`'s key of an entry: decreasing annotation work, ties by id."""
    return -entry.work, entry.id


def read_key(entry: ArticleEntry) -> tuple[NumberedRange, int]:
    """The group an entry's article is read again in: its unit, and a shard of the unit's
    articles by id (one for a `.story` file)."""
    path, _, end, _ = entry.unit
    if end == WHOLE and path.lower().endswith(STORY_SUFFIXES):
        return entry.unit, 0
    return entry.unit, int(unit_hash("read-again", entry.id) * SHARDS)


def kept_articles(group: tuple[tuple[NumberedRange, int], Iterable[ArticleEntry]],
                  section) -> Iterator[Union[Article, Reject]]:
    """The kept articles of one read group, read again, with the URL-list fields their entries
    carry; an entry not found again with its content is an `input_changed` reject."""
    (unit, _), entries = group
    wanted: dict[str, list[ArticleEntry]] = defaultdict(list)
    for entry in entries:
        wanted[entry.origin].append(entry)
    why = "not found again with the content read"
    try:
        for article in read_articles_again(unit, wanted.keys(), section):
            waiting = wanted.get(article.origin)
            content = article.content_key()
            match = next((e for e in waiting or () if e.id == article.id and e.content == content), None)
            if match is None:
                continue
            waiting.remove(match)
            yield replace(article, url=match.url, source=match.source, split=match.split)
    except Exception:
        if FileSystems.exists(unit[0]):   # the store's error: the bundle fails and is retried
            raise
        why = "its file is gone"
    for entry in (e for waiting in wanted.values() for e in waiting):
        yield Reject(SPLIT, INPUT_CHANGED, entry.id, f"{entry.origin}: {why}")


class ReadKeptAndSplit(beam.PTransform):
    """Kept `ArticleEntry`s -> `(splits, rejects, tallies)` of stage `passage_split`: the entries
    grouped by read unit (`read_key`), each group's articles read again (`kept_articles`) and
    split by `split_fn`. `section` is the spec's `input` section the articles were read with."""

    def __init__(self, section, split_fn: Callable[[Article], Iterable[Union[object, Reject]]]):
        super().__init__()
        self._section = input_section(section)
        self._split = split_fn

    def expand(self, entries):
        section, split = self._section, self._split

        def read_and_split(group):
            for outcome in kept_articles(group, section):
                if isinstance(outcome, Reject):
                    yield outcome
                else:
                    yield from split(outcome)

        return (entries
                | "KeyByUnit" >> beam.Map(lambda e: (read_key(e), e))
                | "GroupByUnit" >> beam.GroupByKey()
                | "ReadAgainAndSplit" >> Stage(SPLIT, read_and_split, units=lambda g: sum(1 for _ in g[1])))


UNSIGNED = "unsigned"


class UseStoredSignaturesFn(beam.DoFn):
    """An id's entries joined with the signatures stored for it (`(SIGNATURE_SIDE, (content key,
    signature values))`): an entry whose content key has one is signed with it; the others go to
    the UNSIGNED output (a DoFn for the tagged output)."""

    def __init__(self, hasher: MinHasher):
        self._hasher = hasher

    def process(self, grouped: tuple[str, Iterable[tuple[int, Any]]]) -> Iterator[Any]:
        _, values = grouped
        entries, made = split_sides(values, ELEMENT)
        stored: dict[str, Sequence[int]] = dict(made)
        for entry in entries:
            values_made = stored.get(entry.content)
            if values_made:
                yield replace(entry, signature=self._hasher.from_values(values_made))
            else:
                yield beam.pvalue.TaggedOutput(UNSIGNED, entry)


def signed_again(group: tuple[tuple[NumberedRange, int], Iterable[ArticleEntry]], section,
                 hasher: MinHasher, shingle_size: int) -> Iterator[ArticleEntry]:
    """The entries of one read group signed from their articles read again; an entry whose
    article is not found again stays unsigned (its split then rejects it as `input_changed`)."""
    entries = list(group[1])
    signed = {}
    for found in kept_articles((group[0], entries), section):
        if isinstance(found, Article):
            signed[(found.id, found.origin)] = hasher.signature(shingles(found, shingle_size))
    for entry in entries:
        yield replace(entry, signature=signed.get((entry.id, entry.origin)))


class SignEntries(beam.PTransform):
    """Unsigned entries -> entries signed with the signatures stored for their content
    (`signatures`: `(id, (SIGNATURE_SIDE, (content key, values)))` pairs made with `hasher`'s
    threshold, permutations and seed), the others signed from their articles read again."""

    def __init__(self, signatures: beam.PCollection, hasher: MinHasher, section, shingle_size: int):
        super().__init__()
        self._signatures, self._hasher = signatures, hasher
        self._section, self._size = input_section(section), shingle_size

    def expand(self, entries):
        hasher, section, size = self._hasher, self._section, self._size
        joined = ((entries | "KeyById" >> beam.Map(lambda e: (e.id, (ELEMENT, e))), self._signatures)
                  | "FlattenSignatures" >> beam.Flatten() | "JoinSignatures" >> beam.GroupByKey()
                  | "UseStored" >> beam.ParDo(UseStoredSignaturesFn(hasher)).with_outputs(UNSIGNED, main="signed"))
        again = (joined[UNSIGNED]
                 | "KeyByUnit" >> beam.Map(lambda e: (read_key(e), e))
                 | "GroupByUnit" >> beam.GroupByKey()
                 | "SignAgain" >> beam.FlatMap(signed_again, section, hasher, size))
        return (joined.signed, again) | "FlattenSigned" >> beam.Flatten()
