"""What an annotator produces: entity mentions, coreference chains and the rest's sentences.

Backends (spaCy by default) sit behind `Annotator`; coreference over named-entity mentions sits
behind `Coreferencer`. Both are chosen in the spec, so a user swaps a model in one place.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Protocol, Sequence, Union

from transforms.core.accounting import Reject
from transforms.record.article import PassageSplit


@dataclass(frozen=True)
class Mention:
    """A named-entity mention in one segment of an article (a passage part or a rest sentence).

    `segment` orders segments in reading order: passage body, highlights, then the rest's
    sentences. `start`/`end` are character offsets into that segment, `end` exclusive.
    """

    segment: int
    start: int
    end: int
    text: str
    label: str


@dataclass(frozen=True)
class Entity:
    """A mention placed in passage or sentence coordinates, with its coreference chain."""

    start: int                   # character offset, inclusive
    end: int                     # character offset, exclusive
    text: str
    label: str
    chain: int


@dataclass(frozen=True)
class Sentence:
    """A sentence of the article's rest, with its entity mentions (offsets in `text`)."""

    index: int
    text: str
    entities: tuple[Entity, ...]


@dataclass(frozen=True)
class AnnotatedArticle:
    """A passage split with entities in passage coordinates and the rest's sentences."""

    split: PassageSplit
    passage_entities: tuple[Entity, ...]
    sentences: tuple[Sentence, ...]


@dataclass(frozen=True)
class UnitAnnotation:
    """What the model found in one unit of an article (a body paragraph or a highlight).

    Units do not depend on the passage split, so one annotation serves every split. Offsets are
    characters of the unit's own text, `end` exclusive: `sentences` are the sentence bounds with
    surrounding whitespace stripped; `entities` are every entity span the model found, of any
    label and untrimmed, as `(start, end, label)`. `ruled`, when stored annotations carry them,
    is `(rule names, entities after those NER post-rules)`, which depend on the text alone, so
    a run with the same rules skips applying them again (not part of equality).
    """

    sentences: tuple[tuple[int, int], ...]
    entities: tuple[tuple[int, int, str], ...]
    ruled: Optional[tuple[tuple[str, ...], tuple[tuple[int, int, str], ...]]] = field(
        default=None, compare=False)


@dataclass(frozen=True)
class ArticleAnnotation:
    """An article's split-independent annotations: one `UnitAnnotation` per body paragraph and
    per highlight, with what they were made from (`text_hash`) and by (`annotator`, `settings`)."""

    article_id: str
    text_hash: str                     # `Article.content_key()` of the annotated article
    annotator: str                     # the backend's name
    settings: str                      # JSON of the settings that shaped the model's output
    settings_hash: str
    paragraphs: tuple[UnitAnnotation, ...]
    highlights: tuple[UnitAnnotation, ...]


@dataclass(frozen=True)
class DocumentAnnotation:
    """Annotations of a whole article made by an external tool, in document coordinates.

    Offsets index `transforms.article.article_document(article)`: the DeepMind story string
    (paragraphs joined by blank lines, then "\n\n@highlight\n\n" + each highlight).
    `chains[i]` is the coreference chain of `mentions[i]`; `sentences` (optional) are the tool's
    sentence spans, used to split the rest into query sentences.
    """

    mentions: tuple[tuple[int, int, str], ...]   # (start, end exclusive, label)
    chains: tuple[int, ...]
    sentences: tuple[tuple[int, int], ...] = ()


class AnnotationError(ValueError):
    """An article's external annotations cannot be used; `reason` names the reject."""

    def __init__(self, reason: str, detail: str = ""):
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail


class Coreferencer(Protocol):
    """Groups an article's entity mentions (in reading order) into coreference chains."""

    def resolve(self, mentions: Sequence[Mention]) -> list[int]:
        """Chain id per mention; ids are 0.. in order of first appearance."""
        ...


class Annotator(Protocol):
    """NER, sentence splitting and coreference for a batch of passage splits."""

    name: str

    def annotate(self, splits: Sequence[PassageSplit]) -> list[Union[AnnotatedArticle, Reject]]:
        """Annotate each split; the result has the same length and order. A split the model
        cannot take (longer than its limit) is a `Reject` in its place."""
        ...
