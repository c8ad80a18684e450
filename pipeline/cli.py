"""`csdata`: regenerate ReCoRD, Cosmos QA and ProtoQA with Apache Beam.

Unknown options are passed to Beam, so `--runner`, `--direct_running_mode=multi_processing`,
`--project`, `--temp_location`, `--setup_file` ... work as in any Beam program. Without
`--runner` the pipeline runs in process on Beam's FnApiRunner, which needs no download.
"""
from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Optional, Sequence

DEFAULT_RUNNER = "FnApiRunner"
# Dataset entry modules besides ReCoRD. Each defines:
#   add_commands(commands, add_spec_args)  add its `csdata NAME ...` subcommands
#   run(args, extra, beam_options) -> int   run the parsed subcommand (extra: Beam options)
#   is_run(path) -> bool, stats(path) -> str   `csdata stats` for its output directories
#   demo(output_dir, beam_options) -> None   its part of `csdata demo`
DATASET_MODULES = ("pipeline.cosmos", "pipeline.protoqa")
REPO_ROOT = Path(__file__).resolve().parent.parent
DEMO_DATA = REPO_ROOT / "tests" / "data" / "record"


def quiet_beam_import_warning() -> None:
    """Drop Beam's import-time warning that Google API clients are absent (irrelevant off GCP)."""
    logging.getLogger().addFilter(lambda record: "apitools not found" not in record.getMessage())


def beam_options(extra: Sequence[str]):
    """PipelineOptions from the arguments csdata did not consume, with the offline runner default."""
    from apache_beam.options.pipeline_options import PipelineOptions

    args = list(extra)
    if not any(a == "--runner" or a.startswith("--runner=") for a in args):
        args.append(f"--runner={DEFAULT_RUNNER}")
    return PipelineOptions(args)


