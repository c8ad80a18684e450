"""The annotation backends that run a model on the workers (spaCy, stanza): their factories, the
checks that their models are there before a run starts, and which of them stored annotations can
serve. Backends that read annotation files instead are Beam transforms in
`transforms.record.annotate.files`.
"""
from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

from data_specs import SpecError
from data_specs.models import AnnotatorSection, CorefSection, PassageSection
from transforms.core.models.loading import check_spacy
from transforms.record.annotate.backends.stanza_backend import StanzaAnnotator, check_stanza_resources
from transforms.record.annotate.document import assemble_document
from transforms.record.annotate.spacy_ner import SpacyAnnotator, required_pipes, spacy_annotator
from transforms.record.annotate.spans import trim_span
from transforms.record.annotate.store import CACHED_BACKENDS
from transforms.record.annotation import AnnotatedArticle, Annotator
from transforms.record.article import PassageSplit, article_document


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
    check_spacy(annotator.model, [*required_pipes(annotator.sentences), "ner"], option="annotator.model")


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


def make_annotator(annotator: AnnotatorSection, coref: CorefSection, name: Optional[str] = None,
                   passage: Optional[PassageSection] = None) -> Annotator:
    """Build the model backend `name` (default: the spec's `annotator.name`).

    With `passage`, a backend that can (spaCy) skips the rest of articles whose passage
    provably has fewer than `passage.min_entities` entities.
    """
    name = name or annotator.name
    if name not in ANNOTATORS:
        raise ValueError(f"unknown annotator {name!r}; known: {sorted(ANNOTATORS)}")
    built = ANNOTATORS[name](annotator, coref)
    if passage is not None and isinstance(built, SpacyAnnotator):
        built.min_passage_entities = passage.min_entities
    return built


def check_cacheable(annotator: AnnotatorSection) -> None:
    """Raise SpecError unless stored annotations can serve this `annotator` section."""
    if annotator.name not in CACHED_BACKENDS or annotator.per_input:
        used = sorted({annotator.name, *annotator.per_input.values()})
        raise SpecError(f"stored annotations work with the {', '.join(CACHED_BACKENDS)} annotator "
                        f"only, without annotator.per_input (this spec uses {', '.join(used)})")


def single_backend(annotator: AnnotatorSection, name: str) -> AnnotatorSection:
    """A copy of the `annotator` section whose backend is `name` for every input (no
    per-input routing)."""
    return annotator.model_copy(update={"name": name, "per_input": {}})
