"""Cosmos QA (Huang et al. 2019): paragraphs from blog dumps, the crowd round trip, NOTA, release.

    csdata cosmos paragraphs --input 'blogs/*.xml' --output out/cosmos     # stage 1 (Beam)
    csdata cosmos hits export out/cosmos --output hits.csv                 # question-writing task
    csdata cosmos hits import out/cosmos --questions q.csv --validations v.csv --output out/cosmos-qa
    csdata cosmos export out/cosmos-qa --output release/                   # train.csv dev.csv test.jsonl
    csdata stats out/cosmos (or out/cosmos-qa)                             # beside the paper's Table 1

The entry points `add_commands`, `run`, `is_run`, `stats` and `demo` are called by pipeline/cli.py.
"""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Callable, Sequence

import apache_beam as beam

from transforms.core.accounting import Summarize, format_summary
from transforms.core.io import WriteTable, read_summary
from transforms.cosmos.stats import format_stats

REPO_ROOT = Path(__file__).resolve().parent.parent


DEMO_DATA = REPO_ROOT / "tests" / "data" / "cosmos"


PARAGRAPH_TABLES = ("paragraphs", "rejects")


def stage_order() -> list[str]:
    from transforms.cosmos.paragraphs import COHERENCE_STAGE, SAMPLE_STAGE, SENTENCE_STAGE, STORY_STAGE
    from transforms.cosmos.read import STAGE as READ_STAGE
    from transforms.cosmos.segment import STAGE as SEGMENT_STAGE

    return [READ_STAGE, STORY_STAGE, SENTENCE_STAGE, COHERENCE_STAGE, SEGMENT_STAGE, SAMPLE_STAGE]


class GenerateCosmosParagraphs(beam.PTransform):
    """Stage 1 from input patterns to `{output}/{paragraphs,rejects}/` Parquet and summary.json."""

    def __init__(self, spec: dict, inputs: Sequence[str], output: str):
        super().__init__()
        self._spec, self._inputs, self._output = spec, list(inputs), output.rstrip("/")

    def expand(self, pbegin):
        from transforms.cosmos.paragraphs import Paragraphs
        from transforms.cosmos.read import ReadStories

        spec, out = self._spec, self._output
        shards = int(spec["output"]["num_shards"])
        stories, read_rejects, read_tallies = pbegin | "ReadStories" >> ReadStories(self._inputs, spec)
        paragraphs, rejects, tallies = stories | "Paragraphs" >> Paragraphs(spec)
        (paragraphs | "ParagraphRows" >> beam.Map(lambda p: p.row())
         | "WriteParagraphs" >> WriteTable(out, "paragraphs", shards, dataset="cosmos"))
        ([read_rejects, *rejects] | "FlattenRejects" >> beam.Flatten()
         | "RejectRows" >> beam.Map(lambda r: r.row())
         | "WriteRejects" >> WriteTable(out, "rejects", shards, dataset="cosmos"))
        return ([read_tallies, *tallies] | "FlattenTallies" >> beam.Flatten()
                | "Summarize" >> Summarize(f"{out}/summary.json", stage_order()))


def run_paragraphs(spec: dict, inputs: Sequence[str], output: str, options=None) -> dict:
    """Run stage 1; returns the summary (also in `{output}/summary.json`)."""
    from apache_beam.options.pipeline_options import PipelineOptions

    from pipeline.runner import clear_output

    clear_output(output, PARAGRAPH_TABLES)
    pipeline = beam.Pipeline(options=options or PipelineOptions(["--runner=FnApiRunner"]))
    pipeline | "GenerateCosmosParagraphs" >> GenerateCosmosParagraphs(spec, inputs, output)
    pipeline.run().wait_until_finish()
    return read_summary(f"{output.rstrip('/')}/summary.json")


def is_run(path) -> bool:
    """A Cosmos output directory: stage 1 (paragraphs/ + summary without ReCoRD tables) or stage 2-3."""
    p = Path(path)
    return (p / "paragraphs").is_dir() and not (p / "passages").is_dir()


def stats(path) -> str:
    from data_specs import load_spec

    return format_stats(Path(path), load_spec("cosmos"))


