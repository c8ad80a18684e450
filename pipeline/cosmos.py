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
import statistics
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import apache_beam as beam

from transforms.accounting import Summarize, format_summary, read_summary
from transforms.parquet import WriteTable

REPO_ROOT = Path(__file__).resolve().parent.parent
DEMO_DATA = REPO_ROOT / "tests" / "data" / "cosmos"
PARAGRAPH_TABLES = ("paragraphs", "rejects")


def stage_order() -> list[str]:
    from transforms.cosmos_annotate import COHERENCE_STAGE, SAMPLE_STAGE, SENTENCE_STAGE, STORY_STAGE
    from transforms.cosmos_segment import STAGE as SEGMENT_STAGE
    from transforms.cosmos_sources import STAGE as READ_STAGE

    return [READ_STAGE, STORY_STAGE, SENTENCE_STAGE, COHERENCE_STAGE, SEGMENT_STAGE, SAMPLE_STAGE]


class GenerateCosmosParagraphs(beam.PTransform):
    """Stage 1 from input patterns to `{output}/{paragraphs,rejects}/` Parquet and summary.json."""

    def __init__(self, spec: dict, inputs: Sequence[str], output: str):
        super().__init__()
        self._spec, self._inputs, self._output = spec, list(inputs), output.rstrip("/")

    def expand(self, pbegin):
        from transforms.cosmos_annotate import Paragraphs
        from transforms.cosmos_sources import ReadStories

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

    from pipeline.record import clear_output

    clear_output(output, PARAGRAPH_TABLES)
    pipeline = beam.Pipeline(options=options or PipelineOptions(["--runner=FnApiRunner"]))
    pipeline | "GenerateCosmosParagraphs" >> GenerateCosmosParagraphs(spec, inputs, output)
    pipeline.run().wait_until_finish()
    return read_summary(f"{output.rstrip('/')}/summary.json")


# --------------------------------------------------------------------------- statistics

def _describe(values: Sequence[int]) -> tuple[float, int, int]:
    return (statistics.fmean(values) if values else 0.0, max(values, default=0), min(values, default=0))


def histogram(values: Sequence[int], low: int = 30, high: int = 150, width: int = 10) -> list[tuple[str, int]]:
    """Counts per `width`-word bin from `low` to `high` (the last bin includes `high`)."""
    bins = []
    for a in range(low, high, width):
        b = min(a + width, high)
        last = b == high
        bins.append((f"{a}-{b if last else b - 1}", sum(a <= v < b or (last and v == b) for v in values)))
    outside = sum(v < low or v > high for v in values)
    if outside:
        bins.append(("outside", outside))
    return bins


def paragraph_stats(path: Path) -> dict[str, Any]:
    from filters.text import count_tokens
    from pipeline.export import read_table

    rows = read_table(path, "paragraphs", ["blog_id", "text"]).to_pylist()
    words = [len(r["text"].split()) for r in rows]
    tokens = [count_tokens(r["text"]) for r in rows]
    return {"paragraphs": len(rows), "blogs": len({r["blog_id"] for r in rows}),
            "words": _describe(words), "tokens": _describe(tokens), "histogram": histogram(words)}


