"""`make bench-scale`: `record generate`, `record filter` and `cosmos paragraphs` on 1x, 10x and 30x
the same corpus, in process and on the local Flink cluster, to see time grow linearly and memory not.

The corpus is made from the repository's own samples by tests/scale_corpus.py: 1x is `--base`
(550 articles and 300 blog files, where each command's per-item work outweighs its fixed cost;
docs/benchmarks.md), N x holds N times as many copies, each with new ids and a fifth of its
words changed (so duplicate removal keeps them). For each scale (`--scales`) and
runner (`--runners`: `local` = `--direct_running_mode=multi_processing --direct_num_workers=2`,
`flink` = the cluster of services/flink, 2 TaskManagers x 2 slots), the three commands run one
after another as subprocesses (`python -m pipeline.cli.main ...`; `record filter` with the lexical
reader on that runner's `record generate` output). Each run reports:

* wall: the command from start to exit (interpreter start and imports included);
* CPU: user + system seconds of the command and every process it waited for (its SDK workers, a
  Flink job server), from the kernel's accounting when it exits; on Flink plus what the cluster's
  daemons and their Python workers used meanwhile (/proc, as tests/bench_flink.py counts it);
* peak RSS: the largest process's, polled every 0.2 s from /proc: the command's process tree
  (driver, SDK workers, job server) and on Flink the JobManager, the TaskManagers and their
  Python workers. A process born during the run counts with its VmHWM (its own peak); one that
  was already running (a TaskManager JVM) with the largest VmRSS polled during the run;
* rows written to the command's main table (`queries`, `queries`, `paragraphs`) and items/s
  (items: the articles, triples or posts its first stage read);
* on Flink, the read step's records (`ProgressFiles`: the files each subtask read; `ProgressRead`
  where a command reads no files; from REST: per subtask and per TaskManager)
  and whether both TaskManagers read some.

Goals (per runner and command): peak RSS at each scale within 1.25x of the previous scale's (10x
against 1x, 30x against 10x); wall time at each scale within 1.1x of linear growth from the first
(10x within 11x of 1x). The cluster is started with services/flink/flink.sh when `flink` is
asked for and none answers, and stopped at the end (failed or not) when this script started it.
A markdown table goes to stdout, every figure to `--json` (out/bench-scale.json).

    .venv/bin/python tests/bench_scale.py [--scales 1,10,30] [--runners local,flink] [--base 550,300]
        [--workers 2] [--json out/bench-scale.json] [--workdir DIR] [--keep] [--check]
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Optional, Sequence

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from bench_common import Goal, GoalCheck, add_check_option, conclude  # noqa: E402
from bench_flink import FLINK_SH, MASTER, cluster_cpu, cluster_up  # noqa: E402
from bench_record import _cmdline, _processes, _tree  # noqa: E402
from scale_corpus import BASE_ARTICLES, BASE_BLOGS, SEED, ScaledCorpus, build_corpus  # noqa: E402

from pipeline.engine.flink import rest_get  # noqa: E402
from transforms.core.cache import cache_dir  # noqa: E402

RUNNERS = ("local", "flink")
COMMANDS = ("record generate", "record filter", "cosmos paragraphs")
# command: (first stage of summary.json, its unit, the main table)
MEASURES = {"record generate": ("read", "articles", "queries"),
            "record filter": ("machine_filter", "triples", "queries"),
            "cosmos paragraphs": ("read", "posts", "paragraphs")}
RSS_GOAL = 1.25
WALL_SLACK = 1.1
POLL = 0.2
JOB_LINE = re.compile(r"^csdata: Flink job ([0-9a-f]{32}) ", re.M)
# The step that reads the input files (files in, per subtask); a command without one (`record
# filter` reads a run's tables) is judged by the step that counts what was read.
READ_STEPS = ("ProgressFiles", "ProgressRead")


@dataclass
class Run:
    """One command's run and what was measured of it (see the module docstring)."""
    scale: int
    runner: str
    command: str
    code: int
    wall: float = 0.0
    cpu: float = 0.0
    peak_mib: float = 0.0
    peak_process: str = ""
    peaks_mib: dict[str, float] = field(default_factory=dict)   # largest peak per kind of process
    items: int = 0
    unit: str = ""
    rows: int = 0
    log: str = ""
    flink: Optional[dict[str, Any]] = None

    @property
    def items_per_s(self) -> float:
        return self.items / self.wall if self.wall else 0.0


