"""`make bench`: Cosmos QA stage 1 against bare spaCy sentence splitting.

Runs stage 1 (`csdata cosmos paragraphs`: read, story filter, the per-blog sample, spaCy
`senter`, MiniLM coherence, the DP segmentation, Parquet) in process on the FnApiRunner, then
loads spaCy's `senter` alone (no tok2vec) and splits every post that passes the length filter,
i.e. all the posts stage 1 would split without the sample. Both timings include loading the
models; each side has one untimed warm-up run, then `--rounds` timed runs taken in turns (the
CPU may be shared) and the median is shown. Target: stage 1 takes at most 4x bare senter (the
ratio of the medians).

    .venv/bin/python tests/bench_cosmos.py [--input PATTERN ...] [--files N] [--rounds 3]
        [--set sample.rounds=3 ...] [--all] [--agreement] [--check]

`--check` ends with the goal's line (measured, goal, PASS/MISS) and exits 1 when it was missed.

`--all` also times `sample.mode=all` (every story scored, as before the sample moved ahead of the
models; slow). `--agreement` splits every post once and compares the paragraphs cut with the
coherence of `coherence.runtime` `torch` and `int8` against `transformers` (cut positions,
paragraphs, the paragraph each blog keeps) and times the three scorers on the same stories.
"""
from __future__ import annotations

import argparse
import glob
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from typing import Callable

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from bench_common import Goal, GoalCheck, add_check_option, conclude, n_rounds, note_fallback  # noqa: E402

from pipeline.cli.main import quiet_beam_import_warning  # noqa: E402

quiet_beam_import_warning()

from apache_beam.options.pipeline_options import PipelineOptions  # noqa: E402

from data_specs import CosmosSpec, load_dataset_spec  # noqa: E402
from pipeline.graphs.cosmos import run_paragraphs  # noqa: E402
from transforms.core.io.files import expand_local_inputs  # noqa: E402
from transforms.cosmos.paragraphs import filter_story, kept_order, load_sentencizer, sentences_of  # noqa: E402
from transforms.cosmos.read import Story, iter_raw_records, parse_raw_record  # noqa: E402
from transforms.cosmos.scorers import make_coherence_scorer  # noqa: E402
from transforms.cosmos.segment import Paragraph, ScoredStory, segment_story  # noqa: E402

SHARED = os.path.join(ROOT, "..", "shared", "samples", "blogs")
FALLBACK = os.path.join(ROOT, "tests", "data", "cosmos")
TARGET = 4.0


def default_inputs(files: int) -> list[str]:
    """The real Blog Authorship Corpus files beside the checkout when present (the first `files`
    of them when > 0), else the repo's invented blogs and JSONL stories."""
    if os.path.isdir(SHARED):
        paths = sorted(glob.glob(os.path.join(SHARED, "*.xml")))
        return paths[:files] if files > 0 else paths
    note_fallback(SHARED)
    return [os.path.join(FALLBACK, "blogs"), os.path.join(FALLBACK, "stories.jsonl")]


def long_enough_stories(inputs: list[str], spec: CosmosSpec) -> list[Story]:
    """The stories of `inputs` that pass the story filter, read as stage 1 reads them."""
    section = spec.input
    stories = []
    for pattern in expand_local_inputs(inputs, suffixes=None):
        for path in sorted(glob.glob(pattern)):
            if os.path.isdir(path):
                continue
            with open(path, "rb") as handle:
                for record in iter_raw_records(path, handle, section.encoding, section.control_chars):
                    for story in parse_raw_record(record, tuple(section.drop_tokens), section.unescape_html,
                                                  section.encoding, section.control_chars, section.max_chars):
                        if isinstance(story, Story):
                            stories.extend(s for s in filter_story(story, spec.paragraph.min_words)
                                           if isinstance(s, Story))
    return stories


def time_pipeline(inputs: list[str], spec: CosmosSpec) -> tuple[float, dict]:
    out = tempfile.mkdtemp(prefix="bench-cosmos-")
    start = time.perf_counter()
    summary = run_paragraphs(spec, inputs, out, options=PipelineOptions(["--runner=apache_beam.runners.portability.fn_api_runner.FnApiRunner"]))
    return time.perf_counter() - start, summary


def time_senter(texts: list[str], spec: CosmosSpec) -> float:
    start = time.perf_counter()
    nlp = load_sentencizer(spec.sentences.model, "senter")
    for _ in nlp.pipe(texts, batch_size=spec.sentences.batch_size):
        pass
    return time.perf_counter() - start


