"""ReCoRD's Beam pipelines (stages 1-3) and the library calls that run them.

Imported by `pipeline.cli.record` only when a command runs a pipeline, so that `csdata --help`,
`record export` and `stats` never import Beam.
"""
from __future__ import annotations

import json
from fractions import Fraction
from functools import partial
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions

from data_specs import RecordSpec
from pipeline.engine.runner import clear_output, new_pipeline, run_pipeline
from transforms.core.accounting import Reject
from transforms.core.coders import RejectCoder  # noqa: F401  (registers the coder of Reject)
from transforms.core.dedup import DEDUP_NEAR, DropNearDuplicates, MinHasher
from transforms.core.errors import UserError
from transforms.core.io.sinks import WriteTable, WriteTables
from transforms.core.io.tables import read_summary, write_json
from transforms.core.progress.steps import ProgressLine
from transforms.core.reporting.provenance import file_metadata
from transforms.core.resume.checkpoint import Checkpoint
from transforms.core.resume.memo import resume_work
from transforms.core.stages import ChainedStages, Ledger, StageStep, Summarize
from transforms.record.annotate import STAGE as ANNOTATE_STAGE
from transforms.record.annotate.backends.allennlp import write_inputs
from transforms.record.annotate.compare import CompareAnnotations, compare_report
from transforms.record.annotate.order import OrderByWork
from transforms.record.annotate.registry import check_cacheable, check_models, single_backend
from transforms.record.annotate.reuse import SIGNATURE_OUTPUT, ReadStoredAnnotations, article_minhash
from transforms.record.annotate.stage import Annotate, AnnotateArticles
from transforms.record.annotate.store import TABLE as ANNOTATIONS_TABLE
from transforms.record.annotate.store import annotation_row, minhash_key
from transforms.record.article import Article
from transforms.record.curate import (
    DEDUP_ID,
    PASSAGE_STAGE,
    SPLIT,
    DropDuplicateIds,
    filter_passage,
    make_split_fn,
    passage_row,
    splittable,
)
from transforms.record.entries import ReadKeptAndSplit, SignEntries, article_entry, entry_order
from transforms.record.formats import read_url_list
from transforms.record.machine_filter import STAGE as MACHINE_STAGE
from transforms.record.machine_filter import MachineFilter, fold_summary
from transforms.record.queries import SENTENCE_STAGE, sentence_queries
from transforms.record.read import STAGE as READ_STAGE
from transforms.record.read import ReadArticles
from transforms.record.readers import check_reader

TABLES = ("passages", "queries", "rejects")
FILTER_TABLES = ("passages", "queries", "dropped", "rejects", "models")
FILTER_FILES = ("summary.json", "stages.json", "folds.json")
STAGES = [READ_STAGE, DEDUP_ID, DEDUP_NEAR, SPLIT, ANNOTATE_STAGE, PASSAGE_STAGE, SENTENCE_STAGE]
ANNOTATE_STAGES = [READ_STAGE, DEDUP_ID, SPLIT, ANNOTATE_STAGE]
ANNOTATE_TABLES = (ANNOTATIONS_TABLE, "rejects")
# The reuse outcomes' tallies of a generate run with stored annotations (summary.json's entry
# of that name, which `run_record` turns into its `annotations` entry).
REUSE_SECTION = "annotation_reuse"
CURATED = "curated"   # the checkpoint of stages read to passage_split, in the work folder
# Splits per part of that checkpoint: the parts are what is dealt out to the annotating workers.
CURATED_PART = 200


def read_url_info(pbegin, url_lists: Sequence[str]) -> Optional[beam.PCollection]:
    """(article id, (url, source, split)) of the published URL lists, or None without any."""
    if not url_lists:
        return None
    return (pbegin | "UrlListPaths" >> beam.Create(list(url_lists))
            | "ReadUrlLists" >> beam.FlatMap(read_url_list))


