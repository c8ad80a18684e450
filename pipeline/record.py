"""The ReCoRD generator, stages 1-2: curated passages and cloze queries as Parquet shards."""
from __future__ import annotations

from typing import Optional, Sequence

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions

from pipeline.runner import clear_output, default_options, run_pipeline
from transforms.core.accounting import Ledger, Stage, Summarize
from transforms.core.dedup import DEDUP_NEAR, DropNearDuplicates
from transforms.core.io import WriteTable, read_summary, write_json
from transforms.record.annotate import STAGE as ANNOTATE_STAGE
from transforms.record.annotate.compare import CompareAnnotations, agreement
from transforms.record.annotate.stage import Annotate
from transforms.record.curate import (
    DEDUP_ID,
    PASSAGE_STAGE,
    SPLIT,
    DropDuplicateIds,
    filter_passage,
    make_split_fn,
    passage_row,
    shingles,
)
from transforms.record.machine_filter import STAGE as MACHINE_STAGE
from transforms.record.machine_filter import MachineFilter, fold_summary
from transforms.record.queries import SENTENCE_STAGE, sentence_queries
from transforms.record.read import STAGE as READ_STAGE
from transforms.record.read import ReadArticles, read_url_list
from transforms.record.readers import make_reader

STAGES = [READ_STAGE, DEDUP_ID, DEDUP_NEAR, SPLIT, ANNOTATE_STAGE, PASSAGE_STAGE, SENTENCE_STAGE]


TABLES = ("passages", "queries", "rejects")


class GenerateRecord(beam.PTransform):
    """Stages 1-2 from input patterns to Parquet under `output`; writes `summary.json` too."""

    def __init__(self, spec: dict, inputs: Sequence[str], output: str,
                 url_lists: Sequence[str] = ()):
        super().__init__()
        self._spec = spec
        self._inputs = list(inputs)
        self._output = output.rstrip("/")
        self._url_lists = list(url_lists)

    def expand(self, pbegin):
        spec, out = self._spec, self._output
        near = spec["curation"]["near_duplicates"]
        shards = int(spec["output"]["num_shards"])
        ledger = Ledger()
        collect = ledger.add
        articles = collect(pbegin | "ReadArticles" >> ReadArticles(
            self._inputs, spec["input"]["default_source"]))
        url_info = None
        if self._url_lists:
            url_info = (pbegin | "UrlListPaths" >> beam.Create(self._url_lists)
                        | "ReadUrlLists" >> beam.FlatMap(read_url_list))
        articles = collect(articles | "DropDuplicateIds" >> DropDuplicateIds(url_info))
        if near["enabled"]:
            size = int(near["shingle_size"])
            articles = collect(articles | "DropNearDuplicates" >> DropNearDuplicates(
                float(near["threshold"]), int(near["num_perm"]), int(spec["seed"]),
                shingles=lambda a: shingles(a, size), key=lambda a: a.id,
                max_bucket=int(near["max_bucket"])))
        splits = collect(articles | "SplitPassages" >> Stage(SPLIT, make_split_fn(spec)))
        annotated = collect(splits | "Annotate" >> Annotate(spec))
        passages = collect(annotated | "FilterPassages" >> Stage(
            PASSAGE_STAGE, lambda a: filter_passage(a, spec)))
        sentence_results = collect(passages | "FilterSentences" >> Stage(
            SENTENCE_STAGE, lambda a: sentence_queries(a, spec), units=lambda a: len(a.sentences)))
        queries = sentence_results | "FlattenQueries" >> beam.FlatMap(lambda rows: rows)

        (passages | "PassageRows" >> beam.Map(passage_row)
         | "WritePassages" >> WriteTable(out, "passages", shards))
        queries | "WriteQueries" >> WriteTable(out, "queries", shards)
        (ledger.rejects | "FlattenRejects" >> beam.Flatten()
         | "RejectRows" >> beam.Map(lambda r: r.row())
         | "WriteRejects" >> WriteTable(out, "rejects", shards))
        return (ledger.tallies | "FlattenAllTallies" >> beam.Flatten()
                | "Summarize" >> Summarize(f"{out}/summary.json", STAGES))