def _add_spec_args(parser: argparse.ArgumentParser, default: str) -> None:
    parser.add_argument("--spec", default=default,
                        help=f"spec name in data_specs/ or a YAML path (default: {default})")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="override a spec value, e.g. --set passage.min_tokens=120 (repeatable)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="csdata", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-v", "--verbose", action="store_true", help="log Beam's progress")
    commands = parser.add_subparsers(dest="command", required=True)

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
    generate.add_argument("--url-list", action="append", default=[], metavar="PATH",
                          help="published URL list (all_train.txt ...): url, source, split per article")
    generate.add_argument("--annotator", help="annotation backend for every input, overriding the spec: "
                          "spacy, stanza, allennlp-predictions or deepmind-metadata")
    _add_spec_args(generate, "record")

    compare = record_cmds.add_parser(
        "compare-annotators", help="entity-span and chain agreement of two annotation backends",
        description="Runs stage 1 once and two backends over the same passages; prints and writes "
                    "OUTPUT/compare.json with precision/recall/F1 of B's entity spans and coreference "
                    "links against A's (A is the reference). Other options go to Beam.")
    compare.add_argument("--input", action="append", required=True, metavar="PATTERN")
    compare.add_argument("--url-list", action="append", default=[], metavar="PATH")
    compare.add_argument("--output", required=True)
    compare.add_argument("--a", default="spacy", help="reference backend (default: spacy)")
    compare.add_argument("--b", required=True, help="backend compared with A")
    _add_spec_args(compare, "record")

    inputs = record_cmds.add_parser(
        "annotation-inputs", help="write the input files `allennlp predict` annotates",
        description="Writes OUTPUT/coref_input.jsonl ({document, id}) and OUTPUT/ner_input.jsonl "
                    "({sentence, id, offset}) for every article read (duplicate ids dropped). Run "
                    "AllenNLP on them (see README), then generate with --annotator allennlp-predictions.")
    inputs.add_argument("--input", action="append", required=True, metavar="PATTERN")
    inputs.add_argument("--url-list", action="append", default=[], metavar="PATH")
    inputs.add_argument("--output", required=True)
    _add_spec_args(inputs, "record")

    filter_ = record_cmds.add_parser(
        "filter", help="stage 3: drop triples a reader answers in k-fold cross-validation",
        description="Assign folds by hashing passage ids, train a reader per fold on the other "
                    "folds, and drop the held-out triples it answers correctly. Writes passages/, "
                    "queries/ (kept), dropped/, rejects/, models/ and summary.json under OUTPUT. "
                    "Other options go to Beam.")
    filter_.add_argument("run_dir", help="output directory of `csdata record generate`")
    filter_.add_argument("--output", required=True)
    filter_.add_argument("--reader", help="lexical (default), cross-encoder, or predictions:FILE "
                                          "(a JSON object {query_id: answer} from any external reader)")
    filter_.add_argument("--folds", type=int, help="number of folds (default: spec filter.folds = 5)")
    _add_spec_args(filter_, "record")

    evaluate = record_cmds.add_parser(
        "evaluate", help="ReCoRD's official EM/F1 of predictions on a ReCoRD JSON file",
        description="Prints {\"exact_match\": ..., \"f1\": ...} on 0-100 scales, as the official "
                    "v1.0 evaluation script does; a query without a prediction scores 0.")
    evaluate.add_argument("data", help="ReCoRD JSON (as written by `csdata record export`)")
    evaluate.add_argument("predictions", help="JSON object {query_id: answer text}")

    hits = record_cmds.add_parser("hits", help="stage 4: crowd validation round trip (paper §3.4)")
    hits_cmds = hits.add_subparsers(dest="hits_command", required=True)
    hits_export = hits_cmds.add_parser(
        "export", help="write the crowd-task CSV of a filtered run",
        description="One row per triple: the passage with entities marked and numbered, the query "
                    "with the placeholder shown as X, and hidden_* reference columns that must not "
                    "be shown to workers.")
    hits_export.add_argument("run_dir", help="output directory of `csdata record filter`")
    hits_export.add_argument("--output", required=True, help="CSV file to write")
    _add_spec_args(hits_export, "record")
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
    _add_spec_args(hits_import, "record")

    export = record_cmds.add_parser("export", help="write a run as ReCoRD JSON or SuperGLUE JSONL")
    export.add_argument("run_dir", help="output directory of `csdata record generate`")
    export.add_argument("--format", choices=["record-json", "superglue-jsonl"], default="record-json",
                        help="record-json: official ReCoRD JSON v1.0 (end inclusive); "
                             "superglue-jsonl: one passage per line as in SuperGLUE")
    export.add_argument("--output", default="-", help="file to write (default: stdout)")

    for module in dataset_modules():
        module.add_commands(commands, _add_spec_args)

    stats = commands.add_parser("stats", help="a run's statistics beside its paper's Table 1")
    stats.add_argument("run_dir", help="output directory of a csdata run (ReCoRD, Cosmos QA, ProtoQA)")
    _add_spec_args(stats, "record")

    demo = commands.add_parser("demo", help="run the pipelines on the sample inputs in the repo")
    demo.add_argument("--output", default="out/demo")
    return parser


def dataset_modules() -> list:
    """The importable dataset entry modules of `DATASET_MODULES`, in order."""
    import importlib

    return [importlib.import_module(name) for name in DATASET_MODULES
            if importlib.util.find_spec(name) is not None]


def cmd_record_generate(args, extra: Sequence[str]) -> int:
    from data_specs import load_spec
    from pipeline.record import run_record
    from transforms.core.accounting import format_summary
    from transforms.core.io import read_summary

    spec = load_spec(args.spec, args.overrides)
    if args.annotator:
        from pipeline.record import with_annotator

        spec = with_annotator(spec, args.annotator)
    run_record(spec, args.input, args.output, args.url_list, beam_options(extra))
    summary = read_summary(f"{args.output.rstrip('/')}/summary.json")
    print(format_summary(summary))
    return 0 if all(s["balanced"] for s in summary["stages"].values()) else 3


