"""Cosmos QA (Huang et al. 2019): paragraphs from blog dumps, the crowd round trip, NOTA, release.

    csdata cosmos paragraphs --input 'blogs/*.xml' --output out/cosmos     # stage 1 (Beam)
    csdata cosmos hits export out/cosmos --output hits.csv                 # question-writing task
    csdata cosmos hits export out/cosmos --format mturk --output hits/     # ... MTurk / label-studio
    csdata cosmos hits export out/cosmos --task validation --questions q.csv --format mturk --output v/
    csdata cosmos hits preview out/cosmos [--questions q.csv]              # try a page locally
    csdata cosmos hits import out/cosmos --questions q.csv --validations v.csv --output out/cosmos-qa
    csdata cosmos export out/cosmos-qa --output release/                   # train.csv dev.csv test.jsonl
    csdata stats out/cosmos (or out/cosmos-qa)                             # beside the paper's Table 1

The stages themselves are in `transforms.cosmos` (read, paragraphs + segment + scorers: §2.1;
crowd: §2.2-2.3; nota: §2.4; release); this module assembles them (`run_paragraphs`,
`run_hits_import`) and wires the CLI: the entry points `add_commands`, `run`, `is_run`, `stats`
and `demo` are called by pipeline/cli/main.py.
"""
from __future__ import annotations

import argparse
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence, Union

from pipeline.cli.run import summary_exit

if TYPE_CHECKING:
    from apache_beam.options.pipeline_options import PipelineOptions

    from data_specs.models import CosmosSpec
    from transforms.cosmos.scorers import AnswerScorer

# Beam and the transforms are imported by the functions that use them, so that `csdata --help`
# and the commands without a pipeline start fast; stage 1 lives in pipeline/graphs/cosmos.py.
REPO_ROOT = Path(__file__).resolve().parents[2]
DEMO_DATA = REPO_ROOT / "tests" / "data" / "cosmos"
PathLike = Union[str, Path]


# --------------------------------------------------------------------------- stages 2-3 (plain Python)

def run_hits_import(spec: CosmosSpec, run_dir: PathLike, questions_csv: PathLike, validations_csv: PathLike,
                    output_dir: PathLike, scorer: Optional[AnswerScorer] = None,
                    results_format: str = "auto") -> dict[str, Any]:
    """Read written sets and validations (§2.2-2.3), apply the NOTA rules and draw splits (§2.4).

    Writes `sets/`, `train/`, `dev/`, `test/` (schema `instances`), `paragraphs/` (those with a
    valid set), `rejects/` and `summary.json` under `output_dir`; returns the summary. `scorer`
    replaces the spec's `answer_scorer` (built only when a set takes a false negative). Both
    files are the own CSVs or MTurk / Label Studio results (`results_format`, `auto` by default).
    """
    from transforms.core.io.tables import write_json, write_rows
    from transforms.cosmos.crowd import import_results
    from transforms.cosmos.nota import SPLITS, assign_splits, decide_nota, instances_of, set_row
    from transforms.cosmos.scorers import check_scorer, make_answer_scorer

    if scorer is None:
        check_scorer(spec.answer_scorer)
    results = import_results(run_dir, questions_csv, validations_csv, spec.hits, spec.limits, results_format,
                             spec.seed)
    make_scorer = (lambda: scorer) if scorer is not None else partial(make_answer_scorer, spec.answer_scorer)
    decided = decide_nota(results.valid, results.paragraphs, spec.nota, spec.hits.min_intended, spec.seed,
                          make_scorer)
    instances = [row for d in decided
                 for row in instances_of(d, results.paragraphs[d.qset.paragraph_id]["text"], spec.nota, spec.seed)]
    targets = assign_splits(instances, spec.splits, spec.seed)
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    from transforms.core.reporting.provenance import file_metadata

    meta = file_metadata(spec, [str(run_dir), str(questions_csv), str(validations_csv)])
    for split in SPLITS:
        write_rows(sorted((r for r in instances if r["split"] == split), key=lambda r: r["id"]),
                   "cosmos", "instances", out / split, file_metadata=meta)
    write_rows(sorted((set_row(d) for d in decided), key=lambda r: r["set_id"]), "cosmos", "sets", out / "sets",
               file_metadata=meta)
    used = sorted({d.qset.paragraph_id for d in decided})
    write_rows([results.paragraphs[p] for p in used], "cosmos", "paragraphs", out / "paragraphs",
               file_metadata=meta)
    write_rows(sorted(results.rejects, key=lambda r: (r["stage"], r["record_id"])), "cosmos", "rejects",
               out / "rejects", file_metadata=meta)
    summary = {
        "dataset": "cosmos",
        "stages": results.stages(),
        "validations": results.validations,
        "nota": {"unanswerable_sets": sum(d.unanswerable for d in decided),
                 "false_negative_sets": sum(bool(d.replaced) for d in decided),
                 "valid_sets": len(decided)},
        "splits": {s: sum(r["split"] == s for r in instances) for s in SPLITS},
        "targets": targets,
    }
    write_json(str(out / "summary.json"), summary)
    return summary


