"""Stored annotations (`csdata record annotate`) joined with the splits: the stored rows read from
their Parquet shards and keyed by article id, one `GroupByKey` over both sides, and the splits
whose text and model settings match their stored annotations assembled from them; the others go
through the model (`AnnotateFromStore`).
"""
from __future__ import annotations

from typing import Any, Iterable, Iterator, Optional, Sequence

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics import Metrics
from apache_beam.transforms.window import GlobalWindows

from data_specs.models import AnnotatorSection, CorefSection, PassageSection
from transforms.core.accounting import NAMESPACE, REJECTS, TALLIES
from transforms.core.dedup import SIGNATURE_SIDE
from transforms.core.resume.memo import WorkLike
from transforms.core.stages import BundleTally, split_sides
from transforms.record.annotate import STAGE
from transforms.record.annotate.assemble import assemble_units
from transforms.record.annotate.coref import make_coreferencer
from transforms.record.annotate.model import AnnotateWithModel
from transforms.record.annotate.registry import check_cacheable
from transforms.record.annotate.store import TABLE, match_stored, model_settings, settings_key

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
    signature of one shard that was made as `key` (`store.minhash_key`) says (none from rows
    stored without one)."""
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

