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
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Optional, Sequence

from pipeline.cli.protoqa_crowd import add_hits_commands, add_sheets_commands, run_hits, run_sheets
from pipeline.cli.run import balanced, summary_exit

if TYPE_CHECKING:
    from data_specs import ProtoqaSpec

# This docstring is `csdata protoqa --help`'s description. The steps are transforms.protoqa.steps
# (the Beam one pipeline.graphs.protoqa), the hits and sheets commands pipeline.cli.protoqa_crowd.
# The transforms, the spec models and Beam are imported by the functions that use them, so that
# `csdata --help` and `protoqa score` start fast.
REPO_ROOT = Path(__file__).resolve().parents[2]
SAMPLES = REPO_ROOT / "tests" / "data" / "protoqa"


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
    # Beam's workers write the attempt, on an object store too
    questions.set_defaults(writes_output=True, beam_writer=True)
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
    prep.set_defaults(writes_output=True)
    add_spec_args(prep, "protoqa")

    add_sheets_commands(sub, add_spec_args)

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
    release.set_defaults(writes_output=True)
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


def run_release(spec: ProtoqaSpec, inputs: Sequence[str], output: str, directory: Optional[str] = None) -> dict:
    """`protoqa release`: the coverage filter and the dev / test split
    (`transforms.protoqa.steps.write_release_splits`), then the same rows in the Hugging Face
    layout with their dataset card (`directory`: the path the card's loading example shows,
    default `output`); returns {"summary", "coverage", "splits"}."""
    from pipeline.cli.releases import default_specs, funnel_section
    from transforms.core.accounting import STAGE_UNITS
    from transforms.core.reporting.release import build_section, write_release
    from transforms.protoqa.release import hf_release, release_provenance
    from transforms.protoqa.stats import cluster_counts, stats_from_counts
    from transforms.protoqa.steps import write_release_splits

    result = write_release_splits(spec, inputs, output)
    summary = result["summary"]
    provenance = release_provenance(spec, inputs, summary)
    release = hf_release(spec, inputs, result["splits"], build_section(provenance, default_specs()),
                         stats_from_counts(*cluster_counts(Path(output), "release")),
                         funnel_section(provenance, summary, STAGE_UNITS["protoqa"]))
    write_release(Path(output), release, directory=directory or output)
    return result


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
    from transforms.core.models.minilm import check_minilm
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
    """A finished ProtoQA run with statistics: its marker names the dataset, and its files one
    of the steps of `transforms.protoqa.steps.run_step`."""
    from pipeline.outputs.protocol import read_marker
    from transforms.protoqa.steps import run_step

    return read_marker(str(path)).get("dataset") == "protoqa" and run_step(path) is not None


def stats(path) -> str:
    """The cluster statistics of a run beside the paper's figures; of a `sheets import` run,
    the BLANC agreement."""
    from transforms.protoqa.stats import cluster_counts, format_agreement, stats_from_counts
    from transforms.protoqa.steps import run_step

    path = Path(path)
    step = run_step(path)
    if step == "sheets-import":
        return format_agreement(json.loads((path / "agreement.json").read_text(encoding="utf-8")))
    return stats_from_counts(*cluster_counts(path, step or ""))


def run(args, extra: Sequence[str], beam_options) -> int:
    """Run the parsed `csdata protoqa ...` command; `extra` (unknown arguments) go to Beam."""
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
        return run_hits(args)
    from data_specs import ProtoqaSpec, load_dataset_spec
    from transforms.core.accounting import STAGE_UNITS
    from transforms.protoqa.stats import format_coverage

    if command == "reproduce":
        from pipeline.cli.releases import reproduce_command

        return reproduce_command(args, extra)
    spec = load_dataset_spec(ProtoqaSpec, args.spec, args.overrides)
    units = STAGE_UNITS["protoqa"]
    if command == "assign":
        return run_assign(with_assign_threshold(spec, args.threshold), args.targets, args.answers,
                          args.output, embeddings=not args.no_embeddings, held_out=args.leave_one_out)
    if command == "questions":
        from pipeline.graphs.protoqa import run_questions

        return summary_exit(run_questions(spec, args.input, args.output, args.omitted, args.flagged,
                                          beam_options(extra)), units)
    if command == "cluster-prep":
        from transforms.protoqa.steps import run_cluster_prep

        return summary_exit(run_cluster_prep(spec, args.answers, args.output), units)
    if command == "sheets":
        return run_sheets(args, spec)
    if command == "release":
        result = run_release(spec, args.input, args.output, getattr(args, "final_output", None))
        print(format_coverage(result["coverage"]))
        print("splits: " + ", ".join(f"{k} {len(v)}" for k, v in result["summary"]["splits"].items()))
        return summary_exit(result["summary"], units)
    raise SystemExit(f"unknown protoqa command {command!r}")