def run_record(spec: dict, inputs: Sequence[str], output: str, url_lists: Sequence[str] = (),
               options: Optional[PipelineOptions] = None):
    """Build and run the generator; returns the finished PipelineResult."""
    clear_output(output, TABLES)
    pipeline = beam.Pipeline(options=options or default_options())
    pipeline | "GenerateRecord" >> GenerateRecord(spec, inputs, output, url_lists)
    return run_pipeline(pipeline)


FILTER_TABLES = ("passages", "queries", "dropped", "rejects", "models")


FILTER_FILES = ("summary.json", "stages.json", "folds.json")


class FilterRecord(beam.PTransform):
    """Stage 3 from a generate run's Parquet to `output` (kept, dropped, rejects, per-fold stats)."""

    def __init__(self, spec: dict, run_dir: str, output: str, choice: str, folds: int):
        super().__init__()
        self._spec, self._run_dir, self._output = spec, run_dir.rstrip("/"), output.rstrip("/")
        self._choice, self._folds = choice, folds

    def expand(self, pbegin):
        spec, out = self._spec, self._output
        shards = int(spec["output"]["num_shards"])
        section = spec["filter"]
        passages = pbegin | "ReadPassages" >> beam.io.ReadFromParquet(f"{self._run_dir}/passages/*.parquet")
        queries = pbegin | "ReadQueries" >> beam.io.ReadFromParquet(f"{self._run_dir}/queries/*.parquet")
        kept, dropped, rejects, tallies, fold_stats = (passages, queries) | "MachineFilter" >> MachineFilter(
            make_reader(self._choice, spec), self._choice, out, self._folds, int(spec["seed"]),
            int(section["max_train_triples"]), int(section["max_triples_per_call"]))
        passages | "WritePassages" >> WriteTable(out, "passages", shards)
        kept | "WriteKept" >> WriteTable(out, "queries", shards, schema="filtered_queries")
        dropped | "WriteDropped" >> WriteTable(out, "dropped", shards, schema="filtered_queries")
        (rejects | "RejectRows" >> beam.Map(lambda r: r.row())
         | "WriteRejects" >> WriteTable(out, "rejects", shards))
        tallies | "Summarize" >> Summarize(f"{out}/stages.json", [MACHINE_STAGE])
        return (fold_stats
                | "SumPerFold" >> beam.CombinePerKey(lambda values: tuple(map(sum, zip(*values))))
                | "CollectFolds" >> beam.combiners.ToList()
                | "WriteFolds" >> beam.Map(lambda stats: write_json(f"{out}/folds.json",
                                                                    {"folds": sorted(stats)})))


def run_filter(spec: dict, run_dir: str, output: str, choice: Optional[str] = None,
               folds: Optional[int] = None, options: Optional[PipelineOptions] = None) -> dict:
    """Run the machine filter and write `summary.json`; returns the summary."""
    choice = choice or spec["filter"]["reader"]
    folds = int(folds or spec["filter"]["folds"])
    if folds < 2:
        raise ValueError("machine filtering needs at least 2 folds")
    clear_output(output, FILTER_TABLES, FILTER_FILES)
    pipeline = beam.Pipeline(options=options or default_options())
    pipeline | "FilterRecord" >> FilterRecord(spec, run_dir, output, choice, folds)
    run_pipeline(pipeline)
    out = output.rstrip("/")
    stages = read_summary(f"{out}/stages.json")["stages"]
    fold_stats = [(fold, tuple(values)) for fold, values in read_summary(f"{out}/folds.json")["folds"]]
    summary = fold_summary(choice, fold_stats, stages)
    write_json(f"{out}/summary.json", summary)
    return summary


def with_annotator(spec: dict, name: str) -> dict:
    """A copy of `spec` whose annotator is `name` for every input (no per-input routing)."""
    import copy

    changed = copy.deepcopy(spec)
    changed["annotator"]["name"] = name
    changed["annotator"]["per_input"] = {}
    return changed