class GenerateRecord(beam.PTransform):
    """Stages 1-2 from input patterns to Parquet under `output`; writes `summary.json` too.

    With `annotations` (the output of `csdata record annotate`), articles whose text and model
    settings match their stored annotations are not annotated again; how many were reused is
    written to summary.json's `REUSE_SECTION` entry. With `work` (the run's work folder), the
    model's annotations are kept there and a rerun after a kill annotates only the others.
    """

    def __init__(self, spec: RecordSpec, inputs: Sequence[str], output: str,
                 url_lists: Sequence[str] = (), progress: bool = True,
                 annotations: Optional[str] = None, file_metadata: Optional[dict[str, str]] = None,
                 work: Optional[str] = None):
        super().__init__()
        self._spec = spec
        self._meta = file_metadata   # every Parquet file's key-value metadata
        self._inputs = list(inputs)
        self._output = output.rstrip("/")
        self._url_lists = list(url_lists)
        self._progress = progress
        self._annotations = annotations
        self._work = work

    def expand(self, pbegin):
        spec, out = self._spec, self._output
        near, passage, query = spec.curation.near_duplicates, spec.passage, spec.query
        shards = spec.output.num_shards
        ledger = Ledger()
        progress = ProgressLine(self._progress)
        signatures = stored = None
        if self._annotations:   # one pass over the stored shards: rows for Annotate, signatures for dedup
            read = pbegin | "StoredAnnotations" >> ReadStoredAnnotations(
                self._annotations, minhash_key(near.shingle_size, near.num_perm, spec.seed))
            stored, signatures = read.rows, (read[SIGNATURE_OUTPUT] if near.enabled else None)
        # Reading and curation are kept in the work folder once done: a rerun starts after them,
        # and a clean run goes on from the splits read back from there (none waits in a grouping).
        curated = Checkpoint(self._work, CURATED, part_size=CURATED_PART)
        restored = curated.restored(pbegin)
        if restored is None:
            part = Ledger()
            splits = self._curate(pbegin, part, progress, signatures)
            splits = curated.keep_then_read(splits, part.rejects, part.tallies)
            ledger.rejects.extend(part.rejects)
            ledger.tallies.extend(part.tallies)
        else:
            splits = ledger.add(restored) | "ProgressRestored" >> progress.step("restored", "articles")
        collect = ledger.add
        annotate = Annotate(spec.annotator, spec.coref, passage, self._annotations, stored,
                            resume_work(self._work, spec.output.resume_every))
        annotated = collect(splits | "Annotate" >> annotate)
        if annotate.reuse is not None:   # summed with the tallies, into summary.json's REUSE_SECTION
            ledger.tallies.append(annotate.reuse | "ReuseTallies" >> beam.Map(
                lambda outcome_count: ((REUSE_SECTION, outcome_count[0]), outcome_count[1])))
        annotated = annotated | "ProgressAnnotated" >> progress.step("annotated", "articles")
        # Both filters and the passage rows in one step (each stage keeps its own accounting).
        queries, rejects, tallies, passage_rows = annotated | "FilterPassagesAndSentences" >> ChainedStages([
            StageStep(PASSAGE_STAGE, lambda a: filter_passage(a, passage),
                      emit=lambda a: (passage_row(a),), output="passages"),
            StageStep(SENTENCE_STAGE, lambda a: sentence_queries(a, query),
                      units=lambda a: len(a.sentences), emit=lambda rows: rows)])
        collect((queries, rejects, tallies))
        queries = queries | "ProgressQueries" >> progress.step("written", "queries")

        write_with_rejects({"passages": passage_rows, "queries": queries}, ledger, out, shards, self._meta)
        return (ledger.tallies | "FlattenAllTallies" >> beam.Flatten()
                | "Summarize" >> Summarize(f"{out}/summary.json", STAGES, sections=(REUSE_SECTION,), few=True))

    def _curate(self, pbegin, ledger: Ledger, progress: ProgressLine,
                signatures: Optional[beam.PCollection]) -> beam.PCollection:
        """Read, drop duplicate ids and near duplicates, split passages: the passage splits.

        The groupings carry `ArticleEntry`s, not texts: the kept articles are read again from
        their files to be split (`transforms.record.entries`). With `signatures` (stored with
        annotations), entries are signed with them where the content matches."""
        spec = self._spec
        near, passage = spec.curation.near_duplicates, spec.passage
        collect = ledger.add
        hasher = MinHasher(near.threshold, near.num_perm, spec.seed) if near.enabled else None
        # Signed where read, unless stored signatures may spare the shingles (`SignEntries`).
        entry = partial(article_entry, hasher=hasher if signatures is None else None,
                        shingle_size=near.shingle_size)
        entries = collect(pbegin | "ReadArticles" >> ReadArticles(self._inputs, spec.input, progress, entry=entry))
        entries = entries | "ProgressRead" >> progress.step("read", "articles")
        url_info = read_url_info(pbegin, self._url_lists)
        entries = collect(entries | "DropDuplicateIds" >> DropDuplicateIds(url_info))
        if hasher is not None:
            if signatures is not None:
                entries = entries | "SignEntries" >> SignEntries(signatures, hasher, spec.input, near.shingle_size)
            entries = collect(entries | "DropNearDuplicates" >> DropNearDuplicates(
                near.threshold, near.num_perm, spec.seed, shingles=None, key=lambda e: e.id,
                max_bucket=near.max_bucket, signature=lambda e: e.signature))
        # Without a work folder the read-again grouping feeds the model: the local runner deals
        # its keys out in turn, so they arrive in pairs of near-equal work.
        entries = entries | "OrderByWork" >> OrderByWork(order=entry_order)
        return collect(entries | "SplitPassages" >> ReadKeptAndSplit(spec.input, make_split_fn(passage)))


