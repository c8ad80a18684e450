"""`csdata protoqa hits ...` and `csdata protoqa sheets ...`: ProtoQA's crowd round trip, answer
collection on MTurk or Label Studio and the two-annotator sheets with their BLANC agreement and
adjudication. The steps are `transforms.protoqa.steps`; `pipeline.cli.protoqa` adds these
commands to its parser and runs them through `run_hits` and `run_sheets`.
"""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Optional

from pipeline.cli.run import summary_exit

if TYPE_CHECKING:
    from data_specs import ProtoqaSpec


def add_hits_commands(sub, add_spec_args: Callable[[argparse.ArgumentParser, str], None]) -> None:
    """`csdata protoqa hits export|import|preview`: answer collection on MTurk or Label Studio."""
    hits = sub.add_parser(
        "hits", help="answer collection on MTurk / Label Studio: export tasks, import results, preview",
        description="One task per question: a worker reads the question and types one answer "
                    "(the paper had 100 workers per question: set 100 assignments per HIT on "
                    "MTurk, or 100 annotations per task in Label Studio).")
    hit_cmds = hits.add_subparsers(dest="hits_command", required=True)
    export = hit_cmds.add_parser(
        "export", help="the task page and the batch of questions for a crowd platform",
        description="mturk: OUTPUT/template.html (the task template: ${question_id}, ${question}, "
                    "one text field `answer`) and OUTPUT/batch.csv (one row per question; header "
                    "= the template's variables). label-studio: OUTPUT/config.xml (a TextArea "
                    "`answer` on the Text `question`) and OUTPUT/tasks.json (data.question_id, "
                    "data.question).")
    export.add_argument("questions", metavar="QUESTIONS",
                        help="a `protoqa questions` output directory or a protoqa-data JSONL file")
    export.add_argument("--format", choices=["mturk", "label-studio"], default="mturk")
    export.add_argument("--output", required=True, help="directory for the task files")
    export.set_defaults(writes_output=True)
    imp = hit_cmds.add_parser(
        "import", help="platform results -> the crowd answers CSV that cluster-prep reads",
        description="Reads an MTurk batch results CSV (Input.question_id, Input.question, "
                    "Answer.answer or Answer.taskAnswers; Rejected assignments skipped) or a "
                    "Label Studio JSON export (data.question_id, data.question, the TextArea "
                    "`answer`). Writes OUTPUT (question_id, question, answer, worker_id, "
                    "assignment_id, hit_id, submit_time; one row per assignment) and "
                    "OUTPUT's <stem>.rejects.csv. A worker counts once per question: the first "
                    "submission (SubmitTime, then AssignmentId) is kept, later ones are "
                    "duplicate_worker rejects; blank answers are empty_answer rejects; rows or "
                    "annotations over the spec's limits (limits.max_field_bytes, "
                    "limits.max_record_bytes) or damaged are record_too_large, field_too_large, "
                    "not_utf8 or malformed_record rejects.")
    imp.add_argument("results", metavar="RESULTS", help="MTurk results CSV or Label Studio export JSON")
    imp.add_argument("--format", choices=["auto", "mturk", "label-studio"], default="auto",
                     help="results format (default: by content)")
    imp.add_argument("--hits", metavar="DIR",
                     help="the export directory: a results row of a question it does not hold "
                          "(a foreign HIT) is an error")
    imp.add_argument("--output", required=True, help="crowd answers CSV to write")
    add_spec_args(imp, "protoqa")   # limits: rows over the spec's limits are rejects
    preview = hit_cmds.add_parser(
        "preview", help="serve the task page filled with one question on localhost",
        description="Serves the MTurk task page filled with one question (HTML-escaped) on "
                    "http://127.0.0.1:PORT/ until Ctrl-C.")
    preview.add_argument("questions", metavar="QUESTIONS", nargs="?",
                         help="a `protoqa questions` output directory or protoqa-data JSONL file")
    preview.add_argument("--hits", metavar="DIR", help="an export directory (its batch.csv / tasks.json)")
    preview.add_argument("--row", type=int, default=0, help="which question (0-based, default 0)")
    preview.add_argument("--port", type=int, default=0, help="port (default: any free port)")