def mark_run(folder: Path, command: str) -> None:
    """Mark a folder a step wrote outside the output protocol (the demo's) as a finished run
    of `protoqa COMMAND`, as the protocol's commit would."""
    from pipeline.outputs.protocol import run_info, write_marker

    write_marker(str(folder), run_info("protoqa", f"protoqa {command}"))


def demo(output_dir: Path, make_options) -> bool:
    """ProtoQA on the invented samples in tests/data/protoqa (sample inputs, not real data).

    Returns False when a stage's accounting does not balance (in != kept + rejected).
    """
    from data_specs import ProtoqaSpec, load_dataset_spec
    from pipeline.graphs.protoqa import run_questions
    from transforms.core.accounting import STAGE_UNITS, format_summary
    from transforms.protoqa.stats import format_agreement, format_coverage
    from transforms.protoqa.steps import (
        run_adjudicate,
        run_cluster_prep,
        run_sheets_export,
        run_sheets_import,
    )

    spec = load_dataset_spec(ProtoqaSpec, "protoqa")
    out = Path(output_dir) / "protoqa"
    rel = SAMPLES.relative_to(REPO_ROOT)
    print(f"ProtoQA question curation on {rel}/scraped.jsonl -> {out / 'questions'}")
    summary = run_questions(spec, [str(SAMPLES / "scraped.jsonl")], str(out / "questions"),
                            [str(SAMPLES / "omitted.jsonl")], [str(SAMPLES / "flagged.txt")],
                            make_options())
    mark_run(out / "questions", "questions")
    print(format_summary(summary, STAGE_UNITS["protoqa"]))
    summaries = [summary]
    print(f"\nProtoQA cluster prep on {rel}/crowd_answers.csv -> {out / 'prep'}")
    summaries.append(run_cluster_prep(spec, str(SAMPLES / "crowd_answers.csv"), str(out / "prep")))
    mark_run(out / "prep", "cluster-prep")
    print(format_summary(summaries[-1], STAGE_UNITS["protoqa"]))
    run_sheets_export(str(out / "prep"), str(out / "sheets"), ["A", "B"])
    print(f"\nProtoQA sheets: blank sheets in {out / 'sheets'}; agreement of the SAMPLE filled sheets "
          f"{rel}/sheets/annotator_{{a,b}}.csv (invented sample inputs)")
    print(format_agreement(run_sheets_import(
        spec, [str(SAMPLES / "sheets" / "annotator_a.csv"), str(SAMPLES / "sheets" / "annotator_b.csv")],
        str(out / "agreement"))))
    mark_run(out / "agreement", "sheets import")
    print(f"\nProtoQA adjudication of the SAMPLE sheet {rel}/sheets/adjudicated.csv and release")
    summaries.append(run_adjudicate(spec, str(SAMPLES / "sheets" / "adjudicated.csv"),
                                    str(out / "adjudicated")))
    mark_run(out / "adjudicated", "sheets adjudicate")
    print(format_summary(summaries[-1], STAGE_UNITS["protoqa"]))
    result = run_release(spec, [str(out / "adjudicated" / "adjudicated.jsonl")], str(out / "release"))
    mark_run(out / "release", "release")
    summaries.append(result["summary"])
    print(format_coverage(result["coverage"]))
    print(format_summary(result["summary"], STAGE_UNITS["protoqa"]))
    print()
    print(stats(out / "release"))
    return all(balanced(s) for s in summaries)
