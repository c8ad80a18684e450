"""ReCoRD (Zhang et al. 2018): news articles to cloze queries, the machine filter, the crowd round trip.

    csdata record generate --input stories/ --output out/rec               # stages 1-2 (Beam)
    csdata record annotate --input stories/ --output ann/                  # NER once, for variants
    csdata record generate --input stories/ --output out/v --annotations ann/ --set query.ngram=4
    csdata record filter out/rec --output out/recf                         # stage 3 (Beam)
    csdata record hits export out/recf --output hits.csv                   # stage 4: crowd task
    csdata record hits export out/recf --format mturk --output hits/       # ... MTurk / label-studio
    csdata record hits preview out/recf                                    # try the page locally
    csdata record hits import results.csv --run out/recf --output out/recv # stage 4: splits
    csdata record export out/rec --format record-json --output rec.json    # ReCoRD JSON
    csdata stats out/rec                                                   # beside the paper's Table 1

The entry points `add_commands`, `run`, `is_run`, `stats` and `demo` are called by pipeline/cli/main.py.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Optional, Sequence

from pipeline.cli.record_crowd import add_hits_commands, run_hits
from pipeline.cli.run import balanced, summary_exit

if TYPE_CHECKING:
    from apache_beam.options.pipeline_options import PipelineOptions

# Beam and the transforms are imported by the functions that use them, so that `csdata --help`,
# `record export` and `stats` start fast; the pipelines live in pipeline/graphs/record.py.
REPO_ROOT = Path(__file__).resolve().parents[2]
DEMO_DATA = REPO_ROOT / "tests" / "data" / "record"

# Commands that run a Beam pipeline: the arguments csdata does not know go to Beam.
BEAM_COMMANDS = ("generate", "annotate", "compare-annotators", "annotation-inputs", "filter")


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
    # Beam's workers write the attempt, on an object store too
    generate.set_defaults(writes_output=True, beam_writer=True)
    generate.add_argument("--url-list", action="append", default=[], metavar="PATH",
                          help="published URL list (all_train.txt ...): url, source, split per article")
    generate.add_argument("--annotator", help="annotation backend for every input, overriding the spec: "
                          "spacy, stanza, allennlp-predictions or deepmind-metadata")
    generate.add_argument("--annotations", metavar="DIR",
                          help="output of `csdata record annotate`: reuse its annotations for every "
                               "article whose text and model settings match (spacy only)")
    add_spec_args(generate, "record")

    annotate = record_cmds.add_parser(
        "annotate", help="annotate articles once (spaCy NER and sentences) for later generate runs",
        description="Read the inputs, drop duplicate ids and annotate every article some passage "
                    "split could use (it has highlights and more than one paragraph): spaCy NER and "
                    "sentences of each paragraph and highlight, which no split, threshold, label "
                    "list or coreference setting changes. Writes OUTPUT/annotations/ (Parquet), "
                    "OUTPUT/rejects/ and OUTPUT/summary.json; `generate --annotations OUTPUT` "
                    "reuses them. Other options go to Beam.")
    annotate.add_argument("--input", action="append", required=True, metavar="PATTERN",
                          help="file, directory, glob or .tgz of stories / JSONL (repeatable)")
    annotate.add_argument("--output", required=True, help="output directory (local or gs://)")
    # Beam's workers write the attempt, on an object store too
    annotate.set_defaults(writes_output=True, beam_writer=True)
    add_spec_args(annotate, "record")

    compare = record_cmds.add_parser(
        "compare-annotators", help="entity-span and chain agreement of two annotation backends",
        description="Runs stage 1 once and two backends over the same passages; prints and writes "
                    "OUTPUT/compare.json with precision/recall/F1 of B's entity spans and coreference "
                    "links against A's (A is the reference). Other options go to Beam.")
    compare.add_argument("--input", action="append", required=True, metavar="PATTERN")
    compare.add_argument("--url-list", action="append", default=[], metavar="PATH")
    compare.add_argument("--output", required=True)
    # Beam's workers write the attempt, on an object store too
    compare.set_defaults(writes_output=True, beam_writer=True)
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
    # Beam's workers write the attempt, on an object store too
    inputs.set_defaults(writes_output=True, beam_writer=True)
    add_spec_args(inputs, "record")

    filter_ = record_cmds.add_parser(
        "filter", help="stage 3: drop triples a reader answers in k-fold cross-validation",
        description="Assign folds by hashing passage ids, train a reader per fold on the other "
                    "folds, and drop the held-out triples it answers correctly. Writes passages/, "
                    "queries/ (kept), dropped/, rejects/, models/ and summary.json under OUTPUT. "
                    "Other options go to Beam.")
    filter_.add_argument("run_dir", help="output directory of `csdata record generate`")
    filter_.add_argument("--output", required=True)
    # Beam's workers write the attempt, on an object store too
    filter_.set_defaults(writes_output=True, beam_writer=True, beam_reader=True)
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

    add_hits_commands(record_cmds, add_spec_args)

    export = record_cmds.add_parser("export", help="write a run as ReCoRD JSON or SuperGLUE JSONL")
    export.add_argument("run_dir", help="output directory of `csdata record generate`")
    export.add_argument("--format", choices=["record-json", "superglue-jsonl"], default="record-json",
                        help="record-json: official ReCoRD JSON v1.0 (end inclusive); "
                             "superglue-jsonl: one passage per line as in SuperGLUE")
    export.add_argument("--output", default="-", help="file to write (default: stdout)")

    from pipeline.cli.releases import add_release_commands

    add_release_commands(record_cmds, "record", "a generate, filter or hits import run")

    # The commands without a Beam pipeline reject unknown arguments with their own usage.
    for parser in (evaluate_, export):
        parser.set_defaults(command_parser=parser)


def check_annotations(path: str) -> None:
    """`--annotations` must be the output of a finished `csdata record annotate` run."""
    from transforms.core.errors import UserError

    if "://" in path:
        return
    run = Path(path)
    if not run.is_dir():
        raise UserError(f"--annotations {path}: no such directory")
    if not any((run / "annotations").glob("*.parquet")) or not (run / "summary.json").is_file():
        raise UserError(f"--annotations {path} is not the output of a finished `csdata record "
                        "annotate` run (no annotations/*.parquet)")


def reuse_line(entry: dict) -> str:
    """`reused N of M annotations from DIR`, with why the others were annotated."""
    because = ", ".join(f"{k}={v}" for k, v in entry["annotated_because"].items() if v)
    return (f"reused {entry['reused']} of {entry['articles']} annotations from {entry['source']}"
            + (f"; annotated {entry['annotated']} ({because})" if entry["annotated"] else ""))


def _generate(args, options: PipelineOptions) -> int:
    from data_specs import RecordSpec, load_dataset_spec
    from pipeline.graphs.record import run_record, with_annotator
    from transforms.core.accounting import STAGE_UNITS
    from transforms.core.io.tables import read_summary
    from transforms.record.annotate.registry import check_cacheable

    spec = load_dataset_spec(RecordSpec, args.spec, args.overrides)
    if args.annotator:
        spec = with_annotator(spec, args.annotator)
    if args.annotations:
        check_cacheable(spec.annotator)
        check_annotations(args.annotations)
    run_record(spec, args.input, args.output, args.url_list, options, annotations=args.annotations,
               work=getattr(args, "work", None))
    summary = read_summary(f"{args.output.rstrip('/')}/summary.json")
    code = summary_exit(summary, STAGE_UNITS["record"])
    if "annotations" in summary:
        print(reuse_line(summary["annotations"]))
    return code


def _annotate(args, options: PipelineOptions) -> int:
    from data_specs import RecordSpec, load_dataset_spec
    from pipeline.graphs.record import run_annotate
    from transforms.core.accounting import STAGE_UNITS
    from transforms.core.io.tables import read_summary

    spec = load_dataset_spec(RecordSpec, args.spec, args.overrides)
    run_annotate(spec, args.input, args.output, options, work=getattr(args, "work", None))
    return summary_exit(read_summary(f"{args.output.rstrip('/')}/summary.json"), STAGE_UNITS["record"])


def _compare(args, options: PipelineOptions) -> int:
    from data_specs import RecordSpec, load_dataset_spec
    from pipeline.graphs.record import run_compare

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
    from data_specs import RecordSpec, load_dataset_spec
    from pipeline.graphs.record import run_annotation_inputs

    spec = load_dataset_spec(RecordSpec, args.spec, args.overrides)
    run_annotation_inputs(spec, args.input, args.output, args.url_list, options)
    print(f"wrote {args.output}/coref_input.jsonl and {args.output}/ner_input.jsonl")
    return 0


def _filter(args, options: PipelineOptions) -> int:
    from data_specs import RecordSpec, load_dataset_spec
    from pipeline.graphs.record import run_filter
    from transforms.core.accounting import STAGE_UNITS
    from transforms.record.machine_filter import format_filter_summary

    spec = load_dataset_spec(RecordSpec, args.spec, args.overrides)
    summary = run_filter(spec, args.run_dir, args.output, args.reader, args.folds, options)
    print(format_filter_summary(summary))
    return summary_exit(summary, STAGE_UNITS["record"])


def _evaluate(args) -> int:
    from transforms.record.metric import evaluate, read_evaluation_data, read_predictions

    data = read_evaluation_data(args.data)
    predictions = read_predictions(args.predictions)
    missing = sum(qa["id"] not in predictions for p in data for qa in p["qas"])
    if missing:
        print(f"{missing} unanswered queries score 0", file=sys.stderr)
    print(json.dumps(evaluate(data, predictions)))
    return 0


def _export(args) -> int:
    from transforms.record.export import EXPORTERS

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
    if command == "reproduce":   # the user's Beam options apply to the steps it reruns
        from pipeline.cli.releases import reproduce_command

        return reproduce_command(args, extra)
    if command in BEAM_COMMANDS:
        handler = {"generate": _generate, "annotate": _annotate, "compare-annotators": _compare,
                   "annotation-inputs": _annotation_inputs, "filter": _filter}[command]
        return handler(args, beam_options(extra))
    if extra:
        args.command_parser.error(f"unrecognized arguments: {' '.join(extra)}")
    if command == "evaluate":
        return _evaluate(args)
    if command == "hits":
        return run_hits(args)
    if command == "export":
        return _export(args)
    if command == "release":
        from pipeline.cli.releases import release_command

        return release_command(args, build_release)
    raise SystemExit(f"unknown record command {command!r}")


def build_release(run_dir: str, provenance: Optional[dict]):
    """The `Release` of a ReCoRD run (`transforms.record.release`) with the card's sections."""
    from pipeline.cli.releases import release_metadata, run_card_sections, spec_of
    from transforms.record.release import build_release as record_release
    from transforms.record.release import card_limitations

    try:
        table = stats(run_dir)
    except (FileNotFoundError, KeyError) as error:
        table = f"(not available for this run: {error})"
    limitations = card_limitations(spec_of(provenance, "record"), (provenance or {}).get("steps", []))
    sections = run_card_sections(run_dir, provenance, "record", table, limitations)
    return record_release(run_dir, sections, release_metadata(run_dir, provenance))


