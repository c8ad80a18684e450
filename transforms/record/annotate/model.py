"""A model backend run in Beam: batches of passage splits (or whole articles) annotated by one
annotator per worker process, loaded once (`apache_beam.utils.shared`) on the first batch that
needs it, an article that fails becoming a reject; with a work folder, only the items whose
results are not kept there go through the model.
"""
from __future__ import annotations

import logging
from typing import Any, Iterator, Optional

import apache_beam as beam
from apache_beam.metrics import Metrics
from apache_beam.utils import shared

from data_specs.models import AnnotatorSection, CorefSection, PassageSection
from transforms.core.accounting import NAMESPACE, REJECTS, TALLIES, Reject
from transforms.core.resume.memo import MemoizedModel, WorkLike
from transforms.core.stages import BundleTally
from transforms.record.annotate import STAGE
from transforms.record.annotate.memo import annotation_memo
from transforms.record.annotate.order import OrderByWork, article_itself
from transforms.record.annotate.registry import make_annotator
from transforms.record.annotation import AnnotationError, Annotator

_LOG = logging.getLogger(__name__)


class _Handle:
    """A weak-referenceable holder for the shared annotator."""

    def __init__(self, annotator: Annotator):
        self.annotator = annotator


class AnnotateFn(beam.DoFn):
    """Annotate batches with one annotator per worker process; failed articles become rejects.

    The annotator is acquired on the first batch that needs it, so a worker that gets none
    (every article's annotations were stored) never loads the model. With `articles`, batches
    hold articles and the results are their stored-form annotations (`annotate_articles`);
    otherwise splits. With `memo`, batches hold `(item, stored result or None)` pairs and only
    the items without a stored result are annotated (`transforms.core.resume.memo`). With `paired`,
    each result that is not a reject goes out as `(item, result)`.
    """

    def __init__(self, annotator: AnnotatorSection, coref: CorefSection, name: str,
                 shared_handle: shared.Shared, passage: Optional[PassageSection] = None,
                 articles: bool = False, memo: Optional[MemoizedModel] = None, paired: bool = False):
        self._paired = paired
        self._annotator_section = annotator
        self._coref = coref
        self._name = name
        self._shared = shared_handle
        self._passage = passage
        self._articles = articles
        self._memo = memo
        self._annotator: Optional[Annotator] = None
        self._tally = BundleTally(STAGE)

    def setup(self) -> None:
        self._texts = Metrics.counter(NAMESPACE, f"{STAGE}.texts")

    def start_bundle(self) -> None:
        self._tally.start()

    def finish_bundle(self) -> Iterator[Any]:
        if self._memo is not None:
            self._memo.flush()
        return self._tally.flush()

    def teardown(self) -> None:
        if self._memo is not None:
            self._memo.flush()

    def _acquire(self) -> Annotator:
        if self._annotator is None:
            section, coref, name, passage = self._annotator_section, self._coref, self._name, self._passage
            key = repr((name, section, coref, passage))
            self._annotator = self._shared.acquire(
                lambda: _Handle(make_annotator(section, coref, name, passage)), tag=key).annotator
        return self._annotator

    def _run(self, annotator: Any, batch: list) -> list:
        counted = "annotate_articles_counted" if self._articles else "annotate_counted"
        if hasattr(annotator, counted):
            results, texts = getattr(annotator, counted)(batch)
            self._texts.inc(texts)
            return results
        return annotator.annotate_articles(batch) if self._articles else annotator.annotate(batch)

    def _annotate(self, batch: list) -> list:
        """One result per item of `batch`, in order: annotations or rejects."""
        annotator = self._acquire()
        article_of = (lambda a: a) if self._articles else (lambda s: s.article)
        try:
            return self._run(annotator, batch)
        except Exception:  # one bad text must not sink its batch: retry one by one
            _LOG.exception("annotating a batch failed; retrying article by article")
            results = []
            for item in batch:
                try:
                    results.extend(self._run(annotator, [item]))
                except AnnotationError as error:
                    results.append(Reject(STAGE, error.reason, article_of(item).id, error.detail[:300]))
                except Exception as error:
                    results.append(Reject(STAGE, "annotation_error", article_of(item).id,
                                          f"{type(error).__name__}: {error}"[:300]))
            return results

    def process(self, batch: list) -> Iterator[Any]:
        if self._memo is None:
            results = self._annotate(batch)
        else:
            results = self._memo.results(batch, self._annotate)
        if self._paired:
            items = batch if self._memo is None else [item for item, _ in batch]
            if len(results) != len(items):
                raise ValueError(f"the model returned {len(results)} results for {len(items)} articles")
            results = [r if isinstance(r, Reject) else (item, r) for item, r in zip(items, results)]
        yield from self._tally.route(len(batch), results)


class AnnotateWithModel(beam.PTransform):
    """Batch passage splits (or, with `articles`, whole articles) and annotate them with a model
    backend on the workers; `passage` lets the backend skip rests that cannot matter. With
    `work` (a work folder), the results are kept there and a rerun annotates only the items
    whose results are not. With `paired`, the annotated output holds `(item, annotations)`
    pairs, for a step that needs both without a join."""

    def __init__(self, annotator: AnnotatorSection, coref: CorefSection, name: str,
                 passage: Optional[PassageSection] = None, articles: bool = False,
                 work: WorkLike = None, paired: bool = False):
        super().__init__()
        self._paired = paired
        self._annotator = annotator
        self._coref = coref
        self._name = name
        self._passage = passage
        self._articles = articles
        self._memo = annotation_memo(work, name, articles)

    def expand(self, items):
        section, memo = self._annotator, self._memo
        if memo is not None:
            article_of = article_itself if self._articles else (lambda split: split.article)
            # The join's grouping is the last before the model: balance it as `OrderByWork` says.
            items = (items | "OrderByWork" >> OrderByWork(article_of=article_of)
                     | "AttachStored" >> memo.attach())
        results = (
            items
            # Whole articles per model call; spaCy batches their texts again (batch_size).
            | "Batch" >> beam.BatchElements(min_batch_size=section.min_articles_per_call,
                                            max_batch_size=section.max_articles_per_call)
            | "RunModel" >> beam.ParDo(AnnotateFn(section, self._coref, self._name, shared.Shared(),
                                                  self._passage, self._articles, memo, self._paired))
            .with_outputs(REJECTS, TALLIES, main="annotated")
        )
        return results.annotated, results[REJECTS], results[TALLIES]