class OneLineParser(argparse.ArgumentParser):
    """A user error is one line on stderr and exit status 2."""

    def error(self, message: str) -> Any:
        self.exit(2, f"{self.prog}: error: {message}\n")


def int_list(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a comma-separated list of whole numbers: {text!r}") from None
    if not values or min(values) < 1 or sorted(set(values)) != values:
        raise argparse.ArgumentTypeError(f"scales must be positive and increasing: {text!r}")
    return values


def base_sizes(text: str) -> tuple[int, int]:
    """`--base`: `N` (articles and blog files at 1x) or `ARTICLES,BLOGS`."""
    try:
        values = [int(v) for v in text.split(",")]
    except ValueError:
        values = []
    if len(values) not in (1, 2) or min(values) < 1:
        raise argparse.ArgumentTypeError(f"--base is N or ARTICLES,BLOGS (positive), not {text!r}")
    return values[0], values[-1]


def runner_list(text: str) -> list[str]:
    values = [v.strip() for v in text.split(",") if v.strip()]
    unknown = [v for v in values if v not in RUNNERS]
    if not values or unknown:
        raise argparse.ArgumentTypeError(f"runners are {', '.join(RUNNERS)}, not {text!r}")
    return values


def cluster_daemons() -> dict[int, str]:
    """{pid: role} of the cluster's daemons, from services/flink's pid files."""
    roles = {"standalonesession": "JobManager", "taskexecutor": "TaskManager"}
    found: dict[int, str] = {}
    for pid_file in (cache_dir() / "flink-cluster").glob("*.pid"):
        role = next((r for key, r in roles.items() if key in pid_file.name), "cluster daemon")
        found.update({int(line): role for line in pid_file.read_text().split() if line.strip()})
    return found


def _memory_kb(pid: int) -> tuple[int, int]:
    """(VmRSS, VmHWM) of a live process in KiB; (0, 0) once it is gone."""
    values = {"VmRSS:": 0, "VmHWM:": 0}
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as handle:
            for line in handle:
                key = line.split(":", 1)[0] + ":"
                if key in values:
                    values[key] = int(line.split()[1])
    except OSError:
        pass
    return values["VmRSS:"], values["VmHWM:"]


def _kind(pid: int, driver: int, daemons: dict[int, str], under_driver: bool) -> str:
    if pid == driver:
        return "driver"
    if pid in daemons:
        return daemons[pid]
    line = _cmdline(pid)
    if line.startswith("/bin/sh"):   # the shell that starts a worker
        return "other"
    if "sdk_worker_main" in line or "csdata-sdk-worker" in line:
        return "SDK worker"
    if under_driver and "java" in line.split(" ", 1)[0]:
        return "job server"
    return "other"


def run_measured(command: list[str], log_path: Path,
                 daemons: dict[int, str]) -> tuple[int, float, float, dict[str, int]]:
    """Run `command` (output to `log_path`), polling its process tree and the `daemons`' trees
    every `POLL` s; (exit code, wall s, CPU s of the command and what it reaped, {kind (pid): peak KiB})."""
    running = _processes()
    before = {p for d in daemons for p in _tree(d, running)}
    peaks: dict[int, int] = {}
    kinds: dict[int, str] = {}
    start = time.perf_counter()
    with open(log_path, "wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
        try:
            while True:
                pid, status, usage = os.wait4(process.pid, os.WNOHANG)
                if pid:
                    break
                processes = _processes()
                mine = set(_tree(process.pid, processes))
                for p in mine | {q for d in daemons for q in _tree(d, processes)}:
                    rss, hwm = _memory_kb(p)
                    if p not in kinds:
                        kinds[p] = _kind(p, process.pid, daemons, p in mine)
                    peaks[p] = max(peaks.get(p, 0), rss if p in before else hwm)
                time.sleep(POLL)
        except BaseException:
            process.kill()
            raise
    wall = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    by_kind = {f"{kinds[p]} ({p})": kb for p, kb in peaks.items() if kb}
    return process.returncode, wall, usage.ru_utime + usage.ru_stime, by_kind


def command_line(command: str, inputs: dict[str, Any], output: Path, runner: str, workers: int) -> list[str]:
    """`python -m pipeline.cli.main COMMAND ...` on `inputs` (the corpus, and generate's output)."""
    if command == "record generate":
        args = [a for p in inputs["corpus"].stories for a in ("--input", str(p))]
        args += [a for p in inputs["corpus"].url_lists for a in ("--url-list", str(p))]
    elif command == "record filter":
        args = [str(inputs["generated"]), "--reader", "lexical"]
    else:
        args = ["--input", str(inputs["corpus"].blogs)]
    beam = (["--runner=FlinkRunner", f"--flink_master={MASTER}"] if runner == "flink" else
            ["--direct_running_mode=multi_processing", f"--direct_num_workers={workers}"])
    return [sys.executable, "-m", "pipeline.cli.main", *command.split(), *args, "--output", str(output), *beam]


def table_rows(folder: Path) -> int:
    """Rows of the Parquet files under `folder` (from their footers)."""
    import pyarrow.parquet as pq

    return sum(pq.ParquetFile(path).metadata.num_rows for path in sorted(folder.glob("*.parquet")))


def read_step_records(log: str) -> dict[str, Any]:
    """Records the read step (the first of `READ_STEPS` the jobs run) of the run's Flink jobs
    read, per subtask and per TaskManager, from the cluster's REST API; and whether every
    TaskManager read some."""
    try:
        managers = sorted(tm["id"] for tm in rest_get(MASTER, "/taskmanagers")["taskmanagers"])
        per_subtask: list[int] = []
        per_tm: dict[str, int] = {tm: 0 for tm in managers}
        jobs = list(dict.fromkeys(JOB_LINE.findall(log)))
        vertices: list[str] = []
        for job_id in jobs:
            for _ in range(60):   # the JobManager may say FINISHED a little after the driver
                job = rest_get(MASTER, f"/jobs/{job_id}")
                if job["state"] != "RUNNING":
                    break
                time.sleep(0.5)
            step = next((name for name in READ_STEPS
                         if any(name in vertex["name"] for vertex in job["vertices"])), None)
            for vertex in job["vertices"]:
                if step is None or step not in vertex["name"]:
                    continue
                vertices.append(vertex["name"])
                detail = rest_get(MASTER, f"/jobs/{job_id}/vertices/{vertex['id']}")
                per_subtask += [t["metrics"]["read-records"]
                                for t in sorted(detail["subtasks"], key=lambda t: t["subtask"])]
                managers_of = rest_get(MASTER, f"/jobs/{job_id}/vertices/{vertex['id']}/taskmanagers")
                for tm in managers_of["taskmanagers"]:
                    tm_id = tm["taskmanager-id"]
                    per_tm[tm_id] = per_tm.get(tm_id, 0) + tm["metrics"]["read-records"]
    except (OSError, KeyError, ValueError) as error:
        return {"error": f"{type(error).__name__}: {error}"}
    if not vertices:
        return {"error": f"no vertex of jobs {jobs} runs one of {READ_STEPS}"}
    return {"jobs": jobs, "vertices": vertices, "read_per_subtask": per_subtask, "read_per_taskmanager": per_tm,
            "both_taskmanagers": len(per_tm) >= 2 and all(n > 0 for n in per_tm.values())}


def measure(scale: int, runner: str, command: str, inputs: dict[str, Any], output: Path,
            workers: int) -> Run:
    """Run one command on one runner and measure it."""
    daemons = cluster_daemons() if runner == "flink" else {}
    cluster_before = _cluster_cpu(daemons)
    log_path = output.parent / f"{output.name}.log"
    argv = command_line(command, inputs, output, runner, workers)
    code, wall, cpu, peaks = run_measured(argv, log_path, daemons)
    run = Run(scale, runner, command, code, wall, cpu, log=str(log_path))
    if runner == "flink":
        time.sleep(2)   # the finished job's workers are reaped by their TaskManagers
        after = _cluster_cpu(daemons)
        run.cpu += after - cluster_before if after is not None and cluster_before is not None else 0.0
        run.flink = read_step_records(log_path.read_text(encoding="utf-8", errors="replace"))
    if peaks:
        largest = max(peaks, key=lambda k: peaks[k])
        run.peak_mib, run.peak_process = peaks[largest] / 1024, largest
        for name, kb in peaks.items():
            kind = name.rsplit(" (", 1)[0]
            run.peaks_mib[kind] = max(run.peaks_mib.get(kind, 0.0), kb / 1024)
    stage, run.unit, table = MEASURES[command]
    if code == 0:
        summary = json.loads((output / "summary.json").read_text(encoding="utf-8"))
        run.items = summary["stages"][stage]["in"]
        run.rows = table_rows(output / table)
    return run


def _cluster_cpu(daemons: dict[int, str]) -> Optional[float]:
    try:
        return cluster_cpu(list(daemons)) if daemons else None
    except OSError:   # a daemon died
        return None


def markdown(runs: Sequence[Run]) -> str:
    """The runs as a markdown table."""
    lines = ["| scale | runner | command | items | wall s | CPU s | peak RSS MiB (process) | rows | items/s "
             "| read per TaskManager |",
             "|---:|---|---|---:|---:|---:|---|---:|---:|---|"]
    for r in runs:
        if r.code != 0:
            why = r.log if r.code == -1 else f"failed (exit {r.code}): {r.log}"
            lines.append(f"| {r.scale}x | {r.runner} | {r.command} | | | | | | | {why} |")
            continue
        flink = ""
        if r.flink is not None:
            flink = r.flink.get("error") or (", ".join(f"{n:,}" for n in r.flink["read_per_taskmanager"].values())
                                             + ("" if r.flink["both_taskmanagers"] else " (not both)"))
        kind = r.peak_process.rsplit(" (", 1)[0]
        lines.append(f"| {r.scale}x | {r.runner} | {r.command} | {r.items:,} {r.unit} | {r.wall:.1f} | {r.cpu:.1f} "
                     f"| {r.peak_mib:.0f} ({kind}) | {r.rows:,} | {r.items_per_s:.1f} | {flink} |")
    return "\n".join(lines)


def check_goals(runs: Sequence[Run], scales: Sequence[int], runners: Sequence[str], goals: GoalCheck) -> None:
    """Peak RSS against the previous scale and wall time against the first, per runner and command."""
    found = {(r.runner, r.command, r.scale): r for r in runs}
    for runner in runners:
        for command in COMMANDS:
            if len(scales) == 1:
                goals.skipped(Goal(f"peak RSS, a scale / the one before, {command}, {runner}", "<=",
                                   RSS_GOAL, "x"), "one scale in --scales")
                continue
            pairs = [(Goal(f"peak RSS {b}x / {a}x, {command}, {runner}", "<=", RSS_GOAL, "x"), a, b, "peak_mib")
                     for a, b in zip(scales, scales[1:])]
            pairs += [(Goal(f"wall {b}x / {scales[0]}x, {command}, {runner}", "<=",
                            round(WALL_SLACK * b / scales[0], 2), "x"), scales[0], b, "wall") for b in scales[1:]]
            for goal, a, b, what in pairs:
                first, later = found.get((runner, command, a)), found.get((runner, command, b))
                if first is None or later is None or first.code or later.code:
                    goals.failed(goal, "a run failed or did not run")
                else:
                    goals.measured(goal, getattr(later, what) / getattr(first, what))


def main() -> None:
    parser = OneLineParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scales", type=int_list, default=[1, 10, 30], help="N x of the base corpus (1,10,30)")
    parser.add_argument("--runners", type=runner_list, default=list(RUNNERS), help="local,flink")
    parser.add_argument("--base", type=base_sizes, default=(BASE_ARTICLES, BASE_BLOGS),
                        help=f"1x: N articles and blog files, or ARTICLES,BLOGS ({BASE_ARTICLES},{BASE_BLOGS})")
    parser.add_argument("--seed", type=int, default=SEED, help="the corpus seed")
    parser.add_argument("--workers", type=int, default=2, help="local runner's worker processes (2)")
    parser.add_argument("--json", type=Path, default=ROOT / "out" / "bench-scale.json", help="results file")
    parser.add_argument("--workdir", type=Path, help="where corpora and outputs go (default: a temporary folder)")
    parser.add_argument("--keep", action="store_true", help="keep the corpora and outputs")
    add_check_option(parser)
    args = parser.parse_args()
    if args.workers < 1:
        parser.error("--workers must be positive")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))   # the cluster is stopped on the way out
    if args.workdir:
        args.workdir.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix="bench-scale-", dir=args.workdir))
    articles, blogs = args.base
    goals = GoalCheck()
    runs: list[Run] = []
    started = False
    try:
        if "flink" in args.runners and not cluster_up():
            subprocess.run([FLINK_SH, "up"], check=True, env={**os.environ, "PYTHON": sys.executable})
            started = True
        for scale in args.scales:
            corpus: ScaledCorpus = build_corpus(workdir / f"{scale}x" / "corpus", scale, articles, blogs,
                                                args.seed)
            print(f"{scale}x: {corpus.articles:,} articles, {corpus.blog_files:,} blog files", file=sys.stderr)
            for runner in args.runners:
                inputs: dict[str, Any] = {"corpus": corpus}
                for command in COMMANDS:
                    output = workdir / f"{scale}x" / f"{runner}-{command.replace(' ', '-')}"
                    if command == "record filter" and runs[-1].code != 0:
                        runs.append(Run(scale, runner, command, -1, log="not run: record generate failed"))
                        continue
                    run = measure(scale, runner, command, inputs, output, args.workers)
                    runs.append(run)
                    inputs["generated"] = output
                    print(f"  {runner} {command}: exit {run.code}, {run.wall:.1f} s, {run.peak_mib:.0f} MiB",
                          file=sys.stderr, flush=True)
            if not args.keep and not any(r.code for r in runs):   # logs are kept when a run failed
                shutil.rmtree(workdir / f"{scale}x")
    finally:
        if started:
            subprocess.run([FLINK_SH, "down"], check=False, env={**os.environ, "PYTHON": sys.executable})
        if not args.keep and not any(r.code for r in runs):   # logs are kept when a run failed
            shutil.rmtree(workdir, ignore_errors=True)
            for run in runs:
                run.log = ""
    print(markdown(runs))
    check_goals(runs, args.scales, args.runners, goals)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({
        "date": datetime.datetime.now().isoformat(timespec="seconds"), "cpus": os.cpu_count(),
        "scales": args.scales, "runners": args.runners, "base": {"articles": articles, "blogs": blogs},
        "seed": args.seed, "workers": args.workers,
        "runs": [{**asdict(r), "items_per_s": r.items_per_s} for r in runs],
        "goals": [line for _, line in goals.lines]}, indent=2) + "\n", encoding="utf-8")
    failed = any(r.code for r in runs)
    print(f"results: {args.json}" + (f"; logs: {workdir}" if failed else ""))
    status = conclude(goals, args.check)
    sys.exit(1 if failed else status)


if __name__ == "__main__":
    main()