def deduplicated(pbegin, inputs: Sequence[str], spec: RecordSpec, url_lists: Sequence[str],
                 then: Callable[[Article], Iterable[Any]]) -> beam.PCollection:
    """`then(article)` of each article of `inputs` left after dropping duplicate ids (URL-list
    fields joined), its rejects left out: for the tools that annotate or export what a generate
    run would read. The grouping carries entries; the kept articles are read again."""
    entries, _, _ = pbegin | "ReadArticles" >> ReadArticles(list(inputs), spec.input, entry=article_entry)
    url_info = read_url_info(pbegin, url_lists)
    entries, _, _ = entries | "DropDuplicateIds" >> DropDuplicateIds(url_info)
    kept, _, _ = entries | "ReadKept" >> ReadKeptAndSplit(spec.input, then)
    return kept


def write_with_rejects(tables: dict[str, beam.PCollection], ledger: Ledger, out: str, shards: int,
                       file_metadata: Optional[Mapping[str, str]]) -> beam.PCollection:
    """`WriteTables` of `tables` (name: rows) and the "rejects" table, whose parts are the
    ledger's: each stage's rejects are written in that stage, so none cross to a writer."""
    names = (*tables, *["rejects"] * len(ledger.rejects))
    return (*tables.values(), *ledger.rejects) | "WriteTables" >> WriteTables(
        out, names, shards, file_metadata=file_metadata, row_of={"rejects": Reject.row})


def reuse_summary(counts: dict[str, int], source: str) -> dict:
    """The `annotations` entry of summary.json: articles, reused, annotated (and why)."""
    articles = sum(counts.values())
    fresh = {k: v for k, v in sorted(counts.items()) if k != "reused"}
    return {"source": source, "articles": articles, "reused": counts.get("reused", 0),
            "annotated": sum(fresh.values()), "annotated_because": fresh}