# --------------------------------------------------------------------------- CLI

def is_run(path) -> bool:
    """A Cosmos output directory: stage 1 (paragraphs/ + summary without ReCoRD tables) or stage 2-3."""
    p = Path(path)
    return (p / "paragraphs").is_dir() and not (p / "passages").is_dir()


def stats(path) -> str:
    from data_specs import load_dataset_spec
    from data_specs.models import CosmosSpec
    from transforms.cosmos.stats import format_stats

    spec = load_dataset_spec(CosmosSpec, "cosmos")
    return format_stats(Path(path), spec.paper_table1, spec.nota)


def add_commands(commands, add_spec_args: Callable[[argparse.ArgumentParser, str], None]) -> None:
    cosmos = commands.add_parser("cosmos", help="Cosmos QA: blog stories to commonsense questions")
    sub = cosmos.add_subparsers(dest="cosmos_command", required=True)

    paragraphs = sub.add_parser(
        "paragraphs", help="stage 1: cut blog stories into 30-150 word paragraphs, one per blog",
        description="Read Blog Authorship Corpus files (.xml, UTF-8 or latin-1), JSONL rows "
                    "(id, text, blog_id) or text files (one story each); split sentences with "
                    "spaCy, score each gap with the spec's coherence scorer (all-MiniLM-L6-v2 by "
                    "default), cut each story by dynamic programming at its least coherent gaps, "
                    "and keep one paragraph per blog by hash; by default only the stories that "
                    "sample needs are split and scored (sample.mode). Writes OUTPUT/{paragraphs,rejects}/ "
                    "and OUTPUT/summary.json. Other options go to Beam (e.g. --runner).")
    paragraphs.add_argument("--input", action="append", required=True, metavar="PATTERN",
                            help="file, directory or glob of .xml / .jsonl / .txt (repeatable)")
    paragraphs.add_argument("--output", required=True, help="output directory (local or gs://)")
    # Beam's workers write the attempt, on an object store too
    paragraphs.set_defaults(writes_output=True, beam_writer=True)
    add_spec_args(paragraphs, "cosmos")

    hits = sub.add_parser("hits", help="stage 2: crowd round trip (question writing, validation)")
    hits_sub = hits.add_subparsers(dest="hits_command", required=True)
    export = hits_sub.add_parser(
        "export", help="write the question-writing or validation task (own CSV, MTurk or Label Studio)",
        description="--task writing (default): one HIT per paragraph (at most 2 questions, each with "
                    "up to 2 correct and 3 incorrect answers and a question type). --task validation "
                    "--questions WRITTEN: one HIT per well-formed written set (the five judgements of "
                    "§2.3; answers in a seeded order). --format csv (default): one CSV file; mturk: "
                    "OUTPUT/template.html (${variable} placeholders) + OUTPUT/batch.csv; label-studio: "
                    "OUTPUT/config.xml + OUTPUT/tasks.json.")
    export.add_argument("run_dir", help="output directory of `csdata cosmos paragraphs`")
    export.add_argument("--output", required=True, help="CSV file (csv) or directory (mturk, label-studio)")
    export.add_argument("--task", choices=["writing", "validation"], default="writing")
    export.add_argument("--questions", help="written sets (own CSV, MTurk results or Label Studio export); "
                                            "needed by --task validation")
    export.add_argument("--format", choices=["csv", "mturk", "label-studio"], default="csv", dest="hits_format",
                        help="task format (default: csv)")
    add_spec_args(export, "cosmos")
    imp = hits_sub.add_parser(
        "import", help="read written questions and 3 validations per set; NOTA; splits",
        description="QUESTIONS: the own CSV (assignment_id, worker_id, paragraph_id, question_number, "
                    "question, correct_1, correct_2, incorrect_1..3 [, hit_id, question_type]), or the "
                    "writing task's MTurk results CSV / Label Studio export. VALIDATIONS: the own CSV "
                    "(set_id ({assignment_id}#q{n}), worker_id, paragraph_sensible, question_sensible, "
                    "chosen_answer (text or number in the order correct..., incorrect...), "
                    "needs_commonsense, answerable_without_paragraph (yes/no)), or the validation "
                    "task's MTurk results / Label Studio export. Valid: >= 2 workers chose a correct "
                    "answer and all were satisfied. Unanswerable and false-negative 'None of the "
                    "above' per paper §2.4; dev/test from splits.excellent_workers. Writes sets/, "
                    "train/, dev/, test/, paragraphs/, rejects/, summary.json.")
    imp.add_argument("run_dir", help="output directory of `csdata cosmos paragraphs`")
    imp.add_argument("--questions", required=True, help="written question sets (CSV, MTurk results or Label Studio JSON)")
    imp.add_argument("--validations", required=True, help="validation results (CSV, MTurk results or Label Studio JSON)")
    imp.add_argument("--format", choices=["auto", "csv", "mturk", "label-studio"], default="auto",
                     dest="hits_format", help="results format of both files (default: auto)")
    imp.add_argument("--output", required=True)
    imp.set_defaults(writes_output=True)
    add_spec_args(imp, "cosmos")
    preview = hits_sub.add_parser(
        "preview", help="serve a filled MTurk task page on localhost",
        description="Serves the writing page filled with a paragraph (or, with --questions, the "
                    "validation page filled with a written set) on http://127.0.0.1:PORT, with a local "
                    "submit endpoint that shows the fields the form sends. Ctrl-C stops it.")
    preview.add_argument("run_dir", help="output directory of `csdata cosmos paragraphs`")
    preview.add_argument("--questions", help="written sets: preview the validation page")
    preview.add_argument("--item", help="paragraph id (writing) or set id (validation) to show")
    preview.add_argument("--port", type=int, default=0, help="port (default: any free one)")
    add_spec_args(preview, "cosmos")

    release = sub.add_parser(
        "export", help="write train.csv, dev.csv, test.jsonl in the Cosmos QA release format",
        description="CSV id,context,question,answer0..answer3,label for train and dev; JSONL "
                    "without label for test. NOTA is written as 'None of the above choices .'.")
    release.add_argument("qa_dir", help="output directory of `csdata cosmos hits import`")
    release.add_argument("--output", required=True, help="directory for the three files")
    release.set_defaults(writes_output=True)

    from pipeline.cli.releases import add_release_commands

    add_release_commands(sub, "cosmos", "a hits import run")


