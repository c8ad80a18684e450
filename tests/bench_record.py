"""`make bench`: ReCoRD stages 1-2 against bare spaCy, a scaling table for `record generate`, and
the machine filter per reader.

1. *Ratio* (issue #11: target >= 0.95). The whole generator in process (read, dedup, MinHash LSH,
   split, NER + coreference, filters, queries, Parquet: `run_record` on the FnApiRunner) against
   the annotator's own components over the texts it is given (`spacy_ner.split_segments` of
   every split that reached annotation): the same spaCy pipeline's `nlp.pipe`, plus the
   rule-based sentence splitter where `annotator.sentences` is `corenlp` (the default). Both sides include
   loading the model. After one untimed warm-up of each, the timed rounds alternate (pipeline,
   bare, bare, pipeline, ...), so a change in the machine's load hits both sides alike; wall and
   CPU time (this process, every thread) are shown, as medians, and the ratio of the throughputs
   by both. On a shared machine the CPU-time ratio is the steadier one.
2. *Scaling* of `csdata record generate`, each configuration a subprocess: in process
   (FnApiRunner), and `--direct_running_mode=multi_processing` with 1 and 2 workers. The input
   is the same real articles repeated with changed ids (`ID-k` for copy k), `--scale` times
   (JSONL rows with `article_lines` under a temporary folder), with near-duplicate removal
   off (`curation.near_duplicates.enabled=false`), since the copies are near duplicates by
   design. Copy k doubles the k-th space of each paragraph and highlight (`vary`): the
   annotator runs spaCy once on a text repeated within a model call, which would make verbatim
   copies cheaper than new articles. Each copy's articles come in an order of their own
   (`copy_order`), so the copies of an article do not all go to the same worker. Shown: wall time of the command (interpreter start and imports included),
   articles/s, the speed-up over one worker, and the peak RSS (VmHWM, polled from /proc) of the
   driver and of each worker process, and the speed-up the division of the CPU work allows
   (`CPU-bound`: the 1-worker run's CPU seconds over the driver's plus the busiest worker's),
   which other load skews less than the wall clock when it keeps the workers from a core each.
   Goals: 2 workers >= 1.8x one worker on a few hundred articles; a worker's peak RSS at 10x
   the input within 1.2x of its RSS at 1x. A single pair of runs is not enough for the first
   on a shared machine, so at `--speedup-scale` (3x: 360 real articles) the 1- and 2-worker
   runs repeat, in alternating order, for `--speedup-rounds` rounds in all, and the medians of
   the rounds' speed-ups are shown. Each round also times the machine's own baseline: bare
   `nlp.pipe` (as in part 1) over the texts of the same input, in one process and dealt to two
   processes started at once, each a fresh interpreter (what two cores give this model here,
   with no Beam and no pipeline), and the pipeline's speed-up over the baseline's is shown round
   by round (1.00: the pipeline gains from a second worker what the model alone gains). The
   workers run with the fixed glibc mmap threshold that `run_pipeline` gives them
   (`pipeline.engine.runner.bound_worker_heap`; a `MALLOC_MMAP_THRESHOLD_` set before the run is kept
   instead) and send data messages of 1 MiB (`pipeline.engine.worker`).
3. *Machine filter*: `csdata record filter` (5 folds: train per fold, predict, write) on the
   generated triples with each reader; the cross-encoder with few training steps
   (`--cross-steps`), since CPU fine-tuning at the spec's 400 steps per fold takes hours.

    .venv/bin/python tests/bench_record.py [--input PATTERN ...] [--rounds 3] [--no-ratio]
        [--no-scaling] [--scale 1,3,10] [--workers 0,1,2] [--profile 25] [--readers ...]
        [--speedup-scale 3] [--speedup-rounds 3] [--arm LABEL=ARGS ...] [--check]

`--arm` (repeatable) runs each configuration of the scaling table once per arm, the arms in turn,
with ARGS added to the command (`--set key=value`, Beam flags; leading `NAME=VALUE` words set
its environment): an A/B of a setting in one run, under the same load.

`--profile N` adds a cProfile of one in-process run: the top N functions by own time, and the
top N of the project's functions by cumulative time.

`--check` ends with one line per goal (measured, goal, PASS/MISS) and exits 1 when one was missed:
part 1's ratio by wall clock and by CPU time (each the ratio of the medians); per arm, the median
2 / 1-worker wall-clock speed-up of the rounds at `--speedup-scale`, and each configuration's
peak RSS at the last `--scale` over the first. A goal whose part an option left out is shown as
SKIP and is no miss; a part that ran without a figure (every round failed) is a miss.
"""
from __future__ import annotations