def qa_stats(path: Path, nota: str) -> dict[str, Any]:
    from filters.text import count_tokens
    from pipeline.export import read_table

    rows = {s: read_table(path, s).to_pylist() for s in ("train", "dev", "test")}
    every = [r for split in rows.values() for r in split]
    paragraphs = {r["paragraph_id"]: r["context"] for r in every}
    correct = [count_tokens(r[f"answer{r['label']}"]) for r in every]
    incorrect = [count_tokens(r[f"answer{i}"]) for r in every for i in range(4) if i != r["label"]]
    sets = {r["set_id"]: r["nota_distractor"] for r in every}
    return {
        "questions": len(every), "paragraphs": len(paragraphs),
        **{f"{s}_questions": len(v) for s, v in rows.items()},
        **{f"{s}_paragraphs": len({r["paragraph_id"] for r in v}) for s, v in rows.items()},
        "paragraph": _describe([count_tokens(t) for t in paragraphs.values()]),
        "question": _describe([count_tokens(r["question"]) for r in every]),
        "correct": _describe(correct), "incorrect": _describe(incorrect),
        "unanswerable_percent": 100.0 * sum(r["unanswerable"] for r in every) / len(every) if every else 0.0,
        "nota_distractor_percent": 100.0 * sum(sets.values()) / len(sets) if sets else 0.0,
        "nota_anywhere_percent": 100.0 * sum(any(r[f"answer{i}"] == nota for i in range(4)) for r in every)
        / len(every) if every else 0.0,
    }


def _row(label: str, ours: str, paper: Any) -> str:
    return f"{label:<34}{ours:>16}  {'-' if paper is None else paper!s:>14}"


def format_stats(path: Path, spec: Mapping[str, Any]) -> str:
    paper = spec.get("paper_table1", {})
    lines = [f"Cosmos QA run {path}", _row("statistic", "this run", "paper"), "-" * 66]
    if (path / "train").is_dir():
        s = qa_stats(path, spec["nota"]["text"])
        lines += [
            _row("questions (paragraphs)", f"{s['questions']} ({s['paragraphs']})",
                 f"{paper.get('questions')} ({paper.get('paragraphs')})"),
            *[_row(f"  {sp}", f"{s[sp + '_questions']} ({s[sp + '_paragraphs']})", paper.get(f"{sp}_questions"))
              for sp in ("train", "dev", "test")],
        ]
        for key, label in (("paragraph", "paragraph"), ("question", "question"),
                           ("correct", "correct answer"), ("incorrect", "incorrect answer")):
            mean, top, _ = s[key]
            ref = paper.get(f"tokens_per_{key if key != 'correct' and key != 'incorrect' else key + '_answer'}")
            ref_max = paper.get(f"max_tokens_per_{key if key not in ('correct', 'incorrect') else key + '_answer'}")
            lines.append(_row(f"tokens/{label} (mean/max)", f"{mean:.1f}/{top}", f"{ref}/{ref_max}"))
        lines.append(_row("unanswerable questions %", f"{s['unanswerable_percent']:.1f}",
                          paper.get("unanswerable_percent")))
        lines.append(_row("valid sets with NOTA distractor %", f"{s['nota_distractor_percent']:.1f}",
                          f"~{100 * float(spec['nota']['false_negative_rate']):.0f} of answerable"))
        lines.append(_row("questions with NOTA anywhere %", f"{s['nota_anywhere_percent']:.1f}", None))
        return "\n".join(lines) + "\n"
    s = paragraph_stats(path)
    mean_w, max_w, min_w = s["words"]
    mean_t, max_t, min_t = s["tokens"]
    lines += [
        _row("paragraphs (blogs)", f"{s['paragraphs']} ({s['blogs']})", paper.get("paragraphs")),
        _row("words/paragraph (mean/max/min)", f"{mean_w:.1f}/{max_w}/{min_w}", "30-150 words"),
        _row("tokens/paragraph (mean/max)", f"{mean_t:.1f}/{max_t}",
             f"{paper.get('tokens_per_paragraph')}/{paper.get('max_tokens_per_paragraph')}"),
        "", "words per paragraph:",
    ]
    total = max(s["paragraphs"], 1)
    for label, n in s["histogram"]:
        lines.append(f"  {label:>8} {n:>6}  {'#' * round(40 * n / total)}")
    summary = path / "summary.json"
    if summary.exists():
        lines += ["", format_summary(read_summary(str(summary)))]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- CLI contract

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
        from transforms.cosmos_crowd import export_question_hits, import_results

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
        from transforms.cosmos_crowd import export_release

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