def add_commands(commands, add_spec_args: Callable[[argparse.ArgumentParser, str], None]) -> None:
    cosmos = commands.add_parser("cosmos", help="Cosmos QA: blog stories to commonsense questions")
    sub = cosmos.add_subparsers(dest="cosmos_command", required=True)

    paragraphs = sub.add_parser(
        "paragraphs", help="stage 1: cut blog stories into 30-150 word paragraphs, one per blog",
        description="Read Blog Authorship Corpus files (.xml, UTF-8 or latin-1), JSONL rows "
                    "(id, text, blog_id) or text files (one story each); split sentences with "
                    "spaCy, score each gap with the spec's coherence scorer (all-MiniLM-L6-v2 by "
                    "default), cut each story by dynamic programming at its least coherent gaps, "
                    "and keep one paragraph per blog by hash. Writes OUTPUT/{paragraphs,rejects}/ "
                    "and OUTPUT/summary.json. Other options go to Beam (e.g. --runner).")
    paragraphs.add_argument("--input", action="append", required=True, metavar="PATTERN",
                            help="file, directory or glob of .xml / .jsonl / .txt (repeatable)")
    paragraphs.add_argument("--output", required=True, help="output directory (local or gs://)")
    add_spec_args(paragraphs, "cosmos")

    hits = sub.add_parser("hits", help="stage 2: crowd round trip (question writing, validation)")
    hits_sub = hits.add_subparsers(dest="hits_command", required=True)
    export = hits_sub.add_parser(
        "export", help="write the question-writing task CSV of a paragraphs run",
        description="One row per paragraph: paragraph_id, blog_id, paragraph, instructions (the "
                    "four question types; at most 2 questions, each with up to 2 correct and 3 "
                    "incorrect answers).")
    export.add_argument("run_dir", help="output directory of `csdata cosmos paragraphs`")
    export.add_argument("--output", required=True, help="CSV file to write")
    add_spec_args(export, "cosmos")
    imp = hits_sub.add_parser(
        "import", help="read written questions and 3 validations per set; NOTA; splits",
        description="QUESTIONS.csv: assignment_id, worker_id, paragraph_id, question_number, "
                    "question, correct_1, correct_2, incorrect_1..3 [, hit_id, question_type]. "
                    "VALIDATIONS.csv: set_id ({assignment_id}#q{n}), worker_id, "
                    "paragraph_sensible, question_sensible, chosen_answer (text or number in the "
                    "order correct..., incorrect...), needs_commonsense, "
                    "answerable_without_paragraph (yes/no). Valid: >= 2 workers chose a correct "
                    "answer and all were satisfied. Unanswerable and false-negative 'None of the "
                    "above' per paper §2.4; dev/test from splits.excellent_workers. Writes sets/, "
                    "train/, dev/, test/, paragraphs/, rejects/, summary.json.")
    imp.add_argument("run_dir", help="output directory of `csdata cosmos paragraphs`")
    imp.add_argument("--questions", required=True, help="written question sets CSV")
    imp.add_argument("--validations", required=True, help="validation results CSV")
    imp.add_argument("--output", required=True)
    add_spec_args(imp, "cosmos")

    release = sub.add_parser(
        "export", help="write train.csv, dev.csv, test.jsonl in the Cosmos QA release format",
        description="CSV id,context,question,answer0..answer3,label for train and dev; JSONL "
                    "without label for test. NOTA is written as 'None of the above choices .'.")
    release.add_argument("qa_dir", help="output directory of `csdata cosmos hits import`")
    release.add_argument("--output", required=True, help="directory for the three files")


def run(args, extra: Sequence[str], beam_options) -> int:
    from data_specs import load_spec

    command = args.cosmos_command
    if command != "paragraphs" and extra:
        raise SystemExit(f"csdata cosmos {command}: unrecognized arguments: {' '.join(extra)}")
    if command == "paragraphs":
        spec = load_spec(args.spec, args.overrides)
        summary = run_paragraphs(spec, args.input, args.output, beam_options(extra))
        print(format_summary(summary))
        return 0 if all(s["balanced"] for s in summary["stages"].values()) else 3
    if command == "hits":
        from transforms.cosmos.crowd import export_question_hits, import_results

        spec = load_spec(args.spec, args.overrides)
        if args.hits_command == "export":
            n = export_question_hits(args.run_dir, args.output, spec)
            print(f"{n} question-writing HITs written to {args.output}")
            return 0
        summary = import_results(args.run_dir, args.questions, args.validations, args.output, spec)
        print(", ".join(f"{k} {v}" for k, v in summary["splits"].items()) +
              f"; unanswerable sets {summary['nota']['unanswerable_sets']}, "
              f"false-negative NOTA sets {summary['nota']['false_negative_sets']} "
              f"of {summary['nota']['valid_sets']} valid")
        print(format_summary({"stages": summary["stages"]}))
        return 0 if all(s["balanced"] for s in summary["stages"].values()) else 3
    if command == "export":
        from transforms.cosmos.crowd import export_release

        counts = export_release(args.qa_dir, args.output)
        print(", ".join(f"{name}: {n} rows" for name, n in counts.items()))
        return 0
    raise SystemExit(f"unknown cosmos command {command!r}")


def demo(output_dir: Path, make_options) -> None:
    from data_specs import load_spec

    output = Path(output_dir) / "cosmos"
    spec = load_spec("cosmos")
    inputs = [str(DEMO_DATA / "blogs"), str(DEMO_DATA / "stories.jsonl")]
    print(f"Cosmos QA stage 1 on {DEMO_DATA.relative_to(REPO_ROOT)} -> {output}")
    run_paragraphs(spec, inputs, str(output), make_options())
    print(format_stats(output, spec))  # includes the per-stage summary
    print("(stages 2-3 need crowd worker data: csdata cosmos hits export / import)")