import argparse
import cProfile
import glob
import hashlib
import io
import json
import os
import pstats
import re
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from typing import Callable, Optional, Sequence

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from bench_common import Goal, GoalCheck, add_check_option, conclude, n_rounds, note_fallback, sdk_worker  # noqa: E402

from pipeline.cli.main import quiet_beam_import_warning  # noqa: E402

quiet_beam_import_warning()

from apache_beam.options.pipeline_options import PipelineOptions  # noqa: E402

from data_specs import RecordSpec, load_spec  # noqa: E402
from pipeline.graphs.record import run_filter, run_record  # noqa: E402
from transforms.core.io.files import expand_local_inputs  # noqa: E402
from transforms.core.io.tables import read_summary, read_table  # noqa: E402
from transforms.record.annotate.sentences import corenlp_sentences  # noqa: E402
from transforms.record.annotate.spacy_ner import load_ner_pipeline, split_segments  # noqa: E402
from transforms.record.article import Article  # noqa: E402
from transforms.record.curate import make_split_fn  # noqa: E402
from transforms.record.raw_records import SUPPORTED_SUFFIXES, iter_raw_records  # noqa: E402
from transforms.record.read import parse_raw_record  # noqa: E402

SHARED = os.path.join(ROOT, "..", "shared", "samples", "cnndm")
RATIO_TARGET = 0.95
SPEEDUP_GOAL = 1.8
RSS_GOAL = 1.2
NEAR_OFF = "curation.near_duplicates.enabled=false"


def default_inputs() -> list[str]:
    """The real CNN/DM samples beside the checkout when present, else the repo's own stories."""
    if os.path.isdir(SHARED):
        return [os.path.join(SHARED, "stories"), os.path.join(SHARED, "hf_train_sample.jsonl")]
    note_fallback(SHARED)
    return [os.path.join(ROOT, "tests", "data", "record")]


def read_articles(inputs: list[str], spec: RecordSpec) -> list[Article]:
    """Every article the read stage keeps from `inputs`, in file order."""
    articles: list[Article] = []
    for path in expand_local_inputs(inputs, SUPPORTED_SUFFIXES):
        for matched in sorted(glob.glob(path)):
            with open(matched, "rb") as handle:
                for record in iter_raw_records(matched, handle):
                    articles.extend(a for a in parse_raw_record(record, spec.input)
                                    if isinstance(a, Article))
    return articles


def annotated_texts(inputs: list[str], spec: RecordSpec, keep_ids: Optional[set[str]] = None) -> list[str]:
    """The texts the generator hands to spaCy: segments of the splits that reached annotation
    (of the first article with each id in `keep_ids`; None: of every article)."""
    split_fn = make_split_fn(spec.passage)
    texts = []
    for article in read_articles(inputs, spec):
        if keep_ids is None or article.id in keep_ids:
            if keep_ids is not None:
                keep_ids.discard(article.id)
            for split in split_fn(article):
                if hasattr(split, "body"):
                    texts.extend(split_segments(split))
    return texts


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def timed(fn: Callable[[], object]) -> tuple[float, float, object]:
    """(wall s, CPU s of this process, result) of `fn()`."""
    cpu, start = _cpu(), time.perf_counter()
    result = fn()
    return time.perf_counter() - start, _cpu() - cpu, result


def run_pipeline_once(inputs: list[str], spec: RecordSpec) -> str:
    out = tempfile.mkdtemp(prefix="bench-record-")
    run_record(spec, inputs, out, options=PipelineOptions(["--runner=apache_beam.runners.portability.fn_api_runner.FnApiRunner"]))
    return out


def run_bare_once(texts: list[str], spec: RecordSpec) -> None:
    """The annotator's own components alone: `nlp.pipe` (NER, and `senter` or the parser when
    `annotator.sentences` names them) and, for `annotator.sentences: corenlp`, the rule-based
    sentence splitter the annotator runs on each text instead of a model component."""
    nlp = load_ner_pipeline(spec.annotator.model, spec.annotator.sentences)
    rules = spec.annotator.sentences == "corenlp"
    for text, _ in zip(texts, nlp.pipe(texts, batch_size=spec.annotator.batch_size)):
        if rules:
            corenlp_sentences(text)