def in_turns(rounds: int, *jobs: Callable[[], float]) -> list[float]:
    """The median seconds of each job over `rounds` runs taken in turns (after one warm-up each)."""
    for job in jobs:
        job()
    times: list[list[float]] = [[] for _ in jobs]
    for _ in range(rounds):
        for seconds, job in zip(times, jobs):
            seconds.append(job())
    return [statistics.median(t) for t in times]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--input", action="append", help="blog files, directories or globs")
    parser.add_argument("--files", type=int, default=0, help="only the first N real blog files")
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds; the median is shown")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="spec override")
    parser.add_argument("--all", action="store_true", help="also time sample.mode=all (slow)")
    parser.add_argument("--agreement", action="store_true",
                        help="cut agreement and speed of the coherence runtimes (slow)")
    add_check_option(parser)
    args = parser.parse_args()
    inputs = args.input or default_inputs(args.files)
    spec = load_dataset_spec(CosmosSpec, "cosmos", args.set)
    stories = long_enough_stories(inputs, spec)
    texts = [s.text for s in stories]
    shown = inputs if len(inputs) <= 3 else [*inputs[:2], f"... ({len(inputs)} files)"]
    print(f"inputs: {', '.join(os.path.relpath(i) if os.path.exists(i) else i for i in shown)}")
    print(f"spec: sample.mode={spec.sample.mode} rounds={spec.sample.rounds} per_blog={spec.sample.per_blog}; "
          f"coherence {spec.coherence.name} runtime={spec.coherence.runtime} device={spec.coherence.device}")

    summaries: list[dict] = []

    def pipeline() -> float:
        seconds, summary = time_pipeline(inputs, spec)
        summaries.append(summary)
        return seconds

    seconds, bare = in_turns(args.rounds, pipeline, lambda: time_senter(texts, spec))
    stages = summaries[-1]["stages"]
    posts = stages["read"]["kept"]
    scored = stages["coherence"]["in"]
    print(f"posts read: {posts}; long enough: {len(texts)} (all split by bare senter); "
          f"split and scored by stage 1: {scored}; paragraphs kept: {stages['sample']['kept']}")
    print(f"stage 1 (FnApiRunner, in process): {seconds:7.2f} s  {posts / seconds:8.1f} posts/s")
    print(f"bare senter on the {len(texts)} posts: {bare:7.2f} s  {posts / bare:8.1f} posts/s")
    print(f"ratio (stage 1 / bare senter): {seconds / bare:.2f}   (target <= {TARGET:g})")
    goals = GoalCheck()
    goals.measured(Goal(f"Cosmos QA stage 1 / bare senter, wall, medians of {n_rounds(args.rounds)}", "<=",
                        TARGET, "x"), seconds / bare)
    if args.all:
        every = spec.model_copy(update={"sample": spec.sample.model_copy(update={"mode": "all"})})
        all_seconds, all_summary = time_pipeline(inputs, every)
        print(f"sample.mode=all (one run, every story scored: "
              f"{all_summary['stages']['coherence']['in']}): {all_seconds:7.2f} s  "
              f"{posts / all_seconds:8.1f} posts/s  ratio {all_seconds / bare:.2f}")
    if args.agreement:
        agreement(stories, spec)
    sys.exit(conclude(goals, args.check))


def agreement(stories: list[Story], spec: CosmosSpec, runtimes: tuple[str, ...] = ("torch", "int8"),
              reference: str = "transformers") -> None:
    """Paragraphs cut with each of `runtimes`' coherence against `reference`'s, on the same sentences."""
    nlp = load_sentencizer(spec.sentences.model, spec.sentences.component)
    paragraph = spec.paragraph
    sentences = [sentences_of(doc, paragraph.long_sentence, paragraph.max_words)
                 for doc in nlp.pipe([s.text for s in stories], batch_size=spec.sentences.batch_size)]
    calls = spec.coherence.max_stories_per_call
    cut: dict[str, list[Paragraph]] = {}
    seconds: dict[str, float] = {}
    for runtime in (reference, *runtimes):
        scorer = make_coherence_scorer(spec.coherence.model_copy(update={"runtime": runtime}))
        start = time.perf_counter()
        gaps = [g for k in range(0, len(sentences), calls) for g in scorer.score(sentences[k:k + calls])]
        seconds[runtime] = time.perf_counter() - start
        cut[runtime] = [p for story, sents, g in zip(stories, sentences, gaps)
                        for p in segment_story(ScoredStory(story, sents, tuple(g)), paragraph.min_words,
                                               paragraph.max_words, paragraph.cut_baseline)
                        if isinstance(p, Paragraph)]

    def spans(paragraphs: list[Paragraph]) -> set[tuple[str, int, int]]:
        return {(p.story_id, p.first_sentence, p.first_sentence + p.n_sentences) for p in paragraphs}

    def cuts(paragraphs: list[Paragraph]) -> set[tuple[str, int]]:
        return {(story, k) for story, a, b in spans(paragraphs) for k in (a, b)}

    def kept(paragraphs: list[Paragraph], mode: str) -> dict[str, list[str]]:
        blogs: dict[str, list[Paragraph]] = defaultdict(list)
        for p in paragraphs:
            blogs[p.blog_id].append(p)
        return {b: [p.text for p in sorted(ps, key=lambda p: kept_order(p, spec.seed, mode))[:spec.sample.per_blog]]
                for b, ps in blogs.items()}

    ref = cut[reference]
    print(f"coherence runtimes against {reference} on {len(stories)} stories, "
          f"{sum(map(len, sentences))} sentences ({reference}: {len(ref)} paragraphs, "
          f"scored in {seconds[reference]:.2f} s):")
    for runtime in runtimes:
        other = cut[runtime]
        both, either = len(cuts(ref) & cuts(other)), len(cuts(ref) | cuts(other))
        same = len(spans(ref) & spans(other))
        kept_same = []
        for mode in ("before_scoring", "all"):
            a, b = kept(ref, mode), kept(other, mode)
            kept_same.append(f"{sum(a[blog] == b.get(blog) for blog in a)}/{len(a)} ({mode})")
        print(f"  {runtime}: scored in {seconds[runtime]:.2f} s ({seconds[reference] / seconds[runtime]:.2f}x); "
              f"identical cut positions {both}/{either} = {both / either:.1%}; identical paragraphs "
              f"{same}/{len(ref)} = {same / len(ref):.1%}; same kept paragraph per blog {', '.join(kept_same)}")


if __name__ == "__main__":
    main()
