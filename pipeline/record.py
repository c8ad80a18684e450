"""ReCoRD (Zhang et al. 2018): news articles to cloze queries, the machine filter, the crowd round trip.

    csdata record generate --input stories/ --output out/rec               # stages 1-2 (Beam)
    csdata record filter out/rec --output out/recf                         # stage 3 (Beam)
    csdata record hits export out/recf --output hits.csv                   # stage 4: crowd task
    csdata record hits import results.csv --run out/recf --output out/recv # stage 4: splits
    csdata record export out/rec --format record-json --output rec.json    # ReCoRD JSON
    csdata stats out/rec                                                   # beside the paper's Table 1

The entry points `add_commands`, `run`, `is_run`, `stats` and `demo` are called by pipeline/cli.py.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Callable, Optional, Sequence

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions

from data_specs import RecordSpec, load_dataset_spec
from pipeline.runner import clear_output, default_options, run_pipeline
from transforms.core.accounting import STAGE_UNITS, Ledger, Stage, Summarize, format_summary
from transforms.core.dedup import DEDUP_NEAR, DropNearDuplicates
from transforms.core.errors import UserError
from transforms.core.io import WriteTable, read_summary, write_json
from transforms.core.progress import ProgressLine
from transforms.record.annotate import STAGE as ANNOTATE_STAGE
from transforms.record.annotate.backends.allennlp import write_inputs
from transforms.record.annotate.compare import CompareAnnotations, compare_report
from transforms.record.annotate.stage import Annotate, check_models, single_backend
from transforms.record.crowd import export_hits, import_results
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
from transforms.record.export import EXPORTERS
from transforms.record.machine_filter import STAGE as MACHINE_STAGE
from transforms.record.machine_filter import MachineFilter, fold_summary, format_filter_summary
from transforms.record.metric import evaluate
from transforms.record.queries import SENTENCE_STAGE, sentence_queries
from transforms.record.read import STAGE as READ_STAGE
from transforms.record.read import ReadArticles, read_url_list
from transforms.record.readers import check_reader
from transforms.record.stats import format_table, record_stats

REPO_ROOT = Path(__file__).resolve().parent.parent
DEMO_DATA = REPO_ROOT / "tests" / "data" / "record"

STAGES = [READ_STAGE, DEDUP_ID, DEDUP_NEAR, SPLIT, ANNOTATE_STAGE, PASSAGE_STAGE, SENTENCE_STAGE]
TABLES = ("passages", "queries", "rejects")
FILTER_TABLES = ("passages", "queries", "dropped", "rejects", "models")
FILTER_FILES = ("summary.json", "stages.json", "folds.json")


# --------------------------------------------------------------------------------------------
# Pipelines
# --------------------------------------------------------------------------------------------


def read_url_info(pbegin, url_lists: Sequence[str]) -> Optional[beam.PCollection]:
    """(article id, (url, source, split)) of the published URL lists, or None without any."""
    if not url_lists:
        return None
    return (pbegin | "UrlListPaths" >> beam.Create(list(url_lists))
            | "ReadUrlLists" >> beam.FlatMap(read_url_list))


class GenerateRecord(beam.PTransform):
    """Stages 1-2 from input patterns to Parquet under `output`; writes `summary.json` too."""

    def __init__(self, spec: RecordSpec, inputs: Sequence[str], output: str,
                 url_lists: Sequence[str] = (), progress: bool = True):
        super().__init__()
        self._spec = spec
        self._inputs = list(inputs)
        self._output = output.rstrip("/")
        self._url_lists = list(url_lists)
        self._progress = progress

    def expand(self, pbegin):
        spec, out = self._spec, self._output
        near, passage, query = spec.curation.near_duplicates, spec.passage, spec.query
        shards = spec.output.num_shards
        ledger = Ledger()
        collect = ledger.add
        progress = ProgressLine(self._progress)
        articles = collect(pbegin | "ReadArticles" >> ReadArticles(
            self._inputs, spec.input))
        articles = articles | "ProgressRead" >> progress.step("read", "articles")
        url_info = read_url_info(pbegin, self._url_lists)
        articles = collect(articles | "DropDuplicateIds" >> DropDuplicateIds(url_info))
        if near.enabled:
            size = near.shingle_size
            articles = collect(articles | "DropNearDuplicates" >> DropNearDuplicates(
                near.threshold, near.num_perm, spec.seed,
                shingles=lambda a: shingles(a, size), key=lambda a: a.id,
                max_bucket=near.max_bucket))
        splits = collect(articles | "SplitPassages" >> Stage(SPLIT, make_split_fn(passage)))
        annotated = collect(splits | "Annotate" >> Annotate(spec.annotator, spec.coref))
        annotated = annotated | "ProgressAnnotated" >> progress.step("annotated", "articles")
        passages = collect(annotated | "FilterPassages" >> Stage(
            PASSAGE_STAGE, lambda a: filter_passage(a, passage)))
        sentence_results = collect(passages | "FilterSentences" >> Stage(
            SENTENCE_STAGE, lambda a: sentence_queries(a, query), units=lambda a: len(a.sentences)))
        queries = (sentence_results | "FlattenQueries" >> beam.FlatMap(lambda rows: rows)
                   | "ProgressQueries" >> progress.step("written", "queries"))

        (passages | "PassageRows" >> beam.Map(passage_row)
         | "WritePassages" >> WriteTable(out, "passages", shards))
        queries | "WriteQueries" >> WriteTable(out, "queries", shards)
        (ledger.rejects | "FlattenRejects" >> beam.Flatten()
         | "RejectRows" >> beam.Map(lambda r: r.row())
         | "WriteRejects" >> WriteTable(out, "rejects", shards))
        return (ledger.tallies | "FlattenAllTallies" >> beam.Flatten()
                | "Summarize" >> Summarize(f"{out}/summary.json", STAGES))


def run_record(spec: RecordSpec, inputs: Sequence[str], output: str, url_lists: Sequence[str] = (),
               options: Optional[PipelineOptions] = None):
    """Build and run the generator; returns the finished PipelineResult."""
    check_models(spec.annotator)
    clear_output(output, TABLES)
    pipeline = beam.Pipeline(options=options or default_options())
    pipeline | "GenerateRecord" >> GenerateRecord(spec, inputs, output, url_lists)
    return run_pipeline(pipeline)


class FilterRecord(beam.PTransform):
    """Stage 3 from a generate run's Parquet to `output` (kept, dropped, rejects, per-fold stats).

    The reader and the number of folds are the spec's `filter.reader` and `filter.folds`.
    """

    def __init__(self, spec: RecordSpec, run_dir: str, output: str, progress: bool = True):
        super().__init__()
        self._spec, self._run_dir, self._output = spec, run_dir.rstrip("/"), output.rstrip("/")
        self._progress = progress

    def expand(self, pbegin):
        spec, out = self._spec, self._output
        shards = spec.output.num_shards
        passages = pbegin | "ReadPassages" >> beam.io.ReadFromParquet(f"{self._run_dir}/passages/*.parquet")
        queries = pbegin | "ReadQueries" >> beam.io.ReadFromParquet(f"{self._run_dir}/queries/*.parquet")
        progress = ProgressLine(self._progress)
        queries = queries | "ProgressRead" >> progress.step("read", "triples")
        kept, dropped, rejects, tallies, fold_stats = (passages, queries) | "MachineFilter" >> MachineFilter(
            spec.filter, spec.seed, out)
        kept = kept | "ProgressKept" >> progress.step("predicted", "triples")
        dropped = dropped | "ProgressDropped" >> progress.step("predicted", "triples")
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
    pipeline = beam.Pipeline(options=options or default_options())
    pipeline | "FilterRecord" >> FilterRecord(spec, run_dir, output)
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
        articles, _, _ = pbegin | "ReadArticles" >> ReadArticles(self._inputs, spec.input)
        url_info = read_url_info(pbegin, self._url_lists)
        articles, _, _ = articles | "DropDuplicateIds" >> DropDuplicateIds(url_info)
        splits, _, _ = articles | "SplitPassages" >> Stage(SPLIT, make_split_fn(spec.passage))
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
    pipeline = beam.Pipeline(options=options or default_options())
    pipeline | "CompareAnnotators" >> CompareRecordAnnotators(spec, name_a, name_b, inputs, output, url_lists)
    run_pipeline(pipeline)
    with FileSystems.open(f"{output.rstrip('/')}/compare.json") as handle:
        return json.loads(handle.read().decode("utf-8"))


def run_annotation_inputs(spec: RecordSpec, inputs: Sequence[str], output: str,
                          url_lists: Sequence[str] = (), options: Optional[PipelineOptions] = None) -> None:
    """Write `coref_input.jsonl` and `ner_input.jsonl` for `allennlp predict` (one shard each)."""
    pipeline = beam.Pipeline(options=options or default_options())
    articles, _, _ = pipeline | "ReadArticles" >> ReadArticles(list(inputs), spec.input)
    url_info = read_url_info(pipeline, url_lists)
    articles, _, _ = articles | "DropDuplicateIds" >> DropDuplicateIds(url_info)
    lines = articles | "InputLines" >> beam.Map(lambda a: write_inputs([a]))
    out = output.rstrip("/")
    for index, name in ((0, "coref_input"), (1, "ner_input")):
        (lines | f"Lines{index}" >> beam.FlatMap(lambda pair, i=index: pair[i])
         | f"Write{index}" >> beam.io.WriteToText(f"{out}/{name}", file_name_suffix=".jsonl",
                                                 num_shards=1, shard_name_template=""))
    run_pipeline(pipeline)


# --------------------------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------------------------
# Commands that run a Beam pipeline: the arguments csdata does not know go to Beam.
BEAM_COMMANDS = ("generate", "compare-annotators", "annotation-inputs", "filter")


def add_commands(commands, add_spec_args: Callable[[argparse.ArgumentParser, str], None]) -> None:
    record = commands.add_parser("record", help="ReCoRD: news articles to cloze queries")
    record_cmds = record.add_subparsers(dest="record_command", required=True)
    generate = record_cmds.add_parser(
        "generate", help="stages 1-2: curate articles, annotate, generate cloze queries",
        description="Read CNN/DM .story files, .tgz archives or JSONL rows; write Parquet "
                    "shards under OUTPUT/{passages,queries,rejects}/ and OUTPUT/summary.json. "
                    "Other options go to Beam (e.g. --runner, --direct_running_mode).")
    generate.add_argument("--input", action="append", required=True, metavar="PATTERN",
                          help="file, directory, glob or .tgz of stories / JSONL (repeatable)")
    generate.add_argument("--output", required=True, help="output directory (local or gs://)")
    generate.set_defaults(staged_output=True)   # written beside --output, then swapped in
    generate.add_argument("--url-list", action="append", default=[], metavar="PATH",
                          help="published URL list (all_train.txt ...): url, source, split per article")
    generate.add_argument("--annotator", help="annotation backend for every input, overriding the spec: "
                          "spacy, stanza, allennlp-predictions or deepmind-metadata")
    add_spec_args(generate, "record")

    compare = record_cmds.add_parser(
        "compare-annotators", help="entity-span and chain agreement of two annotation backends",
        description="Runs stage 1 once and two backends over the same passages; prints and writes "
                    "OUTPUT/compare.json with precision/recall/F1 of B's entity spans and coreference "
                    "links against A's (A is the reference). Other options go to Beam.")
    compare.add_argument("--input", action="append", required=True, metavar="PATTERN")
    compare.add_argument("--url-list", action="append", default=[], metavar="PATH")
    compare.add_argument("--output", required=True)
    compare.set_defaults(staged_output=True)   # written beside --output, then swapped in
    compare.add_argument("--a", default="spacy", help="reference backend (default: spacy)")
    compare.add_argument("--b", required=True, help="backend compared with A")
    add_spec_args(compare, "record")

    inputs = record_cmds.add_parser(
        "annotation-inputs", help="write the input files `allennlp predict` annotates",
        description="Writes OUTPUT/coref_input.jsonl ({document, id}) and OUTPUT/ner_input.jsonl "
                    "({sentence, id, offset}) for every article read (duplicate ids dropped). Run "
                    "AllenNLP on them (see README), then generate with --annotator allennlp-predictions.")
    inputs.add_argument("--input", action="append", required=True, metavar="PATTERN")
    inputs.add_argument("--url-list", action="append", default=[], metavar="PATH")
    inputs.add_argument("--output", required=True)
    inputs.set_defaults(staged_output=True)   # written beside --output, then swapped in
    add_spec_args(inputs, "record")

    filter_ = record_cmds.add_parser(
        "filter", help="stage 3: drop triples a reader answers in k-fold cross-validation",
        description="Assign folds by hashing passage ids, train a reader per fold on the other "
                    "folds, and drop the held-out triples it answers correctly. Writes passages/, "
                    "queries/ (kept), dropped/, rejects/, models/ and summary.json under OUTPUT. "
                    "Other options go to Beam.")
    filter_.add_argument("run_dir", help="output directory of `csdata record generate`")
    filter_.add_argument("--output", required=True)
    filter_.set_defaults(staged_output=True)   # written beside --output, then swapped in
    filter_.add_argument("--reader", help="lexical (default), cross-encoder, or predictions:FILE "
                                          "(a JSON object {query_id: answer} from any external reader)")
    filter_.add_argument("--folds", type=int, help="number of folds (default: spec filter.folds = 5)")
    add_spec_args(filter_, "record")

    evaluate_ = record_cmds.add_parser(
        "evaluate", help="ReCoRD's official EM/F1 of predictions on a ReCoRD JSON file",
        description="Prints {\"exact_match\": ..., \"f1\": ...} on 0-100 scales, as the official "
                    "v1.0 evaluation script does; a query without a prediction scores 0.")
    evaluate_.add_argument("data", help="ReCoRD JSON (as written by `csdata record export`)")
    evaluate_.add_argument("predictions", help="JSON object {query_id: answer text}")

    hits = record_cmds.add_parser("hits", help="stage 4: crowd validation round trip (paper §3.4)")
    hits_cmds = hits.add_subparsers(dest="hits_command", required=True)
    hits_export = hits_cmds.add_parser(
        "export", help="write the crowd-task CSV of a filtered run",
        description="One row per triple: the passage with entities marked and numbered, the query "
                    "with the placeholder shown as X, and hidden_* reference columns that must not "
                    "be shown to workers.")
    hits_export.add_argument("run_dir", help="output directory of `csdata record filter`")
    hits_export.add_argument("--output", required=True, help="CSV file to write")
    add_spec_args(hits_export, "record")
    hits_import = hits_cmds.add_parser(
        "import", help="read worker results, block bad workers, validate triples, draw splits",
        description="RESULTS.csv columns: worker_id, assignment_id, triple_id, chosen_entity "
                    "(option number or text), feedback [, submit_time]. Every hits.qc_every "
                    "submissions each worker's accuracy is recomputed; workers below "
                    "hits.min_accuracy are blocked and their assignments listed in republish.csv. "
                    "Writes train/, dev/, test/, passages/, rejects/, workers.csv, summary.json.")
    hits_import.add_argument("results", help="worker results CSV")
    hits_import.add_argument("--run", required=True, dest="run_dir",
                             help="the filtered run the HITs were exported from")
    hits_import.add_argument("--output", required=True)
    hits_import.set_defaults(staged_output=True)   # written beside --output, then swapped in
    add_spec_args(hits_import, "record")

    export = record_cmds.add_parser("export", help="write a run as ReCoRD JSON or SuperGLUE JSONL")
    export.add_argument("run_dir", help="output directory of `csdata record generate`")
    export.add_argument("--format", choices=["record-json", "superglue-jsonl"], default="record-json",
                        help="record-json: official ReCoRD JSON v1.0 (end inclusive); "
                             "superglue-jsonl: one passage per line as in SuperGLUE")
    export.add_argument("--output", default="-", help="file to write (default: stdout)")

    # The commands without a Beam pipeline reject unknown arguments with their own usage.
    for parser in (evaluate_, hits_export, hits_import, export):
        parser.set_defaults(command_parser=parser)


def _balanced(summary: dict) -> bool:
    return all(s["balanced"] for s in summary["stages"].values())


def _generate(args, options: PipelineOptions) -> int:
    spec = load_dataset_spec(RecordSpec, args.spec, args.overrides)
    if args.annotator:
        spec = with_annotator(spec, args.annotator)
    run_record(spec, args.input, args.output, args.url_list, options)
    summary = read_summary(f"{args.output.rstrip('/')}/summary.json")
    print(format_summary(summary, STAGE_UNITS["record"]))
    return 0 if _balanced(summary) else 3


def _compare(args, options: PipelineOptions) -> int:
    spec = load_dataset_spec(RecordSpec, args.spec, args.overrides)
    report = run_compare(spec, args.a, args.b, args.input, args.output, args.url_list, options)
    print(f"{report['articles']} articles annotated by both {args.a} (A, reference) and {args.b} (B)")
    for key, title in (("entity_spans", "entity spans"), ("chains", "coreference links")):
        part = report[key]
        print(f"{title:<18} P {part['precision']:6.2f}  R {part['recall']:6.2f}  F1 {part['f1']:6.2f}"
              f"   (A {part['a']}, B {part['b']}, both {part['common']})")
    for side in ("a", "b"):
        if report["rejected"][side]:
            print(f"rejected by {side.upper()}: {report['rejected'][side]}")
    return 0


def _annotation_inputs(args, options: PipelineOptions) -> int:
    spec = load_dataset_spec(RecordSpec, args.spec, args.overrides)
    run_annotation_inputs(spec, args.input, args.output, args.url_list, options)
    print(f"wrote {args.output}/coref_input.jsonl and {args.output}/ner_input.jsonl")
    return 0


def _filter(args, options: PipelineOptions) -> int:
    spec = load_dataset_spec(RecordSpec, args.spec, args.overrides)
    summary = run_filter(spec, args.run_dir, args.output, args.reader, args.folds, options)
    print(format_filter_summary(summary))
    print(format_summary({"stages": summary["stages"]}, STAGE_UNITS["record"]))
    return 0 if _balanced(summary) else 3


def _evaluate(args) -> int:
    with open(args.data, encoding="utf-8") as handle:
        data = json.load(handle)["data"]
    with open(args.predictions, encoding="utf-8") as handle:
        predictions = json.load(handle)
    missing = sum(qa["id"] not in predictions for p in data for qa in p["qas"])
    if missing:
        print(f"{missing} unanswered queries score 0", file=sys.stderr)
    print(json.dumps(evaluate(data, predictions)))
    return 0


def _hits(args) -> int:
    spec = load_dataset_spec(RecordSpec, args.spec, args.overrides)
    if args.hits_command == "export":
        rows = export_hits(args.run_dir, args.output, spec.hits)
        print(f"{rows} HITs written to {args.output}")
        return 0
    summary = import_results(args.run_dir, args.results, args.output, spec.hits, spec.splits, spec.seed)
    splits = ", ".join(f"{name} {entry['triples']}" for name, entry in summary["splits"].items())
    print(f"splits: {splits}; workers blocked: {summary['workers']['blocked']} of "
          f"{summary['workers']['total']} (their assignments: {args.output}/republish.csv)")
    print(format_summary({"stages": summary["stages"]}, STAGE_UNITS["record"]))
    return 0 if _balanced(summary) else 3


def _export(args) -> int:
    exporter = EXPORTERS[args.format]
    if args.output == "-":
        exporter(args.run_dir, sys.stdout)
    else:
        with open(args.output, "w", encoding="utf-8") as handle:
            exporter(args.run_dir, handle)
    return 0


def run(args, extra: Sequence[str], beam_options) -> int:
    """Run the parsed `csdata record ...` command; `extra` (unknown arguments) go to Beam."""
    command = args.record_command
    if command in BEAM_COMMANDS:
        handler = {"generate": _generate, "compare-annotators": _compare,
                   "annotation-inputs": _annotation_inputs, "filter": _filter}[command]
        return handler(args, beam_options(extra))
    if extra:
        args.command_parser.error(f"unrecognized arguments: {' '.join(extra)}")
    if command == "evaluate":
        return _evaluate(args)
    if command == "hits":
        return _hits(args)
    if command == "export":
        return _export(args)
    raise SystemExit(f"unknown record command {command!r}")


def is_run(path) -> bool:
    """A ReCoRD output directory (generate, filter or hits import): it has a passages/ table."""
    return (Path(path) / "passages").is_dir()


def stats(path) -> str:
    """The run's Table 1 statistics beside the paper's."""
    return format_table(record_stats(str(path)), load_dataset_spec(RecordSpec, "record").paper_table1)


def demo(output_dir: Path, make_options) -> bool:
    """Stages 1-3 on the sample corpus in tests/data/record; False when a stage lost records."""
    output = Path(output_dir) / "record"
    spec = load_dataset_spec(RecordSpec, "record")
    url_lists = sorted(str(p) for p in (DEMO_DATA / "url_lists").glob("*.txt"))
    inputs = [str(DEMO_DATA / "cnn"), str(DEMO_DATA / "dailymail"), str(DEMO_DATA / "hf_rows.jsonl")]
    print(f"ReCoRD stages 1-2 on {DEMO_DATA.relative_to(REPO_ROOT)} -> {output}")
    run_record(spec, inputs, str(output), url_lists, make_options())
    summary = read_summary(str(output / "summary.json"))
    print(format_summary(summary, STAGE_UNITS["record"]))
    print()
    print(format_table(record_stats(str(output)), spec.paper_table1))
    filtered = Path(output_dir) / "record-filtered"
    print(f"\nReCoRD stage 3 (machine filter, lexical reader, 5 folds) -> {filtered}")
    filter_summary = run_filter(spec, str(output), str(filtered), options=make_options())
    print(format_filter_summary(filter_summary))
    return _balanced(summary) and _balanced(filter_summary)