def ratio_goal(what: str, rounds: int) -> Goal:
    """Part 1's goal for the ratio by `what` (`wall`, `CPU`)."""
    return Goal(f"ReCoRD stages 1-2 / bare nlp.pipe, {what}, medians of {n_rounds(rounds)}", ">=",
                RATIO_TARGET)


def speedup_goal(label: str, n: Optional[int] = None, rounds: Optional[int] = None) -> Goal:
    """The 2-worker speed-up's goal for the arm `label`, on `n` articles over `rounds` rounds
    (None: not known)."""
    at = f" at {n} articles" if n is not None else ""
    over = f"median of {n_rounds(rounds)}" if rounds is not None else "median of the rounds"
    return Goal(f"2 / 1 workers{at}{f' [{label}]' if label else ''}, wall, {over}", ">=", SPEEDUP_GOAL, "x")


def rss_goal(name: str, scales: Sequence[int]) -> Goal:
    """The peak-RSS goal of the configuration `name` (in the table's words): last scale / first."""
    growth = f"{scales[-1]}x / {scales[0]}x input" if len(scales) > 1 else "last / first --scale"
    return Goal(f"peak RSS {growth}, {name}", "<=", RSS_GOAL, "x")


def bench_ratio(inputs: list[str], spec: RecordSpec, rounds: int, goals: GoalCheck) -> str:
    """Part 1; returns the output folder of a pipeline run (for the machine filter). The ratios
    go to `goals`."""
    # One untimed warm-up of each side first: the first run in a process pays for imports.
    out = run_pipeline_once(inputs, spec)
    summary = read_summary(os.path.join(out, "summary.json"))
    articles = summary["stages"]["read"]["kept"]
    annotated = summary["stages"]["annotate"]["in"]
    annotated_ids = set(read_table(out, "passages", columns=["passage_id"]).column(0).to_pylist())
    annotated_ids |= {r["record_id"] for r in read_table(out, "rejects").to_pylist()
                      if r["stage"] in ("passage_filter", "annotate")}
    texts = annotated_texts(inputs, spec, set(annotated_ids))
    run_bare_once(texts[:200], spec)

    pipeline_runs: list[tuple[float, float]] = []
    bare_runs: list[tuple[float, float]] = []
    for round_ in range(rounds):   # pipeline, bare, bare, pipeline, ...: drift hits both alike
        sides = [(pipeline_runs, lambda: run_pipeline_once(inputs, spec)),
                 (bare_runs, lambda: run_bare_once(texts, spec))]
        for runs, side in sides if round_ % 2 == 0 else sides[::-1]:
            runs.append(timed(side)[:2])
    wall_p, cpu_p = (statistics.median(r[i] for r in pipeline_runs) for i in (0, 1))
    wall_b, cpu_b = (statistics.median(r[i] for r in bare_runs) for i in (0, 1))
    print(f"articles read: {articles}; annotated: {annotated}; texts through spaCy: {len(texts)}")
    print(f"{'':38}{'wall s':>9}{'articles/s':>12}{'CPU s':>9}{'articles/CPU s':>16}")
    print(f"{'stages 1-2 (FnApiRunner, in process)':<38}{wall_p:9.2f}{articles / wall_p:12.2f}"
          f"{cpu_p:9.2f}{articles / cpu_p:16.2f}")
    print(f"{'bare nlp.pipe (+ sentence rules)':<38}{wall_b:9.2f}{articles / wall_b:12.2f}"
          f"{cpu_b:9.2f}{articles / cpu_b:16.2f}")
    print(f"ratio (pipeline / bare, median of {rounds} alternating rounds): wall {wall_b / wall_p:.2f}, "
          f"CPU {cpu_b / cpu_p:.2f}   (target >= {RATIO_TARGET})")
    goals.measured(ratio_goal("wall", rounds), wall_b / wall_p)
    goals.measured(ratio_goal("CPU", rounds), cpu_b / cpu_p)
    return out


def bench_profile(inputs: list[str], spec: RecordSpec, top: int) -> None:
    """A cProfile of one in-process run (after the warm-up of part 1 or one of its own)."""
    profile = cProfile.Profile()
    profile.enable()
    run_pipeline_once(inputs, spec)
    profile.disable()
    for title, sort, restriction in (("own time", "tottime", ()),
                                     ("project functions, cumulative", "cumulative", (re.escape(ROOT),))):
        text = io.StringIO()
        stats = pstats.Stats(profile, stream=text)
        stats.sort_stats(sort).print_stats(*restriction, top)
        lines = [line for line in text.getvalue().splitlines() if line.strip()]
        start = next((i for i, line in enumerate(lines) if line.lstrip().startswith("ncalls")), 0)
        print(f"profile, top {top} by {title} (profiler overhead inflates Python-heavy code):")
        print("\n".join(line.replace(ROOT + os.sep, "") for line in lines[start:]))


