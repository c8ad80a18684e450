"""Placing an external tool's whole-article annotations into passage and query-sentence coordinates.

Backends that annotate the article document string (`transforms.article.article_document`) —
AllenNLP prediction files, stanza, DeepMind's rc-data metadata — return a `DocumentAnnotation`;
`assemble_document` turns it into the `AnnotatedArticle` the query generator reads, exactly as
the spaCy backend's own assembly does.
"""
from __future__ import annotations

import bisect
import functools
from typing import Optional, Sequence

from transforms.record.annotation import (
    AnnotatedArticle,
    AnnotationError,
    DocumentAnnotation,
    Entity,
    Sentence,
)
from transforms.record.article import PassageSplit, article_document, document_offsets


@functools.lru_cache(maxsize=1)
def _rule_sentencizer():
    """spaCy's rule-based sentencizer on a blank English pipeline (no model, deterministic)."""
    import spacy

    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    return nlp


def rule_sentences(text: str) -> list[tuple[int, int]]:
    """Sentence spans of `text` by punctuation rules (used when a tool gives no sentences)."""
    return [(s.start_char, s.end_char) for s in _rule_sentencizer()(text).sents]


def _strip_span(text: str, start: int, end: int) -> Optional[tuple[int, int]]:
    piece = text[start:end]
    lead = len(piece) - len(piece.lstrip())
    stripped = piece.strip()
    return (start + lead, start + lead + len(stripped)) if stripped else None


def rest_sentences(document: str, split: PassageSplit, para_starts: Sequence[int],
                   tool_sentences: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sentence spans (document coordinates) of the rest paragraphs, never crossing a paragraph."""
    spans: list[tuple[int, int]] = []
    first = split.passage_paragraphs
    for i, paragraph in enumerate(split.article.paragraphs[first:], start=first):
        p_start, p_end = para_starts[i], para_starts[i] + len(paragraph)
        if tool_sentences:
            pieces = [(max(s, p_start), min(e, p_end)) for s, e in tool_sentences if s < p_end and e > p_start]
        else:
            pieces = [(p_start + s, p_start + e) for s, e in rule_sentences(paragraph)]
        spans.extend(span for span in (_strip_span(document, s, e) for s, e in pieces) if span)
    return spans


def assemble_document(split: PassageSplit, annotation: DocumentAnnotation,
                      trim=None) -> AnnotatedArticle:
    """Passage entities and rest sentences from whole-document mentions and chains.

    A mention crossing a paragraph or sentence boundary belongs to neither side and is left
    out. `trim(text, start, end)` may narrow spans (e.g. drop "the" and possessives).
    """
    article = split.article
    document = article_document(article)
    if len(annotation.mentions) != len(annotation.chains):
        raise AnnotationError("chains_mismatch", f"{len(annotation.mentions)} mentions, "
                              f"{len(annotation.chains)} chain ids")
    para_starts, hl_starts = document_offsets(article)
    # Document offset -> passage offset, for the passage paragraphs and the highlights.
    blocks: list[tuple[int, int, int]] = []   # (document start, document end, passage start)
    at = 0
    for i in range(split.passage_paragraphs):
        blocks.append((para_starts[i], para_starts[i] + len(article.paragraphs[i]), at))
        at += len(article.paragraphs[i]) + 1
    for j, highlight in enumerate(article.highlights):
        blocks.append((hl_starts[j], hl_starts[j] + len(highlight), split.highlight_starts[j]))
    sentences = rest_sentences(document, split, para_starts, annotation.sentences)
    sentence_starts = [s for s, _ in sentences]
    block_starts = [b[0] for b in blocks]

    passage_entities: list[Entity] = []
    sentence_entities: list[list[Entity]] = [[] for _ in sentences]
    chain_ids: dict[int, int] = {}
    for (start, end, label), chain in sorted(zip(annotation.mentions, annotation.chains)):
        if not 0 <= start < end <= len(document):
            raise AnnotationError("bad_mention_offsets", f"{start}-{end} outside the document")
        if trim is not None:
            start, end = trim(document, start, end)
            if end <= start:
                continue
        text = document[start:end]
        b = bisect.bisect_right(block_starts, start) - 1
        if b >= 0 and end <= blocks[b][1]:
            offset = blocks[b][2] - blocks[b][0]
            cid = chain_ids.setdefault(chain, len(chain_ids))
            passage_entities.append(Entity(start + offset, end + offset, text, label, cid))
            continue
        s = bisect.bisect_right(sentence_starts, start) - 1
        if s >= 0 and end <= sentences[s][1]:
            cid = chain_ids.setdefault(chain, len(chain_ids))
            base = sentences[s][0]
            sentence_entities[s].append(Entity(start - base, end - base, text, label, cid))
    passage_entities.sort(key=lambda e: (e.start, e.end))
    built = tuple(Sentence(i, document[s:e], tuple(ents))
                  for i, ((s, e), ents) in enumerate(zip(sentences, sentence_entities)))
    return AnnotatedArticle(split, tuple(passage_entities), built)
