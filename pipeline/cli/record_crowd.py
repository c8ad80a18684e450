"""`csdata record hits ...`: ReCoRD's stage 4, the crowd validation round trip (paper §3.4): the
task of a filtered run for workers (own CSV, MTurk or Label Studio), its page on localhost, and
the import of the results into validated splits (`transforms.record.crowd`).
`pipeline.cli.record` adds these commands to its parser and runs them through `run_hits`.
"""
from __future__ import annotations

import argparse
from typing import Callable

from pipeline.cli.run import summary_exit


def add_hits_commands(record_cmds, add_spec_args: Callable[[argparse.ArgumentParser, str], None]) -> None:
    """`csdata record hits export|import|preview`."""
    hits = record_cmds.add_parser("hits", help="stage 4: crowd validation round trip (paper §3.4)")
    hits_cmds = hits.add_subparsers(dest="hits_command", required=True)
    hits_export = hits_cmds.add_parser(
        "export", help="write the crowd task of a filtered run (own CSV, MTurk or Label Studio)",
        description="--format csv (default): one CSV row per triple: the passage with entities "
                    "marked and numbered, the query with the placeholder shown as X, and hidden_* "
                    "reference columns that must not be shown to workers. --format mturk: OUTPUT/"
                    "template.html (an HTMLQuestion page with ${variable} placeholders) and "
                    "OUTPUT/batch.csv (its batch input). --format label-studio: OUTPUT/config.xml "
                    "(labeling config) and OUTPUT/tasks.json. Platform files hold no references.")
    hits_export.add_argument("run_dir", help="output directory of `csdata record filter`")
    hits_export.add_argument("--output", required=True,
                             help="CSV file to write (csv) or directory (mturk, label-studio)")
    hits_export.add_argument("--format", choices=["csv", "mturk", "label-studio"], default="csv",
                             dest="hits_format", help="task format (default: csv)")
    add_spec_args(hits_export, "record")
    hits_import = hits_cmds.add_parser(
        "import", help="read worker results, block bad workers, validate triples, draw splits",
        description="RESULTS: the own CSV (worker_id, assignment_id, triple_id, chosen_entity "
                    "(option number or text), feedback [, submit_time]), MTurk's batch results CSV "
                    "(Input.triple_id, Answer.entity ...; rejected assignments skipped) or a Label "
                    "Studio JSON export; told apart automatically unless --format says. Submissions "
                    "are replayed in submit-time order; every hits.qc_every submissions each "
                    "worker's accuracy is recomputed; workers below hits.min_accuracy are blocked and "
                    "their assignments listed in republish.csv. Writes train/, dev/, test/, "
                    "passages/, rejects/, workers.csv, summary.json.")
    hits_import.add_argument("results", help="worker results: own CSV, MTurk results CSV or Label Studio JSON")
    hits_import.add_argument("--run", required=True, dest="run_dir",
                             help="the filtered run the HITs were exported from")
    hits_import.add_argument("--output", required=True)
    hits_import.add_argument("--format", choices=["auto", "csv", "mturk", "label-studio"], default="auto",
                             dest="hits_format", help="results format (default: auto)")
    hits_import.set_defaults(writes_output=True)
    add_spec_args(hits_import, "record")
    hits_preview = hits_cmds.add_parser(
        "preview", help="serve the MTurk task page filled with one triple on localhost",
        description="Serves the page a worker sees on http://127.0.0.1:PORT with a local submit "
                    "endpoint that shows the fields the form sends (MTurk's Answer.* columns). "
                    "Ctrl-C stops it.")
    hits_preview.add_argument("run_dir", help="output directory of `csdata record filter`")
    hits_preview.add_argument("--triple", help="triple (query) id to show (default: the first)")
    hits_preview.add_argument("--port", type=int, default=0, help="port (default: any free one)")
    add_spec_args(hits_preview, "record")
    # Without a Beam pipeline: unknown arguments are refused with the command's own usage.
    for parser in (hits_export, hits_import, hits_preview):
        parser.set_defaults(command_parser=parser)


def run_hits(args) -> int:
    """Run the parsed `csdata record hits ...` command."""
    from data_specs import RecordSpec, load_dataset_spec
    from transforms.core.accounting import STAGE_UNITS
    from transforms.record.crowd import import_results
    from transforms.record.hits_export import export_hits, preview_page

    spec = load_dataset_spec(RecordSpec, args.spec, args.overrides)
    if args.hits_command == "export":
        rows = export_hits(args.run_dir, args.output, spec.hits, args.hits_format)
        print(f"{rows} HITs written to {args.output}")
        return 0
    if args.hits_command == "preview":
        from transforms.core.crowd.preview_server import preview

        return preview(preview_page(args.run_dir, spec.hits, args.triple), args.port)
    from transforms.core.reporting.provenance import file_metadata

    summary = import_results(args.run_dir, args.results, args.output, spec.hits, spec.splits, spec.seed,
                             spec.limits, args.hits_format, file_metadata(spec, [args.run_dir, args.results]))
    splits = ", ".join(f"{name} {entry['triples']}" for name, entry in summary["splits"].items())
    print(f"splits: {splits}; workers blocked: {summary['workers']['blocked']} of "
          f"{summary['workers']['total']} (their assignments: "
          f"{getattr(args, 'final_output', args.output)}/republish.csv)")
    return summary_exit(summary, STAGE_UNITS["record"])