def cmd_record_compare(args, extra: Sequence[str]) -> int:
    from data_specs import load_spec
    from pipeline.record import run_compare

    spec = load_spec(args.spec, args.overrides)
    report = run_compare(spec, args.a, args.b, args.input, args.output, args.url_list, beam_options(extra))
    print(f"{report['articles']} articles annotated by both {args.a} (A, reference) and {args.b} (B)")
    for key, title in (("entity_spans", "entity spans"), ("chains", "coreference links")):
        part = report[key]
        print(f"{title:<18} P {part['precision']:6.2f}  R {part['recall']:6.2f}  F1 {part['f1']:6.2f}"
              f"   (A {part['a']}, B {part['b']}, both {part['common']})")
    for side in ("a", "b"):
        if report["rejected"][side]:
            print(f"rejected by {side.upper()}: {report['rejected'][side]}")
    return 0


def cmd_record_annotation_inputs(args, extra: Sequence[str]) -> int:
    from data_specs import load_spec
    from pipeline.record import run_annotation_inputs

    spec = load_spec(args.spec, args.overrides)
    run_annotation_inputs(spec, args.input, args.output, args.url_list, beam_options(extra))
    print(f"wrote {args.output}/coref_input.jsonl and {args.output}/ner_input.jsonl")
    return 0


def cmd_record_filter(args, extra: Sequence[str]) -> int:
    from data_specs import load_spec
    from pipeline.record import run_filter
    from transforms.core.accounting import format_summary

    spec = load_spec(args.spec, args.overrides)
    summary = run_filter(spec, args.run_dir, args.output, args.reader, args.folds, beam_options(extra))
    print(format_filter_summary(summary))
    print(format_summary({"stages": summary["stages"]}))
    return 0 if all(s["balanced"] for s in summary["stages"].values()) else 3


def format_filter_summary(summary: dict) -> str:
    """Per-fold answered rate beside the random baseline (the paper: 68 % answered overall)."""
    lines = [f"reader: {summary['reader']}",
             f"{'fold':>4}{'triples':>9}{'answered':>10}{'rate':>8}{'random':>8}"]
    for fold in summary["folds"]:
        lines.append(f"{fold['fold']:>4}{fold['triples']:>9}{fold['answered']:>10}"
                     f"{fold['answered_rate']:>8.1%}{fold['random_baseline']:>8.1%}")
    lines.append(f"{'all':>4}{summary['in']:>9}{summary['dropped']:>10}"
                 f"{summary['answered_rate']:>8.1%}{summary['random_baseline']:>8.1%}"
                 f"   kept {summary['kept']} (paper: 68% answered and dropped)")
    return "\n".join(lines)


def cmd_record_evaluate(args) -> int:
    import json

    from transforms.record.metric import evaluate

    with open(args.data, encoding="utf-8") as handle:
        data = json.load(handle)["data"]
    with open(args.predictions, encoding="utf-8") as handle:
        predictions = json.load(handle)
    missing = sum(qa["id"] not in predictions for p in data for qa in p["qas"])
    if missing:
        print(f"{missing} unanswered queries score 0", file=sys.stderr)
    print(json.dumps(evaluate(data, predictions)))
    return 0


def cmd_record_hits(args) -> int:
    from data_specs import load_spec
    from transforms.core.accounting import format_summary
    from transforms.record.crowd import export_hits, import_results

    spec = load_spec(args.spec, args.overrides)
    if args.hits_command == "export":
        rows = export_hits(args.run_dir, args.output, spec)
        print(f"{rows} HITs written to {args.output}")
        return 0
    summary = import_results(args.run_dir, args.results, args.output, spec)
    splits = ", ".join(f"{name} {entry['triples']}" for name, entry in summary["splits"].items())
    print(f"splits: {splits}; workers blocked: {summary['workers']['blocked']} of "
          f"{summary['workers']['total']} (their assignments: {args.output}/republish.csv)")
    print(format_summary({"stages": summary["stages"]}))
    return 0 if all(s["balanced"] for s in summary["stages"].values()) else 3