def run(args, extra: Sequence[str], beam_options) -> int:
    command = args.cosmos_command
    from data_specs import load_dataset_spec
    from data_specs.models import CosmosSpec
    from transforms.core.accounting import STAGE_UNITS

    if command == "reproduce":   # the user's Beam options apply to the steps it reruns
        from pipeline.cli.releases import reproduce_command

        return reproduce_command(args, extra)
    if command == "release":
        from pipeline.cli.releases import release_command

        if extra:
            args.command_parser.error(f"unrecognized arguments: {' '.join(extra)}")
        return release_command(args, build_release)
    if command != "paragraphs" and extra:
        raise SystemExit(f"csdata cosmos {command}: unrecognized arguments: {' '.join(extra)}")
    if command == "paragraphs":
        from pipeline.graphs.cosmos import run_paragraphs

        spec = load_dataset_spec(CosmosSpec, args.spec, args.overrides)
        summary = run_paragraphs(spec, args.input, args.output, beam_options(extra),
                                 work=getattr(args, "work", None))
        return summary_exit(summary, STAGE_UNITS["cosmos"])
    if command == "hits":
        from transforms.core.errors import UserError

        spec = load_dataset_spec(CosmosSpec, args.spec, args.overrides)
        if args.hits_command == "export":
            from transforms.cosmos.crowd import export_question_hits, export_validation_hits

            if args.task == "validation":
                if not args.questions:
                    raise UserError("csdata cosmos hits export --task validation needs --questions (the written sets)")
                n = export_validation_hits(args.run_dir, args.questions, args.output, spec.hits, spec.seed, spec.limits,
                                           args.hits_format)
                print(f"{n} validation HITs written to {args.output}")
                return 0
            n = export_question_hits(args.run_dir, args.output, spec.hits, args.hits_format)
            print(f"{n} question-writing HITs written to {args.output}")
            return 0
        if args.hits_command == "preview":
            from transforms.core.crowd.preview_server import preview
            from transforms.cosmos.crowd import preview_page

            return preview(preview_page(args.run_dir, spec.hits, spec.seed, spec.limits, args.questions, args.item), args.port)
        summary = run_hits_import(spec, args.run_dir, args.questions, args.validations, args.output,
                                  results_format=args.hits_format)
        print(", ".join(f"{k} {v}" for k, v in summary["splits"].items()) +
              f"; unanswerable sets {summary['nota']['unanswerable_sets']}, "
              f"false-negative NOTA sets {summary['nota']['false_negative_sets']} "
              f"of {summary['nota']['valid_sets']} valid")
        return summary_exit(summary, STAGE_UNITS["cosmos"])
    if command == "export":
        from transforms.cosmos.release import export_release

        counts = export_release(args.qa_dir, args.output)
        print(", ".join(f"{name}: {n} rows" for name, n in counts.items()))
        return 0
    raise SystemExit(f"unknown cosmos command {command!r}")