def run_record(spec: RecordSpec, inputs: Sequence[str], output: str, url_lists: Sequence[str] = (),
               options: Optional[PipelineOptions] = None, annotations: Optional[str] = None,
               work: Optional[str] = None):
    """Build and run the generator; returns the finished PipelineResult.

    With `annotations`, stored annotations are reused where they match, and summary.json gets
    an `annotations` entry (`reuse_summary`). With `work` (a work folder for this spec, these
    inputs and models), the model's results are kept there and reused by a rerun.
    """
    check_models(spec.annotator)
    if annotations:
        check_cacheable(spec.annotator)
    clear_output(output, TABLES, ("summary.json",))
    pipeline = new_pipeline(options)
    pipeline | "GenerateRecord" >> GenerateRecord(
        spec, inputs, output, url_lists, annotations=annotations,
        file_metadata=file_metadata(spec, [*inputs, *url_lists]), work=work)
    result = run_pipeline(pipeline)
    if annotations:
        path = f"{output.rstrip('/')}/summary.json"
        summary = read_summary(path)
        summary["annotations"] = reuse_summary(summary.pop(REUSE_SECTION, {}), annotations)
        write_json(path, summary)
    return result


class AnnotateRecordArticles(beam.PTransform):
    """`csdata record annotate`: read, drop duplicate ids, annotate every article some passage
    split could send to annotation; write `annotations/`, `rejects/` and `summary.json`.

    Near duplicates are kept and no split is made: curation settings and the passage split are
    applied by the generate runs that reuse these annotations. With `work`, the model's results
    are kept there and reused by a rerun.
    """

    def __init__(self, spec: RecordSpec, inputs: Sequence[str], output: str, progress: bool = True,
                 file_metadata: Optional[dict[str, str]] = None, work: Optional[str] = None):
        super().__init__()
        self._spec, self._inputs, self._output = spec, list(inputs), output.rstrip("/")
        self._progress = progress
        self._meta = file_metadata
        self._work = work

    def expand(self, pbegin):
        spec, out = self._spec, self._output
        shards = spec.output.num_shards
        ledger = Ledger()
        collect = ledger.add
        progress = ProgressLine(self._progress)
        # The grouping by id carries entries; the kept articles are read again from their files.
        entries = collect(pbegin | "ReadArticles" >> ReadArticles(self._inputs, spec.input, progress,
                                                                  entry=article_entry))
        entries = entries | "ProgressRead" >> progress.step("read", "articles")
        entries = collect(entries | "DropDuplicateIds" >> DropDuplicateIds())
        # The read-again grouping feeds the model: keys in pairs of near-equal work (`OrderByWork`).
        entries = entries | "OrderByWork" >> OrderByWork(order=entry_order)
        articles = collect(entries | "Splittable" >> ReadKeptAndSplit(spec.input, splittable))
        # Each annotation comes out with its article, whose texts (the NER post-rules) and, with
        # near-duplicate removal on, MinHash signature go into its row: no join.
        pairs = collect(articles | "Annotate" >> AnnotateArticles(
            spec.annotator, spec.coref, resume_work(self._work, spec.output.resume_every), paired=True))
        pairs = pairs | "ProgressAnnotated" >> progress.step("annotated", "articles")
        near = spec.curation.near_duplicates
        rules = tuple(spec.annotator.ner_rules)
        hasher = MinHasher(near.threshold, near.num_perm, spec.seed) if near.enabled else None
        key, size = minhash_key(near.shingle_size, near.num_perm, spec.seed), near.shingle_size
        rows = pairs | "AnnotationRows" >> beam.Map(lambda pair: annotation_row(
            pair[1], article_minhash(pair[0], hasher, key, size), [*pair[0].paragraphs, *pair[0].highlights], rules))
        write_with_rejects({ANNOTATIONS_TABLE: rows}, ledger, out, shards, self._meta)
        return (ledger.tallies | "FlattenAllTallies" >> beam.Flatten()
                | "Summarize" >> Summarize(f"{out}/summary.json", ANNOTATE_STAGES, few=True))


def run_annotate(spec: RecordSpec, inputs: Sequence[str], output: str,
                 options: Optional[PipelineOptions] = None, work: Optional[str] = None):
    """Annotate the articles of `inputs` once, for later generate runs; returns the PipelineResult.
    With `work`, the model's results are kept there and reused by a rerun."""
    check_cacheable(spec.annotator)
    check_models(spec.annotator)
    clear_output(output, ANNOTATE_TABLES)
    pipeline = new_pipeline(options)
    pipeline | "AnnotateRecord" >> AnnotateRecordArticles(
        spec, inputs, output, file_metadata=file_metadata(spec, inputs), work=work)
    return run_pipeline(pipeline)