# --------------------------------------------------------------------------- scaling

def vary(text: str, copy: int) -> str:
    """`text` for copy `copy` > 0: its `copy`-th space (wrapping around) doubled. The annotator
    runs spaCy once on a text repeated within one model call, so verbatim copies would make a
    larger input cheaper per article; this way every copy is a new text with the same words (and
    one whitespace token more), as a larger corpus would be."""
    spaces = [i for i, ch in enumerate(text) if ch == " "]
    if not copy or not spaces:
        return text
    at = spaces[(copy - 1) % len(spaces)]
    return text[:at] + " " + text[at:]


def copy_order(articles: list[Article], copy: int) -> list[Article]:
    """The articles of copy `copy` > 0 in an order drawn from a hash of their ids and `copy`.

    The runner deals a grouping's keys to the workers in turn, in the order they arrive, so
    copies in the same order would send every copy of an article to the same worker: each
    worker would get the same articles at every scale, and the halves' difference in work
    would be that of the first copy, not of a larger corpus, whose articles come in no
    particular order."""
    if not copy:
        return articles
    return sorted(articles, key=lambda a: hashlib.sha256(f"{copy}:{a.id}".encode()).digest())


def write_copies(articles: list[Article], copies: int, folder: str) -> int:
    """`copies` copies of `articles` as JSONL rows (`article_lines`, so the paragraphs stay as
    read), one file per copy; copy k > 0 has ids `ID-k`, its texts through `vary`, and its
    articles in an order of their own (`copy_order`). Returns the number of rows written."""
    os.makedirs(folder, exist_ok=True)
    for k in range(copies):
        with open(os.path.join(folder, f"copy-{k:03d}.jsonl"), "w", encoding="utf-8") as handle:
            for article in copy_order(articles, k):
                row = {"id": article.id if k == 0 else f"{article.id}-{k}",
                       "article_lines": [vary(p, k) for p in article.paragraphs],
                       "highlights": [vary(h, k) for h in article.highlights]}
                if article.url:
                    row["url"] = article.url
                if article.source:
                    row["source"] = article.source
                handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    return copies * len(articles)


def _processes() -> dict[int, tuple[int, float]]:
    """{pid: (parent pid, CPU seconds so far)} of every process, from /proc/PID/stat."""
    ticks = os.sysconf("SC_CLK_TCK")
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        fields = stat[stat.rindex(b")") + 2:].split()   # after "(comm) ": state, ppid, ...
        found[int(entry)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / ticks)
    return found


def _tree(root: int, processes: dict[int, tuple[int, float]]) -> list[int]:
    children: dict[int, list[int]] = defaultdict(list)
    for pid, (parent, _) in processes.items():
        children[parent].append(pid)
    pids, todo = [], [root]
    while todo:
        pid = todo.pop()
        pids.append(pid)
        todo.extend(children.get(pid, ()))
    return pids