class CompareRecordAnnotators(beam.PTransform):
    """Stage 1 once, then two annotators over the same passages, and their agreement."""

    def __init__(self, spec: dict, name_a: str, name_b: str, inputs: Sequence[str], output: str,
                 url_lists: Sequence[str] = ()):
        super().__init__()
        self._spec, self._a, self._b = spec, name_a, name_b
        self._inputs, self._output, self._url_lists = list(inputs), output.rstrip("/"), list(url_lists)

    def expand(self, pbegin):
        spec, out = self._spec, self._output
        articles, _, _ = pbegin | "ReadArticles" >> ReadArticles(self._inputs, spec["input"]["default_source"])
        url_info = None
        if self._url_lists:
            url_info = (pbegin | "UrlListPaths" >> beam.Create(self._url_lists)
                        | "ReadUrlLists" >> beam.FlatMap(read_url_list))
        articles, _, _ = articles | "DropDuplicateIds" >> DropDuplicateIds(url_info)
        splits, _, _ = articles | "SplitPassages" >> Stage(SPLIT, make_split_fn(spec))
        a, rejects_a, _ = splits | "AnnotateA" >> Annotate(with_annotator(spec, self._a))
        b, rejects_b, _ = splits | "AnnotateB" >> Annotate(with_annotator(spec, self._b))
        counts = (a, b) | "Compare" >> CompareAnnotations()
        rejected = (
            (rejects_a | "RejectedA" >> beam.Map(lambda r: (("a", r.reason), 1))),
            (rejects_b | "RejectedB" >> beam.Map(lambda r: (("b", r.reason), 1))),
        ) | "FlattenRejected" >> beam.Flatten() | "CountRejected" >> beam.CombinePerKey(sum) \
            | "CollectRejected" >> beam.combiners.ToList()
        names = (self._a, self._b)
        return counts | "WriteReport" >> beam.Map(
            lambda c, rej: write_json(f"{out}/compare.json", {
                "a": names[0], "b": names[1], **agreement(c),
                "rejected": {side: {reason: n for (s, reason), n in sorted(rej) if s == side}
                             for side in ("a", "b")}}),
            beam.pvalue.AsSingleton(rejected))


def run_compare(spec: dict, name_a: str, name_b: str, inputs: Sequence[str], output: str,
                url_lists: Sequence[str] = (), options: Optional[PipelineOptions] = None) -> dict:
    """Annotate the same passages with two backends; write and return `compare.json`."""
    import json

    clear_output(output, (), ("compare.json",))
    pipeline = beam.Pipeline(options=options or default_options())
    pipeline | "CompareAnnotators" >> CompareRecordAnnotators(spec, name_a, name_b, inputs, output, url_lists)
    run_pipeline(pipeline)
    with FileSystems.open(f"{output.rstrip('/')}/compare.json") as handle:
        return json.loads(handle.read().decode("utf-8"))


def run_annotation_inputs(spec: dict, inputs: Sequence[str], output: str, url_lists: Sequence[str] = (),
                          options: Optional[PipelineOptions] = None) -> None:
    """Write `coref_input.jsonl` and `ner_input.jsonl` for `allennlp predict` (one shard each)."""
    from transforms.record.annotate.backends.allennlp import write_inputs

    pipeline = beam.Pipeline(options=options or default_options())
    articles, _, _ = pipeline | "ReadArticles" >> ReadArticles(list(inputs), spec["input"]["default_source"])
    url_info = None
    if url_lists:
        url_info = (pipeline | "UrlListPaths" >> beam.Create(list(url_lists))
                    | "ReadUrlLists" >> beam.FlatMap(read_url_list))
    articles, _, _ = articles | "DropDuplicateIds" >> DropDuplicateIds(url_info)
    lines = articles | "InputLines" >> beam.Map(lambda a: write_inputs([a]))
    out = output.rstrip("/")
    for index, name in ((0, "coref_input"), (1, "ner_input")):
        (lines | f"Lines{index}" >> beam.FlatMap(lambda pair, i=index: pair[i])
         | f"Write{index}" >> beam.io.WriteToText(f"{out}/{name}", file_name_suffix=".jsonl",
                                                 num_shards=1, shard_name_template=""))
    run_pipeline(pipeline)