def build_release(run_dir: str, provenance: Optional[dict]):
    """The `Release` of a `cosmos hits import` run (`transforms.cosmos.release`) with the card's
    sections."""
    from pipeline.cli.releases import release_metadata, run_card_sections, spec_of
    from transforms.cosmos.release import build_release as cosmos_release
    from transforms.cosmos.release import card_limitations, check_releasable

    check_releasable(run_dir)
    limitations = card_limitations(spec_of(provenance, "cosmos"))
    sections = run_card_sections(run_dir, provenance, "cosmos", stats(run_dir), limitations)
    return cosmos_release(run_dir, sections, release_metadata(run_dir, provenance))


def demo(output_dir: Path, make_options: Callable[[], PipelineOptions]) -> None:
    from data_specs import load_dataset_spec
    from data_specs.models import CosmosSpec
    from pipeline.graphs.cosmos import run_paragraphs
    from transforms.cosmos.stats import format_stats

    output = Path(output_dir) / "cosmos"
    spec = load_dataset_spec(CosmosSpec, "cosmos")
    inputs = [str(DEMO_DATA / "blogs"), str(DEMO_DATA / "stories.jsonl")]
    print(f"Cosmos QA stage 1 on {DEMO_DATA.relative_to(REPO_ROOT)} -> {output}")
    run_paragraphs(spec, inputs, str(output), make_options())
    print(format_stats(output, spec.paper_table1, spec.nota))  # includes the per-stage summary
    print("(stages 2-3 need crowd worker data: csdata cosmos hits export / import)")