def cmd_record_export(args) -> int:
    from transforms.record.export import EXPORTERS

    exporter = EXPORTERS[args.format]
    if args.output == "-":
        exporter(args.run_dir, sys.stdout)
    else:
        with open(args.output, "w", encoding="utf-8") as handle:
            exporter(args.run_dir, handle)
    return 0


def cmd_stats(args) -> int:
    from data_specs import load_spec
    from transforms.record.stats import format_table, record_stats

    for module in dataset_modules():
        if module.is_run(args.run_dir):
            print(module.stats(args.run_dir))
            return 0
    spec = load_spec(args.spec, args.overrides)
    print(format_table(record_stats(args.run_dir), spec.get("paper_table1", {})))
    return 0


def cmd_demo(args, extra: Sequence[str]) -> int:
    from data_specs import load_spec
    from pipeline.record import run_filter, run_record
    from transforms.core.accounting import format_summary
    from transforms.core.io import read_summary
    from transforms.record.stats import format_table, record_stats

    output = Path(args.output) / "record"
    spec = load_spec("record")
    url_lists = sorted(str(p) for p in (DEMO_DATA / "url_lists").glob("*.txt"))
    inputs = [str(DEMO_DATA / "cnn"), str(DEMO_DATA / "dailymail"), str(DEMO_DATA / "hf_rows.jsonl")]
    print(f"ReCoRD stages 1-2 on {DEMO_DATA.relative_to(REPO_ROOT)} -> {output}")
    run_record(spec, inputs, str(output), url_lists, beam_options(extra))
    summary = read_summary(str(output / "summary.json"))
    print(format_summary(summary))
    print()
    print(format_table(record_stats(str(output)), spec["paper_table1"]))
    filtered = Path(args.output) / "record-filtered"
    print(f"\nReCoRD stage 3 (machine filter, lexical reader, 5 folds) -> {filtered}")
    filter_summary = run_filter(spec, str(output), str(filtered), options=beam_options(extra))
    print(format_filter_summary(filter_summary))
    balanced = all(s["balanced"] for s in summary["stages"].values())
    balanced &= all(s["balanced"] for s in filter_summary["stages"].values())
    for module in dataset_modules():
        print()
        module.demo(Path(args.output), lambda: beam_options(extra))
    return 0 if balanced else 3


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run `csdata`; a missing model or a bad spec value is reported in one line (exit 2)."""
    quiet_beam_import_warning()   # before anything imports Beam
    from data_specs import SpecError
    from transforms.core.models import ModelUnavailable

    try:
        return _main(argv)
    except (ModelUnavailable, SpecError) as error:
        print(f"csdata: error: {error}", file=sys.stderr)
        return 2


def _main(argv: Optional[Sequence[str]] = None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING)
    if args.command == "record" and args.record_command == "generate":
        return cmd_record_generate(args, extra)
    if args.command == "record" and args.record_command == "filter":
        return cmd_record_filter(args, extra)
    if args.command == "record" and args.record_command == "compare-annotators":
        return cmd_record_compare(args, extra)
    if args.command == "record" and args.record_command == "annotation-inputs":
        return cmd_record_annotation_inputs(args, extra)
    for module in dataset_modules():
        if args.command == module.__name__.rsplit(".", 1)[-1]:
            return module.run(args, extra, beam_options)
    if extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    if args.command == "record" and args.record_command == "export":
        return cmd_record_export(args)
    if args.command == "record" and args.record_command == "evaluate":
        return cmd_record_evaluate(args)
    if args.command == "record" and args.record_command == "hits":
        return cmd_record_hits(args)
    if args.command == "stats":
        return cmd_stats(args)
    if args.command == "demo":
        return cmd_demo(args, extra)
    parser.error("unknown command")
    return 2


if __name__ == "__main__":
    sys.exit(main())