class FilterRecord(beam.PTransform):
    """Stage 3 from a generate run's Parquet to `output` (kept, dropped, rejects, per-fold stats).

    The reader and the number of folds are the spec's `filter.reader` and `filter.folds`.
    """

    def __init__(self, spec: RecordSpec, run_dir: str, output: str, progress: bool = True,
                 file_metadata: Optional[dict[str, str]] = None):
        super().__init__()
        self._spec, self._run_dir, self._output = spec, run_dir.rstrip("/"), output.rstrip("/")
        self._progress = progress
        self._meta = file_metadata

    def expand(self, pbegin):
        spec, out = self._spec, self._output
        shards = spec.output.num_shards
        passages = pbegin | "ReadPassages" >> beam.io.ReadFromParquet(f"{self._run_dir}/passages/*.parquet")
        queries = pbegin | "ReadQueries" >> beam.io.ReadFromParquet(f"{self._run_dir}/queries/*.parquet")
        progress = ProgressLine(self._progress)
        queries = queries | "ProgressRead" >> progress.step("read", "triples")
        kept, dropped, rejects, tallies, fold_stats = (passages, queries) | "MachineFilter" >> MachineFilter(
            spec.filter, spec.seed, out, progress=progress)
        meta = self._meta
        passages | "WritePassages" >> WriteTable(out, "passages", shards, file_metadata=meta)
        kept | "WriteKept" >> WriteTable(out, "queries", shards, schema="filtered_queries", file_metadata=meta)
        dropped | "WriteDropped" >> WriteTable(out, "dropped", shards, schema="filtered_queries",
                                               file_metadata=meta)
        (rejects | "RejectRows" >> beam.Map(lambda r: r.row())
         | "WriteRejects" >> WriteTable(out, "rejects", shards, file_metadata=meta))
        tallies | "Summarize" >> Summarize(f"{out}/stages.json", [MACHINE_STAGE])
        return (fold_stats
                | "SumPerFold" >> beam.CombinePerKey(exact_sums)
                | "CollectFolds" >> beam.combiners.ToList()
                | "WriteFolds" >> beam.Map(lambda stats: write_json(f"{out}/folds.json", {"folds": sorted(
                    (fold, tuple(float(v) if isinstance(v, Fraction) else v for v in sums))
                    for fold, sums in stats)})))


def exact_sums(values: Iterable[tuple]) -> tuple:
    """The column sums of `values`, floats summed exactly (as fractions): a float sum depends
    on the order of its terms, which differs between runners and bundle splits."""
    return tuple(sum(Fraction(v) if isinstance(v, float) else v for v in column) for column in zip(*values))


def run_filter(spec: RecordSpec, run_dir: str, output: str, choice: Optional[str] = None,
               folds: Optional[int] = None, options: Optional[PipelineOptions] = None) -> dict:
    """Run the machine filter and write `summary.json`; returns the summary.

    `choice` and `folds` replace the spec's `filter.reader` and `filter.folds` when given.
    """
    choice = choice or spec.filter.reader
    folds = folds or spec.filter.folds
    if folds < 2:
        raise UserError(f"machine filtering needs at least 2 folds, got --folds {folds}")
    check_reader(choice)
    spec = spec.model_copy(update={"filter": spec.filter.model_copy(
        update={"reader": choice, "folds": folds})})
    clear_output(output, FILTER_TABLES, FILTER_FILES)
    pipeline = new_pipeline(options)
    tables = [f"{run_dir.rstrip('/')}/{table}" for table in ("passages", "queries")]
    pipeline | "FilterRecord" >> FilterRecord(spec, run_dir, output,
                                              file_metadata=file_metadata(spec, tables))
    run_pipeline(pipeline)
    out = output.rstrip("/")
    stages = read_summary(f"{out}/stages.json")["stages"]
    fold_stats = [(fold, tuple(values)) for fold, values in read_summary(f"{out}/folds.json")["folds"]]
    summary = fold_summary(choice, fold_stats, stages)
    write_json(f"{out}/summary.json", summary)
    return summary


