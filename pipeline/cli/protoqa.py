"""`csdata protoqa ...`: ProtoQA (Boratko et al. 2020) question curation, answer-clustering prep,
the annotator round trip (sheets, BLANC agreement, adjudication), the release, the official
evaluation and cluster proposals for new answers.

    csdata protoqa questions --input scraped.jsonl --output out/protoqa [--omitted omitted.jsonl]
    csdata protoqa hits export out/protoqa --format mturk --output out/hits
    csdata protoqa hits import results.csv --hits out/hits --output crowd.csv
    csdata protoqa cluster-prep --answers crowd.csv --output out/protoqa-prep
    csdata protoqa sheets export --prep out/protoqa-prep --output out/sheets
    csdata protoqa sheets import --sheet out/sheets/sheet_A.csv --sheet out/sheets/sheet_B.csv --output out/agree
    csdata protoqa sheets adjudicate --sheet out/agree/adjudication.csv --output out/adjudicated
    csdata protoqa release --input out/adjudicated/adjudicated.jsonl --output out/protoqa-release
    csdata protoqa score --targets dev.crowdsourced.jsonl --predictions predictions.json
    csdata protoqa assign --targets dev.crowdsourced.jsonl --answers new_answers.jsonl
    csdata stats out/protoqa-release

Only `questions` runs on Beam (corpus scale); the rest handle ~100 answers per question for
~150 questions and run in plain Python. The entry points `add_commands`, `run`, `is_run`,
`stats` and `demo` are called by pipeline/cli/main.py.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Optional, Sequence

if TYPE_CHECKING:
    from apache_beam.options.pipeline_options import PipelineOptions

    from data_specs import ProtoqaSpec

# The transforms, the spec models and Beam are imported by the functions that use them, so that
# `csdata --help` and `protoqa score` start fast; the Beam pipeline lives in pipeline/graphs/protoqa.py.
REPO_ROOT = Path(__file__).resolve().parents[2]
SAMPLES = REPO_ROOT / "tests" / "data" / "protoqa"
RUN_FILE = "run.json"


def add_commands(commands, add_spec_args: Callable[[argparse.ArgumentParser, str], None]) -> None:
    """Add `csdata protoqa ...` to the top-level subparsers."""
    fmt = argparse.RawDescriptionHelpFormatter
    protoqa = commands.add_parser(
        "protoqa", help="ProtoQA: curate questions, prepare and adjudicate answer clusters, release",
        description=__doc__, formatter_class=fmt)
    sub = protoqa.add_subparsers(dest="protoqa_command", required=True)

    questions = sub.add_parser(
        "questions", help="curate scraped questions (Beam): normalise, dedup, class filter, omitted",
        description="Read protoqa-data JSONL rows (the scraped format: one string per cluster, "
                    "raw == {string: count}); normalise questions; drop exact duplicates (same "
                    "normalised question; the smallest id is kept), near duplicates (MinHash LSH "
                    "over character shingles), excluded question classes "
                    "(questions.excluded_classes), omitted ids/questions and broken answer lists; "
                    "flag potentially problematic questions. Writes OUTPUT/questions/ and "
                    "OUTPUT/rejects/ Parquet, OUTPUT/questions.jsonl (protoqa-data format) and "
                    "OUTPUT/summary.json. Other options go to Beam.")
    questions.add_argument("--input", action="append", required=True, metavar="PATTERN",
                           help="protoqa-data JSONL file or glob (repeatable)")
    questions.add_argument("--output", required=True, help="output directory (local or gs://)")
    # written beside --output, then swapped in; on an object store by Beam's workers
    questions.set_defaults(staged_output=True, beam_writer=True)
    questions.add_argument("--omitted", action="append", default=[], metavar="PATH",
                           help="questions to drop: protoqa-data JSONL (omitted.jsonl; matched by id "
                                "and by normalised question) or one id per line (repeatable)")
    questions.add_argument("--flagged", action="append", default=[], metavar="PATH",
                           help="potentially problematic questions to flag (kept, flagged=true): "
                                "JSONL or one id per line (repeatable)")
    add_spec_args(questions, "protoqa")

    add_hits_commands(sub, add_spec_args)

    prep = sub.add_parser(
        "cluster-prep", help="normalise raw crowd answers and propose clusters for annotators",
        description="ANSWERS.csv columns: question_id (may be empty), question, answer[, count]; "
                    "one row per response (~100 per question) or per distinct answer with its "
                    "count. Answers are normalised (case, whitespace, punctuation, articles and "
                    "possessives, spaCy lemmas) and joined into proposed clusters by exact "
                    "normalised match, WordNet synonymy, MiniLM similarity and MinHash "
                    "near-duplicates (misspellings). Proposals are suggestions, never final. "
                    "Writes OUTPUT/answers/ and OUTPUT/rejects/ Parquet and OUTPUT/summary.json.")
    prep.add_argument("--answers", required=True, help="crowd answers CSV")
    prep.add_argument("--output", required=True)
    prep.set_defaults(staged_output=True)   # written beside --output, then swapped in
    add_spec_args(prep, "protoqa")

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
    export.set_defaults(staged_output=True)   # written beside --output, then swapped in
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
    imp.set_defaults(staged_output=True)   # written beside --output, then swapped in
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
    adj.set_defaults(staged_output=True)   # written beside --output, then swapped in
    add_spec_args(adj, "protoqa")

    release = sub.add_parser(
        "release", help="coverage filter, protoqa-data JSONL, dev/test split by hash",
        description="Keeps questions whose top coverage.top_k clusters cover MORE than "
                    "coverage.min_coverage percent of the answers (denominator: every raw answer "
                    "when coverage.invalid_in_denominator, else the clustered answers); splits the "
                    "rest into dev and test by sha1(seed:id) with release.dev_size / test_size. "
                    "Writes OUTPUT/{dev,test}.jsonl (and unsplit.jsonl), OUTPUT/coverage.json "
                    "(which questions every reading keeps), OUTPUT/summary.json, and the same rows "
                    "in the Hugging Face layout: OUTPUT/data/{validation,test}-*.parquet and the "
                    "dataset card OUTPUT/README.md (`datasets.load_dataset(OUTPUT)`).")
    release.add_argument("--input", action="append", required=True, metavar="JSONL",
                         help="protoqa-data JSONL with clusters (adjudicated.jsonl; repeatable)")
    release.add_argument("--output", required=True)
    release.set_defaults(staged_output=True)   # written beside --output, then swapped in
    add_spec_args(release, "protoqa")
    from pipeline.cli.releases import add_release_commands

    add_release_commands(sub, "protoqa", "a protoqa release", release=False)

    score = sub.add_parser(
        "score", help="official ProtoQA evaluation of ranked answers (exact or WordNet)",
        description="Scores ranked answer lists against answer clusters as the official "
                    "evaluator (iesl/protoqa-evaluator) does: answers lowercased, cut to 50 "
                    "characters and stripped; an answer matches a cluster when it equals a "
                    "member (exact) or its WordNet partition score with a member rounds to 1 "
                    "(wordnet, Boratko et al. 2020 App. A); Hungarian matching of answers to "
                    "clusters weighted by cluster counts, divided by the best possible total. "
                    "Metrics: Max Answers - {None,1,3,5,10} (first k answers) and Max Incorrect "
                    "- {None,1,3,5} (stop at the k-th answer matching nothing). Means are over "
                    "the predicted questions.")
    score.add_argument("--targets", required=True,
                       help="answer clusters, protoqa-data JSONL (e.g. dev.crowdsourced.jsonl)")
    score.add_argument("--predictions", required=True,
                       help="ranked answers: one JSON object {qid: [answers]} or JSONL with one "
                            "such object (or {question_id, ranked_answers}) per line")
    score.add_argument("--similarity", choices=["exact", "wordnet"], default="exact",
                       help="answer-to-cluster similarity (default: exact)")
    score.add_argument("--json", action="store_true",
                       help='print {"Max Answers - 1": mean, ...} as JSON instead of a table')
    score.add_argument("--per-question", metavar="FILE",
                       help="write per-question scores and answer -> cluster assignments (JSON: "
                            "metrics -> {mean, per_question: {qid: {score, assignment}}})")

    assign = sub.add_parser(
        "assign", help="propose a cluster (or new/invalid) for new answer strings",
        description="Reads ANSWERS lines {\"question\": qid, \"answer\": str} and writes lines "
                    "{\"question\", \"answer\", \"cluster\": id or null, \"confidence\"}. "
                    "Each cluster and \"none\" (a new or invalid answer) gets a probability from "
                    "a logit over MiniLM, WordNet, lemma and spelling similarity to the members "
                    "(assign.weights, assign.none); the best cluster is proposed when it beats "
                    "\"none\" and reaches assign.threshold, and the confidence is the "
                    "probability of the proposal. With "
                    "--leave-one-out, prints the accuracy of recovering held-out member strings "
                    "of TARGETS instead (ours vs a WordNet-only baseline).")
    assign.add_argument("--targets", required=True, help="answer clusters, protoqa-data JSONL")
    assign.add_argument("--answers", help="JSONL of {\"question\": qid, \"answer\": str}")
    assign.add_argument("--output", default="-", help="JSONL to write (default: stdout)")
    assign.add_argument("--threshold", type=float, default=None,
                        help="minimum probability of a proposed cluster (overrides "
                             "assign.threshold, 0.4 in the shipped spec)")
    assign.add_argument("--no-embeddings", action="store_true",
                        help="skip the MiniLM signals (no model load; uses "
                             "assign.without_embeddings)")
    assign.add_argument("--leave-one-out", action="store_true",
                        help="evaluate on TARGETS: hold out each member string, recover its cluster")
    add_spec_args(assign, "protoqa")




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
    export.set_defaults(staged_output=True)   # written beside --output, then swapped in
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


def run_hits_export(questions_path: str, fmt: str, output: str) -> dict[str, str]:
    """`protoqa hits export`: the task files; returns their paths by role."""
    from transforms.protoqa.hits import export_label_studio, export_mturk, read_questions

    questions = read_questions(questions_path)
    path = _local_dir(output)
    return export_mturk(questions, path) if fmt == "mturk" else export_label_studio(questions, path)


def run_hits_import(spec: ProtoqaSpec, results: str, output: str, fmt: str = "auto",
                    hits_dir: Optional[str] = None) -> dict:
    """`protoqa hits import`: the crowd answers CSV and its rejects; returns the summary."""
    from transforms.core.errors import UserError
    from transforms.protoqa.hits import IMPORT, import_results, rejects_path, write_answers, write_rejects

    if Path(output).suffix.lower() in (".json", ".jsonl"):
        raise UserError(f"--output {output}: the import writes the crowd answers CSV that "
                        f"cluster-prep reads; give a .csv path")
    if not hits_dir:
        print("warning: without --hits, results of another export are not detected",
              file=sys.stderr)
    rows, rejects, n_in = import_results(results, spec.limits, fmt, hits_dir)
    write_rejects(rejects_path(output), rejects)
    write_answers(output, rows)
    summary = _tally_summary({IMPORT: (n_in, len(rows), Counter(r.reason for r in rejects))}, [IMPORT])
    summary["questions"] = len({r["question_id"] for r in rows})
    return summary


def run_hits_preview(questions_path: Optional[str], hits_dir: Optional[str], row: int, port: int) -> int:
    """`protoqa hits preview`: serve the filled page until interrupted."""
    from transforms.core.errors import UserError
    from transforms.core.platforms import preview
    from transforms.protoqa.hits import exported_questions, preview_page, read_questions

    if questions_path:
        questions = read_questions(questions_path)
    elif hits_dir:
        questions = exported_questions(hits_dir)
    else:
        raise UserError("give QUESTIONS or --hits DIR: the questions to fill the page with")
    return preview(preview_page(questions, row), port)


def _run_hits(args) -> int:
    from transforms.core.accounting import STAGE_UNITS, format_summary
    from transforms.protoqa.hits import IMPORT, rejects_path

    if args.hits_command == "export":
        for role, path in run_hits_export(args.questions, args.format, args.output).items():
            print(f"{role:<10}{Path(path).name}")   # --output is the staging directory here
        return 0
    if args.hits_command == "import":
        from data_specs import ProtoqaSpec, load_dataset_spec

        spec = load_dataset_spec(ProtoqaSpec, args.spec, args.overrides)
        summary = run_hits_import(spec, args.results, args.output, args.format, args.hits)
        print(format_summary(summary, {**STAGE_UNITS["protoqa"], IMPORT: "assignments"}))
        print(f"\n{summary['stages'][IMPORT]['kept']} answers to {summary['questions']} questions: "
              f"{args.output} (rejects: {rejects_path(args.output)})")
        return 0 if _balanced(summary) else 3
    return run_hits_preview(args.questions, args.hits, args.row, args.port)


def _mark_run(output: str, command: str) -> None:
    from transforms.core.io import write_json

    write_json(f"{output.rstrip('/')}/{RUN_FILE}", {"dataset": "protoqa", "command": command})


def _local_dir(output: str) -> Path:
    path = Path(output)
    path.mkdir(parents=True, exist_ok=True)
    return path


def _write_jsonl(path: Path, records: Sequence[dict]) -> None:
    from transforms.protoqa.release import dumps_record

    with open(path, "w", encoding="utf-8") as handle:
        for record in records:
            handle.write(dumps_record(record) + "\n")


def _tally_summary(stages: dict[str, tuple[int, int, Counter]], order: Sequence[str]) -> dict:
    """The summary of plain-Python stages: `order` first (zeros for a stage that never ran)."""
    from transforms.core.accounting import stage_entry

    names = list(order) + [s for s in stages if s not in order]
    return {"stages": {s: stage_entry(*stages.get(s, (0, 0, {}))) for s in names}}


def _balanced(summary: dict) -> bool:
    return all(s["balanced"] for s in summary["stages"].values())


def run_questions(spec: ProtoqaSpec, inputs: Sequence[str], output: str, omitted: Sequence[str] = (),
                  flagged: Sequence[str] = (), options: Optional[PipelineOptions] = None) -> dict:
    """Question curation on Beam (pipeline/graphs/protoqa.py); returns the summary (also in
    OUTPUT/summary.json) and marks OUTPUT as a finished ProtoQA run."""
    from pipeline.engine.runner import clear_output
    from pipeline.graphs import protoqa as protoqa_beam

    clear_output(output.rstrip("/"), (), (RUN_FILE,))
    summary = protoqa_beam.run_questions(spec, inputs, output, omitted, flagged, options)
    _mark_run(output.rstrip("/"), "questions")
    return summary


def run_cluster_prep(spec: ProtoqaSpec, answers_csv: str, output: str, models=None) -> dict:
    """Normalised answers and proposed clusters of a crowd answers CSV; returns the summary."""
    from transforms.core.io import write_json, write_rows
    from transforms.protoqa.cluster_prep import (
        PREP_STAGES,
        PROPOSE,
        READ,
        check_models,
        prepare_all,
        read_crowd_answers,
    )

    if models is None:
        check_models(spec.answers)
    path = _local_dir(output)
    questions, rejects, n_rows = read_crowd_answers(answers_csv, spec.limits)
    rows = prepare_all(questions, spec.answers, spec.seed, models)
    summary = _tally_summary({
        READ: (n_rows, n_rows - len(rejects), Counter(r.reason for r in rejects)),
        PROPOSE: (len(questions), len({r["question_id"] for r in rows}), Counter()),
    }, PREP_STAGES)
    from transforms.core.provenance import file_metadata

    meta = file_metadata(spec, [answers_csv])
    write_rows(rows, "protoqa", "answers", path / "answers", file_metadata=meta)
    write_rows([r.row() for r in rejects], "protoqa", "rejects", path / "rejects", file_metadata=meta)
    write_json(str(path / "summary.json"), summary)
    _mark_run(str(path), "cluster-prep")
    return summary


def run_sheets_export(prep_dir: str, output: str, annotators: Sequence[str], fmt: str = "csv",
                      invalid_labels: Sequence[str] = ("?", "invalid")) -> list[str]:
    """One blank annotation sheet per annotator (default A and B), CSV or .xlsx with drop-downs
    (`invalid_labels` end each list); returns their paths."""
    from transforms.protoqa.cluster_prep import read_prep
    from transforms.protoqa.sheets import ANNOTATOR_COLUMNS, export_sheet_rows, write_csv, write_xlsx

    path = _local_dir(output)
    rows = export_sheet_rows(read_prep(prep_dir))
    written = []
    for name in annotators or ["A", "B"]:
        target = path / f"sheet_{name}.{fmt}"
        if fmt == "xlsx":
            write_xlsx(str(target), rows, invalid_labels)
        else:
            write_csv(str(target), ANNOTATOR_COLUMNS, rows)
        written.append(str(target))
    return written


def run_sheets_import(spec: ProtoqaSpec, sheets: Sequence[str], output: str,
                      columns: Optional[Sequence[str]] = None) -> dict:
    """BLANC agreement of two annotators, their disagreements and the adjudication sheet."""
    from transforms.core.io import write_json
    from transforms.protoqa.sheets import (
        ADJUDICATION_COLUMNS,
        DISAGREEMENT_COLUMNS,
        adjudication_rows,
        agreement,
        disagreements,
        load_sheet,
        merge_read_sheets,
        write_csv,
    )

    invalid = spec.sheets.invalid_labels
    merged, (col_a, col_b) = merge_read_sheets([load_sheet(s, spec.limits) for s in sheets], columns)
    result = agreement(merged, "annotator_a", "annotator_b", invalid, spec.sheets.blanc.mentions)
    result["annotators"] = ([Path(s).stem for s in sheets] if len(sheets) == 2 and not columns
                            else [col_a, col_b])
    result["paper_blanc"] = spec.sheets.paper_blanc
    path = _local_dir(output)
    write_json(str(path / "agreement.json"), result)
    disputes = [d for q in merged for d in disagreements(q, "annotator_a", "annotator_b", invalid)]
    write_csv(str(path / "disagreements.csv"), DISAGREEMENT_COLUMNS, disputes)
    write_csv(str(path / "adjudication.csv"), ADJUDICATION_COLUMNS, adjudication_rows(merged, invalid))
    _mark_run(str(path), "sheets-import")
    result["disagreements"] = len(disputes)
    return result


def run_adjudicate(spec: ProtoqaSpec, sheet: str, output: str, column: Optional[str] = None) -> dict:
    """protoqa-data records of an adjudicated sheet (OUTPUT/adjudicated.jsonl); the summary."""
    from transforms.core.io import write_json
    from transforms.protoqa.sheets import ADJUDICATE, adjudicate, adjudication_column, load_sheet

    questions, cols = load_sheet(sheet, spec.limits)
    records, rejects = adjudicate(questions, column or adjudication_column(cols),
                                  spec.sheets.invalid_labels, spec.release.source)
    path = _local_dir(output)
    _write_jsonl(path / "adjudicated.jsonl", records)
    summary = _tally_summary({ADJUDICATE: (len(questions), len(records),
                                           Counter(r.reason for r in rejects))}, [ADJUDICATE])
    summary["rejects"] = [r.row() for r in rejects]
    write_json(str(path / "summary.json"), summary)
    _mark_run(str(path), "adjudicate")
    return summary


def run_release(spec: ProtoqaSpec, inputs: Sequence[str], output: str, directory: Optional[str] = None) -> dict:
    """Coverage filter and dev / test split; returns {"summary": ..., "coverage": report}. Also
    writes the Hugging Face layout and card (`write_hf_release`; `directory`: the path the card's
    loading example shows, default `output`)."""
    from transforms.core.io import write_json
    from transforms.protoqa.release import (
        COVERAGE,
        RELEASE_STAGES,
        SPLIT,
        coverage_report,
        filter_coverage,
        read_records,
        split_records,
    )

    records = read_records(inputs)
    report = coverage_report(records, spec.coverage)
    kept, rejects = filter_coverage(records, spec.coverage)
    splits = split_records(kept, spec.release, spec.seed)
    path = _local_dir(output)
    for name, items in splits.items():
        target = path / f"{name}.jsonl"
        if name == "unsplit" and not items:
            if target.exists():
                target.unlink()
            continue
        _write_jsonl(target, items)
    split_kept = len(splits["dev"]) + len(splits["test"])
    summary = _tally_summary({
        COVERAGE: (len(records), len(kept), Counter(r["reason"] for r in rejects)),
        SPLIT: (len(kept), split_kept, Counter({"over_split_sizes": len(splits["unsplit"])})
                if splits["unsplit"] else Counter()),
    }, RELEASE_STAGES)
    summary["splits"] = {name: [r["metadata"]["id"] for r in items] for name, items in splits.items()}
    summary["rejects"] = rejects
    write_json(str(path / "coverage.json"), report)
    write_json(str(path / "summary.json"), summary)
    _mark_run(str(path), "release")
    write_hf_release(spec, inputs, path, splits, summary, directory or output)
    return {"summary": summary, "coverage": report}


LIMITATIONS = """The answer clusters are the annotators' (the sheets' adjudicated column); the
clusters csdata proposes (exact match, WordNet, all-MiniLM-L6-v2 neighbours, MinHash) are
suggestions only and are not in this release. Questions are kept by the spec's coverage reading
(coverage.json lists what every reading keeps); dev and test are cut by sha1(seed:id)."""


def write_hf_release(spec: ProtoqaSpec, inputs: Sequence[str], path: Path, splits: dict, summary: dict,
                     directory: str) -> None:
    """The release's rows in the Hugging Face layout (data/{validation,test}-*.parquet) and its
    dataset card, beside the protoqa-data JSONL."""
    from data_specs import load_schema
    from pipeline.cli.releases import default_specs, funnel_section
    from transforms.core.accounting import STAGE_UNITS
    from transforms.core.provenance import (
        describe_inputs,
        file_metadata,
        spec_data,
        spec_sha256,
        utc_now,
        versions,
    )
    from transforms.core.release import Config, Release, build_section, code_block, write_release
    from transforms.protoqa.release import CITATION, release_rows

    data = spec_data(spec)
    step = {"command": "protoqa release",
            "argv": ["protoqa", "release", *[w for i in inputs for w in ("--input", i)]],
            "inputs": describe_inputs(inputs), "spec": data, "spec_sha256": spec_sha256(data),
            "versions": versions(), "finished": utc_now(), "stages": summary["stages"]}
    provenance = {"steps": [step]}
    sections = [
        ("How it was built", build_section(provenance, default_specs())),
        ("Statistics", "Beside the paper's figures (`csdata stats RUN`):\n\n" + code_block(stats(path))),
        ("Reject funnel", funnel_section(provenance, summary, STAGE_UNITS["protoqa"])),
        ("Limitations", " ".join(LIMITATIONS.split())),
        ("Provenance", "`provenance.json` records the inputs (path, size, sha256), the spec and the "
                       "versions; `csdata protoqa reproduce THIS_DIR --output NEW` reruns the release "
                       "from them and compares the rows."),
    ]
    write_release(path, Release(
        pretty_name="ProtoQA (regenerated with csdata)",
        configs=[Config("default", load_schema("protoqa", "release"), release_rows(splits))],
        license="cc-by-4.0", task_categories=["question-answering"], task_ids=["open-domain-qa"],
        source_datasets=["original"],
        summary=("ProtoQA (Boratko et al. 2020): prototypical common-sense questions with the "
                 "crowd's answers grouped into clusters with counts, regenerated by csdata; rows "
                 "in the protoqa-data shape, with the objects keyed by answer or cluster id as lists."),
        sections=sections, citation=CITATION, file_metadata=file_metadata(data, inputs)), directory=directory)


def run_score(targets_path: str, predictions_path: str, similarity: str = "exact",
              per_question_path: Optional[str] = None) -> tuple[dict, int, float]:
    """The official metrics' means; (means, predicted questions, seconds scoring).

    Writes the per-question report to `per_question_path` when given; warns on stderr about
    target questions without predictions (not counted, as officially).
    """
    from transforms.protoqa import metric as pm

    targets = pm.load_targets(targets_path)
    predictions = pm.load_predictions(predictions_path)
    missing = pm.missing_questions(targets, predictions)
    if missing:
        print(f"warning: {len(missing)} target question(s) have no predictions and are not "
              f"counted (official behaviour): {', '.join(missing[:5])}", file=sys.stderr)
    start = time.perf_counter()
    means, per_question = pm.evaluate(targets, predictions, similarity)
    seconds = time.perf_counter() - start
    if per_question_path:
        report = pm.report_json(means, per_question, similarity)
        report.update(targets=str(targets_path), predictions=str(predictions_path), seconds=seconds)
        Path(per_question_path).write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return means, len(predictions), seconds


def with_assign_threshold(spec: ProtoqaSpec, threshold: Optional[float]) -> ProtoqaSpec:
    """`spec` with `assign.threshold` replaced (validated) unless `threshold` is None."""
    if threshold is None:
        return spec
    from data_specs import ProtoqaSpec, validate_spec

    updated = validate_spec(spec.model_copy(update={
        "assign": spec.assign.model_copy(update={"threshold": threshold})}))
    assert isinstance(updated, ProtoqaSpec)
    return updated


def run_assign(spec: ProtoqaSpec, targets_path: str, answers_path: Optional[str], output: str = "-",
               embeddings: bool = True, held_out: bool = False) -> int:
    """`protoqa assign`: proposals for ANSWERS as JSONL, or the leave-one-out report; exit code."""
    from transforms.core.models import check_minilm
    from transforms.protoqa import metric as pm
    from transforms.protoqa.assign import (
        ClusterAssigner,
        assign_rows,
        leave_one_out,
        minilm_embedder,
        read_answer_rows,
        unknown_questions,
    )

    if embeddings:
        check_minilm()
    targets = pm.load_targets(targets_path)
    assigner = ClusterAssigner(spec.assign, minilm_embedder() if embeddings else None)
    if held_out:
        print(json.dumps(leave_one_out(targets, assigner), indent=1))
        return 0
    if not answers_path:
        print("error: --answers is required (or use --leave-one-out)", file=sys.stderr)
        return 2
    rows = read_answer_rows(answers_path)
    unknown = unknown_questions(targets, rows)
    if unknown:
        print(f"error: question(s) not in the targets: {', '.join(unknown[:5])}", file=sys.stderr)
        return 2
    out = sys.stdout if output == "-" else open(output, "w", encoding="utf-8")
    try:
        for line in assign_rows(assigner, targets, rows):
            out.write(json.dumps(line) + "\n")
    finally:
        if out is not sys.stdout:
            out.close()
    return 0


def is_run(path) -> bool:
    marker = Path(path) / RUN_FILE
    if not marker.is_file():
        return False
    try:
        return json.loads(marker.read_text(encoding="utf-8")).get("dataset") == "protoqa"
    except ValueError:
        return False


def stats(path) -> str:
    from transforms.protoqa.stats import cluster_counts, format_agreement, stats_from_counts

    path = Path(path)
    command = json.loads((path / RUN_FILE).read_text(encoding="utf-8"))["command"]
    if command == "sheets-import":
        return format_agreement(json.loads((path / "agreement.json").read_text(encoding="utf-8")))
    what, per_question = cluster_counts(path, command)
    return stats_from_counts(what, per_question)


def run(args, extra: Sequence[str], beam_options) -> int:
    command = args.protoqa_command
    if command not in ("questions", "reproduce") and extra:
        raise SystemExit(f"csdata protoqa {command}: unrecognized arguments: {' '.join(extra)}")
    if command == "score":
        means, n_questions, seconds = run_score(args.targets, args.predictions, args.similarity,
                                                args.per_question)
        if args.json:
            print(json.dumps(means))
        else:
            print(f"{n_questions} questions, {args.similarity} similarity, {seconds:.2f} s")
            for name, value in means.items():
                print(f"{name:<22} {value:.4f}")
        return 0
    if command == "hits":
        return _run_hits(args)
    from data_specs import ProtoqaSpec, load_dataset_spec
    from transforms.core.accounting import STAGE_UNITS, format_summary
    from transforms.protoqa.stats import format_agreement, format_coverage

    if command == "reproduce":
        from pipeline.cli.releases import reproduce_command

        return reproduce_command(args, extra)
    spec = load_dataset_spec(ProtoqaSpec, args.spec, args.overrides)
    if command == "assign":
        return run_assign(with_assign_threshold(spec, args.threshold), args.targets, args.answers,
                          args.output, embeddings=not args.no_embeddings, held_out=args.leave_one_out)
    if command == "questions":
        summary = run_questions(spec, args.input, args.output, args.omitted, args.flagged,
                                beam_options(extra))
        print(format_summary(summary, STAGE_UNITS["protoqa"]))
        return 0 if _balanced(summary) else 3
    if command == "cluster-prep":
        summary = run_cluster_prep(spec, args.answers, args.output)
        print(format_summary(summary, STAGE_UNITS["protoqa"]))
        return 0 if _balanced(summary) else 3
    if command == "sheets":
        if args.sheets_command == "export":
            for path in run_sheets_export(args.prep, args.output, args.annotator, args.format,
                                          spec.sheets.invalid_labels):
                print(Path(path).name)     # --output is the staging directory here
            return 0
        if args.sheets_command == "import":
            print(format_agreement(run_sheets_import(spec, args.sheet, args.output, args.columns)))
            return 0
        if args.sheets_command == "adjudicate":
            summary = run_adjudicate(spec, args.sheet, args.output, args.column)
            print(format_summary(summary, STAGE_UNITS["protoqa"]))
            return 0 if _balanced(summary) else 3
    if command == "release":
        result = run_release(spec, args.input, args.output, getattr(args, "final_output", None))
        print(format_coverage(result["coverage"]))
        splits = result["summary"]["splits"]
        print("splits: " + ", ".join(f"{k} {len(v)}" for k, v in splits.items()))
        print(format_summary(result["summary"], STAGE_UNITS["protoqa"]))
        return 0 if _balanced(result["summary"]) else 3
    raise SystemExit(f"unknown protoqa command {command!r}")


def demo(output_dir: Path, make_options) -> bool:
    """ProtoQA on the invented samples in tests/data/protoqa (sample inputs, not real data).

    Returns False when a stage's accounting does not balance (in != kept + rejected).
    """
    from data_specs import ProtoqaSpec, load_dataset_spec
    from transforms.core.accounting import STAGE_UNITS, format_summary
    from transforms.protoqa.stats import format_agreement, format_coverage

    spec = load_dataset_spec(ProtoqaSpec, "protoqa")
    out = Path(output_dir) / "protoqa"
    rel = SAMPLES.relative_to(REPO_ROOT)
    print(f"ProtoQA question curation on {rel}/scraped.jsonl -> {out / 'questions'}")
    summary = run_questions(spec, [str(SAMPLES / "scraped.jsonl")], str(out / "questions"),
                            [str(SAMPLES / "omitted.jsonl")], [str(SAMPLES / "flagged.txt")],
                            make_options())
    print(format_summary(summary, STAGE_UNITS["protoqa"]))
    summaries = [summary]
    print(f"\nProtoQA cluster prep on {rel}/crowd_answers.csv -> {out / 'prep'}")
    summaries.append(run_cluster_prep(spec, str(SAMPLES / "crowd_answers.csv"), str(out / "prep")))
    print(format_summary(summaries[-1], STAGE_UNITS["protoqa"]))
    run_sheets_export(str(out / "prep"), str(out / "sheets"), ["A", "B"])
    print(f"\nProtoQA sheets: blank sheets in {out / 'sheets'}; agreement of the SAMPLE filled sheets "
          f"{rel}/sheets/annotator_{{a,b}}.csv (invented sample inputs)")
    print(format_agreement(run_sheets_import(
        spec, [str(SAMPLES / "sheets" / "annotator_a.csv"), str(SAMPLES / "sheets" / "annotator_b.csv")],
        str(out / "agreement"))))
    print(f"\nProtoQA adjudication of the SAMPLE sheet {rel}/sheets/adjudicated.csv and release")
    summaries.append(run_adjudicate(spec, str(SAMPLES / "sheets" / "adjudicated.csv"),
                                    str(out / "adjudicated")))
    print(format_summary(summaries[-1], STAGE_UNITS["protoqa"]))
    result = run_release(spec, [str(out / "adjudicated" / "adjudicated.jsonl")], str(out / "release"))
    summaries.append(result["summary"])
    print(format_coverage(result["coverage"]))
    print(format_summary(result["summary"], STAGE_UNITS["protoqa"]))
    print()
    print(stats(out / "release"))
    return all(_balanced(s) for s in summaries)