def is_run(path) -> bool:
    """A ReCoRD output directory (generate, filter or hits import): it has a passages/ table
    (a release, with its dataset card README.md, is not a run)."""
    return (Path(path) / "passages").is_dir() and not (Path(path) / "README.md").is_file()


def stats(path) -> str:
    """The run's Table 1 statistics beside the paper's; of a `hits import` run, one table per
    split of its validated queries."""
    from data_specs import RecordSpec, load_dataset_spec
    from transforms.record.report import query_tables
    from transforms.record.stats import format_table, record_stats

    paper = load_dataset_spec(RecordSpec, "record").paper_table1
    tables = query_tables(path)
    if tables == ("queries",) or not tables:
        return format_table(record_stats(str(path)), paper)
    return "\n".join(f"split {table} (validated queries of a `hits import` run; the paper's column is its "
                     f"training split)\n{format_table(record_stats(str(path), table), paper)}" for table in tables)


def demo(output_dir: Path, make_options) -> bool:
    """Stages 1-3 on the sample corpus in tests/data/record; False when a stage lost records."""
    from data_specs import RecordSpec, load_dataset_spec
    from pipeline.graphs.record import run_filter, run_record
    from transforms.core.accounting import STAGE_UNITS, format_summary
    from transforms.core.io.tables import read_summary
    from transforms.record.machine_filter import format_filter_summary
    from transforms.record.stats import format_table, record_stats

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
    return balanced(summary) and balanced(filter_summary)