def _peak_kb(pid: int) -> Optional[int]:
    """VmHWM (peak resident set) of a live process, in KiB."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as handle:
            for line in handle:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""


class Measured:
    """A finished command: wall seconds, exit code, and per process (the driver, each Beam SDK
    worker; not the shells that start the workers) peak RSS in KiB and CPU seconds, as last
    polled."""

    def __init__(self, wall: float, code: int, peaks: dict[int, int], cpu: dict[int, float],
                 kinds: dict[int, str], driver: int):
        self.wall, self.code = wall, code
        workers = sorted(pid for pid in peaks if kinds.get(pid) == "worker")
        self.driver_kb, self.driver_cpu = peaks.get(driver, 0), cpu.get(driver, 0.0)
        self.workers_kb = [peaks[pid] for pid in workers]
        self.workers_cpu = [cpu.get(pid, 0.0) for pid in workers]

    @property
    def worker_peak_kb(self) -> int:
        """The largest worker's peak RSS; the driver's when the run was in process."""
        return max(self.workers_kb) if self.workers_kb else self.driver_kb


def run_measured(command: list[str], log_path: str, poll: float = 0.2,
                 env: Optional[dict[str, str]] = None) -> Measured:
    """Run `command` (output to `log_path`, with `env` added to the environment), polling its
    process tree every `poll` seconds."""
    peaks: dict[int, int] = {}
    cpu: dict[int, float] = {}
    kinds: dict[int, str] = {}
    start = time.perf_counter()
    with open(log_path, "wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT,
                                   env={**os.environ, **(env or {})})
        while process.poll() is None:
            processes = _processes()
            for pid in _tree(process.pid, processes):
                peak = _peak_kb(pid)
                if peak is None:
                    continue
                if pid not in kinds:
                    line = _cmdline(pid)
                    kinds[pid] = ("driver" if pid == process.pid else
                                  "worker" if sdk_worker(line) else "other")
                peaks[pid] = max(peaks.get(pid, 0), peak)
                cpu[pid] = processes[pid][1]
            time.sleep(poll)
    return Measured(time.perf_counter() - start, process.returncode, peaks, cpu, kinds, process.pid)


def generate_command(input_dir: str, output: str, workers: int, extra: Sequence[str] = ()) -> list[str]:
    """`csdata record generate` on `input_dir`, near duplicates off; `workers` 0 = in process;
    `extra`: more arguments (an `--arm`'s)."""
    command = [sys.executable, "-m", "pipeline.cli.main", "record", "generate", "--input", input_dir,
               "--output", output, "--set", NEAR_OFF, "--runner=apache_beam.runners.portability.fn_api_runner.FnApiRunner"]
    if workers:
        command += ["--direct_running_mode=multi_processing", f"--direct_num_workers={workers}"]
    return [*command, *extra]


def parse_arms(specs: Sequence[str]) -> list[tuple[str, list[str]]]:
    """`--arm LABEL=ARGS` values as (label, arguments); none given: one arm without arguments.
    Leading `NAME=VALUE` words of ARGS (NAME in capitals) set the command's environment."""
    arms = []
    for spec in specs:
        label, _, args = spec.partition("=")
        arms.append((label, shlex.split(args)))
    return arms or [("", [])]


def split_env(args: Sequence[str]) -> tuple[dict[str, str], list[str]]:
    """An arm's leading `NAME=VALUE` words (the environment) and the rest (arguments)."""
    env: dict[str, str] = {}
    rest = list(args)
    while rest and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", rest[0]):
        name, _, value = rest.pop(0).partition("=")
        env[name] = value
    return env, rest


def run_generate(folder: str, output: str, workers: int, extra: Sequence[str]) -> Measured:
    """`generate_command` on `folder`, measured, with an arm's `extra` (its leading `NAME=VALUE`
    words as the environment); the log at `output`.log."""
    env, args = split_env(extra)
    return run_measured(generate_command(folder, output, workers, args), output + ".log", env=env)


def bench_scaling(inputs: list[str], spec: RecordSpec, scales: list[int], configs: list[int],
                  goals: GoalCheck, arms: Sequence[tuple[str, list[str]]] = (("", []),),
                  speedup_scale: int = 0, speedup_rounds: int = 1) -> None:
    """Part 2: the scaling table; a configuration is a worker count, 0 = in process. With
    several `arms` (label, extra arguments of the command), each configuration runs once per
    arm, the arms in turn, so that a change of the machine's load hits them alike. At
    `speedup_scale`, the pair of 1 and 2 workers runs `speedup_rounds` times in all, in
    alternating order (`speedup_pairs`). The speed-ups and peak-RSS growths go to `goals`."""
    articles = read_articles(inputs, spec)
    results: dict[tuple[int, int, str], Measured] = {}
    names: dict[tuple[int, str], str] = {}
    base = tempfile.mkdtemp(prefix="bench-scaling-")
    print(f"scaling of `csdata record generate` ({len(articles)} input articles repeated with changed "
          f"ids; --set {NEAR_OFF}; wall includes interpreter start and imports; CPU and peak RSS "
          f"of the driver process and of each worker):")
    print(f"{'configuration':<29}{'articles':>9}{'wall s':>8}{'articles/s':>11}{'vs 1 worker':>12}"
          f"{'CPU-bound':>10}{'CPU s driver; workers':>23}{'RSS MiB driver; workers':>25}{'vs 1x':>7}")
    try:
        for scale in scales:
            folder = os.path.join(base, f"x{scale}")
            n = write_copies(articles, scale, folder)
            for index, config in enumerate(configs):
                for label, extra in arms:
                    name = names[(config, label)] = (
                        (f"multi_processing, {config} worker{'s' if config > 1 else ''}" if config
                         else "in process") + (f" [{label}]" if label else ""))
                    output = os.path.join(base, f"out-x{scale}-w{config}-{index}-{label}")
                    run = results[(scale, config, label)] = run_generate(folder, output, config, extra)
                    if run.code != 0:   # the folder goes at the end: show the log's end now
                        with open(output + ".log", encoding="utf-8", errors="replace") as log:
                            tail = "".join(log.readlines()[-8:])
                        print(f"{name:<29}{n:9d}  failed (exit {run.code}); the end of its log:\n{tail}")
                        continue
                    print(scaling_row(name, n, run, results.get((scale, 1, label)),
                                      results.get((scales[0], config, label)), scale != scales[0]),
                          flush=True)
            if scale == speedup_scale and {1, 2} <= set(configs) and speedup_rounds > 0:
                speedup_pairs(folder, n, os.path.join(base, f"x{scale}-round"), arms,
                              {label: (results[(scale, 1, label)], results[(scale, 2, label)])
                               for label, _ in arms}, speedup_rounds, spec, goals)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    if not (speedup_scale in scales and {1, 2} <= set(configs) and speedup_rounds > 0):
        for label, _ in arms:
            goals.skipped(speedup_goal(label), "needs --speedup-scale among --scale, workers 1 and 2, "
                                               "--speedup-rounds > 0")
    for (config, label), name in names.items():
        if len(scales) < 2:
            goals.skipped(rss_goal(name, scales), "needs two --scale values or more")
            continue
        first, last = results[(scales[0], config, label)], results[(scales[-1], config, label)]
        if first.code != 0 or last.code != 0:
            goals.failed(rss_goal(name, scales), "a run failed")
        else:
            goals.measured(rss_goal(name, scales), last.worker_peak_kb / first.worker_peak_kb)
    print(f"goals: 2 workers >= {SPEEDUP_GOAL}x one worker; worker peak RSS at the largest scale "
          f"within {RSS_GOAL}x of the smallest ('vs 1x'). 'vs 1 worker' is wall clock against the "
          f"1-worker run before it; 'CPU-bound' the speed-up the division of the CPU work allows "
          f"(1-worker CPU seconds / driver + busiest worker), less skewed by other load")


def cpu_bound(one: Measured, run: Measured) -> float:
    """What the split of the work allows when each process gets a core of its own (a shared
    machine's wall clock may not give them one): one worker's CPU seconds (driver and worker)
    over `run`'s longest path, the driver plus its busiest worker."""
    return (one.driver_cpu + sum(one.workers_cpu)) / (run.driver_cpu + max(run.workers_cpu))


def scaling_row(name: str, n: int, run: Measured, one: Optional[Measured], first: Optional[Measured],
                larger: bool) -> str:
    """A row of the scaling table: `run` against the latest 1-worker run of its scale and arm
    (`one`) and against its own configuration at the first scale (`first`, when `larger`)."""
    multi = bool(run.workers_cpu)
    speedup = f"{one.wall / run.wall:.2f}x" if one and one.code == 0 and multi else "-"
    bound = f"{cpu_bound(one, run):.2f}x" if one and one.code == 0 and multi and one.workers_cpu else "-"
    growth = f"{run.worker_peak_kb / first.worker_peak_kb:.2f}" if first and first.code == 0 and larger else "-"
    cpu = "; ".join([f"{run.driver_cpu:.0f}", ", ".join(f"{c:.0f}" for c in run.workers_cpu)])
    rss = "; ".join([f"{run.driver_kb / 1024:.0f}", ", ".join(f"{kb / 1024:.0f}" for kb in run.workers_kb)])
    return (f"{name:<29}{n:9d}{run.wall:8.1f}{n / run.wall:11.2f}{speedup:>12}{bound:>10}"
            f"{cpu.rstrip('; '):>23}{rss.rstrip('; '):>25}{growth:>7}")


def run_bare_processes(texts_path: str, parts: int) -> Optional[tuple[float, list[float]]]:
    """`run_bare_once` over the texts in the JSON file `texts_path`, dealt in turn to `parts`
    processes started at once (each a fresh interpreter: imports and model load included):
    (wall s, CPU s per process), or None when one failed."""
    start = time.perf_counter()
    processes = [subprocess.Popen([sys.executable, os.path.abspath(__file__), "--bare-share",
                                   f"{k}/{parts}", texts_path], cwd=ROOT,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                 for k in range(parts)]
    cpu, failed = [], False
    for process in processes:
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        failed |= process.returncode != 0
        cpu.append(usage.ru_utime + usage.ru_stime)
    return None if failed else (time.perf_counter() - start, cpu)


def bare_share(texts_path: str, share: str) -> None:
    """`--bare-share K/N`: `run_bare_once` on every N-th text of `texts_path` from the K-th."""
    k, n = (int(part) for part in share.split("/"))
    with open(texts_path, encoding="utf-8") as handle:
        texts = json.load(handle)
    spec = load_spec("record")
    assert isinstance(spec, RecordSpec)
    run_bare_once(texts[k::n], spec)


def _listed(values: Sequence[float]) -> str:
    return f"{', '.join(f'{v:.2f}x' for v in values)}, median {statistics.median(values):.2f}x"


def speedup_pairs(folder: str, n: int, prefix: str, arms: Sequence[tuple[str, list[str]]],
                  first: dict[str, tuple[Measured, Measured]], rounds: int, spec: RecordSpec,
                  goals: GoalCheck) -> None:
    """The 2-worker speed-up on the input in `folder` (`n` articles) over `rounds` rounds
    (outputs at `prefix`-ROUND-wWORKERS-LABEL): the table's pair per arm (`first`: label ->
    (1 worker, 2 workers)) and `rounds - 1` more, 2 workers first in every other round, so that
    the machine's drift between runs (a pair alone ranged 1.43-2.09x here within minutes) hits
    both sides alike. Each round also runs the machine's own baseline: bare `nlp.pipe` (as in
    part 1) over the texts of the same input, in one process and dealt to two. Prints each
    round's speed-ups and their medians (the wall-clock median to `goals`); a failed run leaves
    its round out."""
    texts_path = prefix + "-texts.json"
    with open(texts_path, "w", encoding="utf-8") as handle:
        json.dump(annotated_texts([folder], spec), handle)
    pairs = {label: [pair] for label, pair in first.items()}
    bare: list[Optional[tuple[float, float]]] = []
    for round_ in range(rounds):
        order = (2, 1) if round_ % 2 else (1, 2)
        for label, extra in arms if round_ else ():
            runs = {config: run_generate(folder, f"{prefix}-{round_}-w{config}-{label}", config, extra)
                    for config in order}
            pairs[label].append((runs[1], runs[2]))
        timed_bare = {parts: run_bare_processes(texts_path, parts) for parts in order}
        one, two = timed_bare[1], timed_bare[2]
        bare.append((one[0] / two[0], sum(one[1]) / max(two[1])) if one and two else None)
    done_bare = [b for b in bare if b]
    if done_bare:
        print(f"the machine's baseline in the same rounds, bare nlp.pipe (+ sentence rules) over the "
              f"same input's texts, 2 / 1 processes: wall {_listed([b[0] for b in done_bare])}; "
              f"CPU-bound {_listed([b[1] for b in done_bare])}", flush=True)
    for label, measured in pairs.items():
        name = f"2 / 1 workers at {n} articles{f' [{label}]' if label else ''}"
        done = [(one, two, b) for (one, two), b in zip(measured, bare) if one.code == 0 and two.code == 0]
        if not done:
            print(f"{name}: no round succeeded")
            goals.failed(speedup_goal(label, n), "no round succeeded")
            continue
        goals.measured(speedup_goal(label, n, len(done)),
                       statistics.median(one.wall / two.wall for one, two, _ in done))
        print(f"{name}, {len(done)} rounds (alternating order): wall "
              f"{_listed([one.wall / two.wall for one, two, _ in done])}; CPU-bound "
              f"{_listed([cpu_bound(one, two) for one, two, _ in done])}   (goal >= {SPEEDUP_GOAL}x)")
        relative = [(one.wall / two.wall) / b[0] for one, two, b in done if b]
        if relative:
            print(f"  pipeline / baseline speed-up, round by round: "
                  f"{', '.join(f'{r:.2f}' for r in relative)}, median {statistics.median(relative):.2f}"
                  f"   (1.00: the pipeline gains from a second worker what bare spaCy gains from a "
                  f"second process)", flush=True)


# --------------------------------------------------------------------------- machine filter

def bench_filter(run_dir: str, spec: RecordSpec, readers: list[str], cross_steps: int) -> None:
    """Triples/s of the machine filter per reader on the triples of `run_dir`."""
    if not readers:
        return
    predictions = None
    print(f"machine filter, {spec.filter.folds} folds:")
    for reader in readers:
        choice, reader_spec = reader, spec
        if reader == "predictions":
            if predictions is None:
                print("  predictions: skipped (needs a lexical run first for its answers)")
                continue
            choice = f"predictions:{predictions}"
        if reader == "cross-encoder":
            readers_section = spec.filter.readers
            cross = readers_section.cross_encoder.model_copy(update={"max_steps": cross_steps})
            reader_spec = spec.model_copy(update={"filter": spec.filter.model_copy(update={
                "readers": readers_section.model_copy(update={"cross_encoder": cross})})})
        out = tempfile.mkdtemp(prefix=f"bench-filter-{reader}-")
        start = time.perf_counter()
        summary = run_filter(reader_spec, run_dir, out, choice, options=PipelineOptions(["--runner=apache_beam.runners.portability.fn_api_runner.FnApiRunner"]))
        seconds = time.perf_counter() - start
        note = f" ({cross_steps} steps/fold)" if reader == "cross-encoder" else ""
        print(f"  {reader + note:<34}{summary['in'] / seconds:9.1f} triples/s   answered "
              f"{summary['answered_rate']:.1%} (random {summary['random_baseline']:.1%})")
        if reader == "lexical":
            predictions = os.path.join(out, "answers.json")
            rows = read_table(out, "queries").to_pylist() + read_table(out, "dropped").to_pylist()
            with open(predictions, "w", encoding="utf-8") as handle:
                json.dump({r["query_id"]: r["reader_answer"] for r in rows}, handle)


def _numbers(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part.strip()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--input", action="append")
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds per side; the median is shown")
    parser.add_argument("--no-ratio", action="store_true", help="skip part 1 (pipeline vs bare spaCy)")
    parser.add_argument("--profile", type=int, default=0, metavar="N",
                        help="also print the top N functions of a cProfile of one in-process run")
    parser.add_argument("--no-scaling", action="store_true", help="skip part 2 (the scaling table)")
    parser.add_argument("--scale", default="1,3,10",
                        help="comma-separated copies of the input for the scaling table (first = 1x)")
    parser.add_argument("--workers", default="0,1,2",
                        help="configurations of the scaling table: multi_processing worker counts, 0 = in process")
    parser.add_argument("--speedup-scale", type=int, default=3,
                        help="the scale at which 1 and 2 workers run --speedup-rounds times (0: none)")
    parser.add_argument("--speedup-rounds", type=int, default=3,
                        help="rounds of the 1- and 2-worker pair at --speedup-scale; medians shown")
    parser.add_argument("--arm", action="append", default=[], metavar="LABEL=ARGS",
                        help="run each configuration of the scaling table once per arm, the arms in "
                             "turn, with ARGS added to the command (repeatable; A/B in one run)")
    parser.add_argument("--readers", default="lexical,predictions,cross-encoder",
                        help="comma-separated readers to time in the machine filter ('' for none)")
    parser.add_argument("--cross-steps", type=int, default=10,
                        help="cross-encoder training steps per fold in the benchmark")
    add_check_option(parser)
    parser.add_argument("--bare-share", help=argparse.SUPPRESS)   # K/N: a process of the baseline
    parser.add_argument("texts", nargs="?", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.bare_share:
        bare_share(args.texts, args.bare_share)
        return
    inputs = args.input or default_inputs()
    spec = load_spec("record")
    assert isinstance(spec, RecordSpec)
    print(f"inputs: {', '.join(os.path.relpath(i) for i in inputs)}; {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.1f}")
    readers = [r for r in args.readers.split(",") if r]
    goals = GoalCheck()
    out = None
    if not args.no_ratio:
        out = bench_ratio(inputs, spec, args.rounds, goals)
    else:
        for what in ("wall", "CPU"):
            goals.skipped(ratio_goal(what, args.rounds), "--no-ratio")
    if args.profile:
        if out is None:
            run_pipeline_once(inputs, spec)   # the warm-up
        bench_profile(inputs, spec, args.profile)
    if not args.no_scaling:
        bench_scaling(inputs, spec, _numbers(args.scale), _numbers(args.workers), goals,
                      parse_arms(args.arm), args.speedup_scale, args.speedup_rounds)
    else:
        for label, _ in parse_arms(args.arm):
            goals.skipped(speedup_goal(label), "--no-scaling")
        goals.skipped(rss_goal("each configuration", _numbers(args.scale)), "--no-scaling")
    if readers:
        bench_filter(out or run_pipeline_once(inputs, spec), spec, readers, args.cross_steps)
    sys.exit(conclude(goals, args.check))


if __name__ == "__main__":
    main()
