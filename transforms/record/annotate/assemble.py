"""An article's unit annotations (each body paragraph and highlight on its own, as the model pass
makes them) placed in a passage split's coordinates: passage mentions, the rest's sentences and
their mentions, the names propagated and the chains made by the coreferencer.

These are the split-dependent steps, so one model pass (or its stored annotations) serves every
split and every stage-2 threshold.
"""
from __future__ import annotations

import bisect
from typing import Optional, Sequence

from transforms.record.annotate.ner_rules import apply_rules
from transforms.record.annotate.propagate import propagate_names
from transforms.record.annotate.spans import trim_span
from transforms.record.annotation import (
    AnnotatedArticle,
    ArticleAnnotation,
    Coreferencer,
    Entity,
    Mention,
    Sentence,
    UnitAnnotation,
)
from transforms.record.article import PassageSplit


def _mention(text: str, start: int, end: int, label: str, labels: frozenset[str], segment: int,
             shift: int) -> Optional[Mention]:
    """A trimmed mention of an entity span of `text`, offsets moved by `shift`, or None."""
    if label not in labels:
        return None
    start, end = trim_span(text, start, end)
    if end <= start:
        return None
    return Mention(segment, start + shift, end + shift, text[start:end], label)


def unit_entities(text: str, unit: UnitAnnotation, rules: Sequence[str]) -> Sequence[tuple[int, int, str]]:
    """The unit's entity spans after the NER post-processing `rules` (`ner_rules.NER_RULES`);
    those stored with the unit when they were made with the same rules."""
    if not rules:
        return unit.entities
    if unit.ruled is not None and unit.ruled[0] == tuple(rules):
        return unit.ruled[1]
    return apply_rules(text, unit.entities, rules)


def passage_mentions(split: PassageSplit, paragraphs: Sequence[UnitAnnotation],
                     highlights: Sequence[UnitAnnotation], labels: frozenset[str],
                     rules: Sequence[str] = ()) -> list[Mention]:
    """The passage's mentions: segment 0 is the body (paragraphs joined by spaces), then one
    segment per highlight; offsets in the segment."""
    article = split.article
    mentions: list[Mention] = []
    offset = 0
    for text, unit in zip(article.paragraphs[: split.passage_paragraphs], paragraphs):
        for start, end, label in unit_entities(text, unit, rules):
            mention = _mention(text, start, end, label, labels, 0, offset)
            if mention is not None:
                mentions.append(mention)
        offset += len(text) + 1
    for i, (text, unit) in enumerate(zip(article.highlights, highlights)):
        for start, end, label in unit_entities(text, unit, rules):
            mention = _mention(text, start, end, label, labels, 1 + i, 0)
            if mention is not None:
                mentions.append(mention)
    return mentions


def assemble_units(split: PassageSplit, annotation: ArticleAnnotation, labels: frozenset[str],
                   coreferencer: Coreferencer, propagate: bool = False,
                   rest: bool = True, rules: Sequence[str] = ()) -> AnnotatedArticle:
    """Place an article's unit annotations in passage/sentence coordinates and chain them.

    Passage mentions are every mention of the passage paragraphs and the highlights; the rest's
    sentences are those of its paragraphs, and an entity across a sentence boundary belongs to
    neither. With `rest=False` the rest is left out (its annotations may be missing): only for
    an article the passage filter rejects whatever the rest holds.
    """
    article = split.article
    n_highlights = len(article.highlights)
    passage_offsets = (0, *split.highlight_starts)
    mentions = passage_mentions(split, annotation.paragraphs, annotation.highlights, labels, rules)
    placed: list[tuple[str, int]] = [("passage", passage_offsets[m.segment]) for m in mentions]
    sentence_texts: list[str] = []
    first = split.passage_paragraphs
    rest_units = zip(article.paragraphs[first:], annotation.paragraphs[first:]) if rest else ()
    for text, unit in rest_units:
        bounds: list[tuple[int, int, int]] = []  # (start, end, sentence index) in unit characters
        for start, end in unit.sentences:
            bounds.append((start, end, len(sentence_texts)))
            sentence_texts.append(text[start:end])
        starts = [b[0] for b in bounds]
        for start, end, label in unit_entities(text, unit, rules):
            at = bisect.bisect_right(starts, start) - 1
            if at < 0 or end > bounds[at][1]:
                continue  # an entity across a sentence boundary belongs to neither
            sentence_start, _, index = bounds[at]
            mention = _mention(text, start, end, label, labels, 1 + n_highlights + index,
                               -sentence_start)
            if mention is not None:
                mentions.append(mention)
                placed.append(("sentence", index))
    if propagate:
        segments = [split.body, *article.highlights, *sentence_texts]
        mentions = propagate_names(mentions, segments, "surnames" in rules, "contained" in rules)
        placed = [("passage", passage_offsets[m.segment]) if m.segment <= n_highlights
                  else ("sentence", m.segment - 1 - n_highlights) for m in mentions]
    chains = coreferencer.resolve(mentions)
    passage_entities: list[Entity] = []
    sentence_entities: list[list[Entity]] = [[] for _ in sentence_texts]
    for mention, (where, where_at), chain in zip(mentions, placed, chains):
        if where == "passage":
            passage_entities.append(Entity(mention.start + where_at, mention.end + where_at,
                                           mention.text, mention.label, chain))
        else:
            sentence_entities[where_at].append(
                Entity(mention.start, mention.end, mention.text, mention.label, chain))
    sentences = tuple(Sentence(i, text, tuple(ents))
                      for i, (text, ents) in enumerate(zip(sentence_texts, sentence_entities)))
    return AnnotatedArticle(split, tuple(passage_entities), sentences)