def with_annotator(spec: RecordSpec, name: str) -> RecordSpec:
    """A copy of `spec` whose annotator is `name` for every input (no per-input routing)."""
    return spec.model_copy(update={"annotator": single_backend(spec.annotator, name)})


class CompareRecordAnnotators(beam.PTransform):
    """Stage 1 once, then two annotators over the same passages, and their agreement."""

    def __init__(self, spec: RecordSpec, name_a: str, name_b: str, inputs: Sequence[str], output: str,
                 url_lists: Sequence[str] = ()):
        super().__init__()
        self._spec, self._a, self._b = spec, name_a, name_b
        self._inputs, self._output, self._url_lists = list(inputs), output.rstrip("/"), list(url_lists)

    def expand(self, pbegin):
        spec, out = self._spec, self._output
        splits = deduplicated(pbegin, self._inputs, spec, self._url_lists, make_split_fn(spec.passage))
        a, rejects_a, _ = splits | "AnnotateA" >> Annotate(single_backend(spec.annotator, self._a), spec.coref)
        b, rejects_b, _ = splits | "AnnotateB" >> Annotate(single_backend(spec.annotator, self._b), spec.coref)
        counts = (a, b) | "Compare" >> CompareAnnotations()
        rejected = (
            (rejects_a | "RejectedA" >> beam.Map(lambda r: (("a", r.reason), 1))),
            (rejects_b | "RejectedB" >> beam.Map(lambda r: (("b", r.reason), 1))),
        ) | "FlattenRejected" >> beam.Flatten() | "CountRejected" >> beam.CombinePerKey(sum) \
            | "CollectRejected" >> beam.combiners.ToList()
        names = (self._a, self._b)
        return counts | "WriteReport" >> beam.Map(
            lambda c, rej: write_json(f"{out}/compare.json", compare_report(names[0], names[1], c, rej)),
            beam.pvalue.AsSingleton(rejected))


def run_compare(spec: RecordSpec, name_a: str, name_b: str, inputs: Sequence[str], output: str,
                url_lists: Sequence[str] = (), options: Optional[PipelineOptions] = None) -> dict:
    """Annotate the same passages with two backends; write and return `compare.json`."""
    for name in (name_a, name_b):
        check_models(single_backend(spec.annotator, name))
    clear_output(output, (), ("compare.json",))
    pipeline = new_pipeline(options)
    pipeline | "CompareAnnotators" >> CompareRecordAnnotators(spec, name_a, name_b, inputs, output, url_lists)
    run_pipeline(pipeline)
    with FileSystems.open(f"{output.rstrip('/')}/compare.json") as handle:
        return json.loads(handle.read().decode("utf-8"))


def run_annotation_inputs(spec: RecordSpec, inputs: Sequence[str], output: str,
                          url_lists: Sequence[str] = (), options: Optional[PipelineOptions] = None) -> None:
    """Write `coref_input.jsonl` and `ner_input.jsonl` for `allennlp predict` (one shard each)."""
    pipeline = new_pipeline(options)
    articles = deduplicated(pipeline, inputs, spec, url_lists, lambda article: [article])
    lines = articles | "InputLines" >> beam.Map(lambda a: write_inputs([a]))
    out = output.rstrip("/")
    for index, name in ((0, "coref_input"), (1, "ner_input")):
        (lines | f"Lines{index}" >> beam.FlatMap(lambda pair, i=index: pair[i])
         | f"Write{index}" >> beam.io.WriteToText(f"{out}/{name}", file_name_suffix=".jsonl",
                                                 num_shards=1, shard_name_template=""))
    run_pipeline(pipeline)