def add_sheets_commands(sub, add_spec_args: Callable[[argparse.ArgumentParser, str], None]) -> None:
    """`csdata protoqa sheets export|import|adjudicate`: the two-annotator round trip."""
    sheets = sub.add_parser("sheets", help="the annotator round trip: export, import (BLANC), adjudicate")
    sheet_cmds = sheets.add_subparsers(dest="sheets_command", required=True)
    export = sheet_cmds.add_parser(
        "export", help="write one annotation sheet per annotator from a cluster-prep run",
        description="Columns: question_id, question, answer, count, fixed_spelling "
                    "(pre-filled with the answer), proposed_cluster (a suggestion), "
                    "annotator_cluster (to fill in: a cluster name, or ? / invalid for an "
                    "answer that belongs to no cluster). --format xlsx writes one workbook per "
                    "annotator, a worksheet per question, with a drop-down of the question's "
                    "proposed clusters on each annotator_cluster cell.")
    export.add_argument("--prep", required=True, help="output directory of `protoqa cluster-prep`")
    export.add_argument("--output", required=True, help="directory for sheet_<annotator>.csv / .xlsx")
    export.add_argument("--format", choices=["csv", "xlsx"], default="csv",
                        help="csv (default) or xlsx workbooks with drop-downs")
    export.set_defaults(writes_output=True)
    export.add_argument("--annotator", action="append", default=[], metavar="NAME",
                        help="annotator name (repeatable; default: A and B)")
    add_spec_args(export, "protoqa")

    imp = sheet_cmds.add_parser(
        "import", help="read two filled sheets: BLANC per question and overall, disagreements",
        description="Either two annotator sheets (--sheet A.csv --sheet B.csv; their "
                    "annotator_cluster columns), or one sheet with both annotators' columns "
                    "(--sheet stub.csv --columns Alice Bob; the evaluator's stub format). "
                    "Writes OUTPUT/agreement.json (BLANC x100 per question, macro and micro; "
                    "Recasens & Hovy 2011 with Luo et al. 2014 for differing mention sets), "
                    "OUTPUT/disagreements.csv and OUTPUT/adjudication.csv (the adjudicated column "
                    "pre-filled where the annotators agree, empty where an adjudicator decides).")
    imp.add_argument("--sheet", action="append", required=True, metavar="CSV|XLSX",
                     help="a filled sheet, .csv or .xlsx (once or twice)")
    imp.add_argument("--columns", nargs=2, metavar=("A", "B"),
                     help="the two label columns (default: annotator_cluster of each sheet, or the "
                          "first two label columns of a single sheet)")
    imp.add_argument("--output", required=True)
    imp.set_defaults(writes_output=True)
    add_spec_args(imp, "protoqa")

    adj = sheet_cmds.add_parser(
        "adjudicate", help="import the adjudicated clustering as protoqa-data JSONL",
        description="Reads an adjudication sheet (column `adjudicated`), an annotator sheet "
                    "(`annotator_cluster`) or a stub sheet (`Combined`). raw = counts per fixed "
                    "spelling; clusters = answers sharing a label (invalid labels in raw only), "
                    "numbered by descending count. Writes OUTPUT/adjudicated.jsonl and "
                    "OUTPUT/summary.json; questions with unlabelled answers are rejected.")
    adj.add_argument("--sheet", required=True)
    adj.add_argument("--column", help="label column (default: adjudicated, annotator_cluster or Combined)")
    adj.add_argument("--output", required=True)
    adj.set_defaults(writes_output=True)
    add_spec_args(adj, "protoqa")


def run_hits(args) -> int:
    """Run the parsed `csdata protoqa hits ...` command."""
    from transforms.core.accounting import STAGE_UNITS
    from transforms.protoqa.hits import IMPORT, rejects_path
    from transforms.protoqa.steps import run_hits_export, run_hits_import

    if args.hits_command == "export":
        for role, path in run_hits_export(args.questions, args.format, args.output).items():
            print(f"{role:<10}{Path(path).name}")   # --output is the run's attempt here
        return 0
    if args.hits_command == "import":
        from data_specs import ProtoqaSpec, load_dataset_spec

        spec = load_dataset_spec(ProtoqaSpec, args.spec, args.overrides)
        summary = run_hits_import(spec, args.results, args.output, args.format, args.hits)
        code = summary_exit(summary, {**STAGE_UNITS["protoqa"], IMPORT: "assignments"})
        print(f"\n{summary['stages'][IMPORT]['kept']} answers to {summary['questions']} questions: "
              f"{args.output} (rejects: {rejects_path(args.output)})")
        return code
    return run_hits_preview(args.questions, args.hits, args.row, args.port)


def run_hits_preview(questions_path: Optional[str], hits_dir: Optional[str], row: int, port: int) -> int:
    """`protoqa hits preview`: serve the filled page until interrupted."""
    from transforms.core.crowd.preview_server import preview
    from transforms.core.errors import UserError
    from transforms.protoqa.hits import exported_questions, preview_page, read_questions

    if questions_path:
        questions = read_questions(questions_path)
    elif hits_dir:
        questions = exported_questions(hits_dir)
    else:
        raise UserError("give QUESTIONS or --hits DIR: the questions to fill the page with")
    return preview(preview_page(questions, row), port)


def run_sheets(args, spec: ProtoqaSpec) -> int:
    """Run the parsed `csdata protoqa sheets ...` command."""
    from transforms.core.accounting import STAGE_UNITS
    from transforms.protoqa.stats import format_agreement
    from transforms.protoqa.steps import run_adjudicate, run_sheets_export, run_sheets_import

    if args.sheets_command == "export":
        for path in run_sheets_export(args.prep, args.output, args.annotator, args.format,
                                      spec.sheets.invalid_labels):
            print(Path(path).name)     # --output is the run's attempt here
        return 0
    if args.sheets_command == "import":
        print(format_agreement(run_sheets_import(spec, args.sheet, args.output, args.columns)))
        return 0
    return summary_exit(run_adjudicate(spec, args.sheet, args.output, args.column), STAGE_UNITS["protoqa"])
