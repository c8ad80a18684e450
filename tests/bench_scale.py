"""`make bench-scale`: `record generate`, `record filter` and `cosmos paragraphs` on 1x, 10x and 30x
the same corpus, in process and on the local Flink cluster, to see time grow linearly and memory not;
or `cosmos paragraphs` and `record generate` on a tenth of a real corpus folder and on all of it.

The corpus is made from the repository's own samples by tests/scale_corpus.py: 1x is `--base`
(550 articles and 300 blog files, where each command's per-item work outweighs its fixed cost;
docs/benchmarks.md), N x holds N times as many articles (copies, each with new ids and a fifth of
its words changed, so duplicate removal keeps them) and N times as many blog files, of the real
corpus' shape (`--blog-shape real`, the default: from one post to hundreds or thousands, some
byte-identical, CRLF or LF, some cp1252, stray `&` and `<`; `copies`: copies of the 5 sample
files, as the figures of docs/benchmarks.md measured before). For each scale (`--scales`) and
runner (`--runners`: `local` = `--direct_running_mode=multi_processing --direct_num_workers=2`,
`flink` = the cluster of services/flink, 2 TaskManagers x 2 slots), the three commands run one
after another as subprocesses (`python -m pipeline.cli.main ...`; `record filter` with the lexical
reader on that runner's `record generate` output).

With a real corpus folder, `--blogs DIR` (Blog Authorship Corpus `.xml` files: `cosmos
paragraphs`) and/or `--stories DIR` (CNN/Daily Mail `.story` files, in subfolders or not: `record
generate`, with the `--url-list`s given), the scales are `tenth` (every 10th file by sorted path,
the 1st, 11th, ..., laid out as symlinks under the bench's work folder) and `whole` (the folder
itself), in that order, on each runner. Each run reports:

* wall: the command from start to exit (interpreter start and imports included);
* CPU: user + system seconds of the command and every process it waited for (its SDK workers, a
  Flink job server), from the kernel's accounting when it exits; on Flink plus what the cluster's
  daemons and their Python workers used meanwhile (/proc, as tests/bench_flink.py counts it);
* peak RSS: the largest process's, polled every 0.2 s from /proc: the command's process tree
  (driver, SDK workers, job server) and on Flink the JobManager, the TaskManagers and their
  Python workers. A process born during the run counts with its VmHWM (its own peak); one that
  was already running (a TaskManager JVM) with the largest VmRSS polled during the run;
* per kind of process (driver, SDK worker, SDK worker boot, job server, JobManager, TaskManager):
  how many there were, their CPU seconds (each process's as last polled, less what a daemon had
  used before the run) and the largest one's peak RSS; for the TaskManagers also the largest heap
  occupancy any garbage collection left during the run (their GC logs, services/flink/config.yaml):
  an upper bound of what the job kept live on the JVM's heap (after a young collection the old
  generation's garbage is still counted), where the RSS counts every heap page the JVM touched;
* rows written to the command's main table (`queries`, `queries`, `paragraphs`) and items/s
  (items: the articles, triples or posts its first stage read), and a digest of each table's
  rows (order-free) in the JSON;
* the run's stages from its summary.json (per stage: in, kept, rejected by reason, balanced);
* on Flink, the read step's records (`ProgressFiles`: the files each subtask read; `ProgressRead`
  where a command reads no files; from REST: per subtask and per TaskManager)
  and whether both TaskManagers read some.

Goals (per runner and command): generated corpus: peak RSS at each scale within 1.25x of the
previous scale's (10x against 1x, 30x against 10x); wall time at each scale within 1.1x of linear
growth from the first (10x within 11x of 1x). Real folder: whole against tenth, peak RSS of the
largest process within 1.25x and wall within 11x; every run exits 0; the main table's rows
identical in process and on Flink for the same input (when both run). The cluster is started
with services/flink/flink.sh when `flink` is asked for and none answers, started again before
each Flink run (so a TaskManager's peak is that run's, not what an earlier run left touched; the
cluster's logs so far are first copied to the work folder, `flink-logs-N`, kept with --keep or
when a run failed), and stopped at the end (failed or not) when this script started it; a cluster that was already up is used as it is
(each run's `fresh_cluster` in the JSON says which). Markdown tables go to stdout, every figure to
`--json` (out/bench-scale.json).

    .venv/bin/python tests/bench_scale.py [--scales 1,10,30] [--runners local,flink] [--base 550,300]
        [--blog-shape real|copies] [--commands "record generate,..."] [--workers 2] [--json out/bench-scale.json] [--workdir DIR]
        [--keep] [--check]
    .venv/bin/python tests/bench_scale.py [--blogs DIR] [--stories DIR [--url-list PATH ...]]
        [--runners local,flink] ...
"""
from __future__ import annotations

import argparse
import datetime
import hashlib
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
from typing import Any, Callable, Optional, Sequence, Union

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from bench_common import Goal, GoalCheck, add_check_option, conclude, sdk_worker  # noqa: E402
from bench_flink import FLINK_SH, MASTER, cluster_cpu, cluster_up  # noqa: E402
from bench_record import _cmdline, _processes, _tree  # noqa: E402
from scale_corpus import (  # noqa: E402
    BASE_ARTICLES,
    BASE_BLOGS,
    BLOG_SHAPES,
    SEED,
    ScaledCorpus,
    build_corpus,
)

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
# A real corpus folder: (option, the files taken from it, the command that reads it).
REAL_INPUTS = {"blogs": (".xml", "cosmos paragraphs"), "stories": (".story", "record generate")}
REAL_SCALES = ("tenth", "whole")
TENTH = 10
KIND_ORDER = ("driver", "SDK worker", "SDK worker boot", "job server", "JobManager", "TaskManager",
              "cluster daemon", "other")

Scale = Union[int, str]     # N (N x the generated corpus), or "tenth" / "whole" of a real folder


def scale_label(scale: Scale) -> str:
    return f"{scale}x" if isinstance(scale, int) else scale


@dataclass
class Run:
    """One command's run and what was measured of it (see the module docstring)."""
    scale: Scale
    runner: str
    command: str
    code: int
    wall: float = 0.0
    cpu: float = 0.0
    peak_mib: float = 0.0
    peak_process: str = ""
    peaks_mib: dict[str, float] = field(default_factory=dict)   # largest peak per kind of process
    # per kind of process: {"processes": n, "cpu_s": polled CPU s, "peak_mib": the largest's peak}
    kinds: dict[str, dict[str, float]] = field(default_factory=dict)
    items: int = 0
    unit: str = ""
    rows: int = 0
    input_files: int = 0
    stages: dict[str, Any] = field(default_factory=dict)        # summary.json's "stages"
    tables: dict[str, dict[str, Any]] = field(default_factory=dict)   # {table: {rows, digest}}
    log: str = ""
    flink: Optional[dict[str, Any]] = None
    fresh_cluster: Optional[bool] = None   # on Flink: whether the cluster was started for this run

    @property
    def items_per_s(self) -> float:
        return self.items / self.wall if self.wall else 0.0

    @property
    def digest(self) -> Optional[str]:
        """The main table's rows digest (None when the run wrote none)."""
        table = self.tables.get(MEASURES[self.command][2])
        return None if table is None else str(table["digest"])


@dataclass(frozen=True)
class RealFolder:
    """A real corpus folder given with `--blogs` / `--stories`, and its tenth.

    Args:
        option: `blogs` or `stories`.
        whole: the folder.
        files: the files read from it (sorted relative paths; `REAL_INPUTS`' suffix).
        tenth: where the symlinks of every `TENTH`th of them lie.
        others: visible files of other names in the folder (the pipeline may read them in the
            whole run, never in the tenth).
    """
    option: str
    whole: Path
    files: tuple[str, ...]
    tenth: Path
    others: int

    @property
    def command(self) -> str:
        return REAL_INPUTS[self.option][1]

    def tenth_files(self) -> tuple[str, ...]:
        return self.files[::TENTH]

    def folder(self, scale: Scale) -> Path:
        return self.tenth if scale == "tenth" else self.whole

    def count(self, scale: Scale) -> int:
        return len(self.tenth_files()) if scale == "tenth" else len(self.files)


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


def folder(text: str) -> Path:
    path = Path(text).expanduser()
    if not path.is_dir():
        raise argparse.ArgumentTypeError(f"not a folder: {text!r}")
    return path.resolve()


def real_folder(option: str, whole: Path, workdir: Path) -> RealFolder:
    """`whole`'s files of `option`'s suffix (any depth, sorted by relative path) and the symlinks
    of every `TENTH`th under `workdir/tenth/OPTION` (same relative paths, so the same names and
    blogger or article ids)."""
    suffix = REAL_INPUTS[option][0]
    files, others = [], 0
    for root, dirs, names in os.walk(whole):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in names:
            if name.lower().endswith(suffix):
                files.append(Path(root, name).relative_to(whole).as_posix())
            elif not name.startswith("."):
                others += 1
    if not files:
        raise SystemExit(f"bench_scale: --{option} {whole}: no {suffix} file in it")
    real = RealFolder(option, whole, tuple(sorted(files)), workdir / "tenth" / option, others)
    for relative in real.tenth_files():
        link = real.tenth / relative
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(whole / relative)
    return real


def cluster_daemons() -> dict[int, str]:
    """{pid: role} of the cluster's daemons, from services/flink's pid files."""
    roles = {"standalonesession": "JobManager", "taskexecutor": "TaskManager"}
    found: dict[int, str] = {}
    for pid_file in (cache_dir() / "flink-cluster").glob("*.pid"):
        role = next((r for key, r in roles.items() if key in pid_file.name), "cluster daemon")
        found.update({int(line): role for line in pid_file.read_text().split() if line.strip()})
    return found


# A garbage collection's line in a TaskManager's GC log: heap before -> after (committed).
GC_HEAP = re.compile(r"(\d+)M->(\d+)M\((\d+)M\)")


def gc_logs() -> dict[Path, int]:
    """{path: size} of the cluster's TaskManager GC logs (services/flink/config.yaml), the
    JVM's rotated ones (`.log.0` ...) included."""
    return {path: path.stat().st_size
            for path in (cache_dir() / "flink-cluster" / "log").glob("taskmanager-gc-*.log*")}


def heap_after_gc_mib(before: dict[Path, int]) -> float:
    """The largest heap occupancy a collection left in any TaskManager since `before`
    (`gc_logs()` then; a file the JVM has since rotated is read whole); 0 when none was logged."""
    largest = 0
    for path, size in gc_logs().items():
        with path.open("rb") as log:
            log.seek(before.get(path, 0) if before.get(path, 0) <= size else 0)
            text = log.read().decode("ascii", "replace")
        largest = max([largest, *(int(m.group(2)) for m in GC_HEAP.finditer(text))])
    return float(largest)


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
    if sdk_worker(line):
        return "SDK worker"
    if "csdata-sdk-worker" in line or "pipeline.engine.worker_boot" in line:
        return "SDK worker boot"     # starts the SDK worker of a Flink TaskManager and waits
    if under_driver and "java" in line.split(" ", 1)[0]:
        return "job server"
    return "other"


@dataclass
class Measured:
    """What `run_measured` saw: exit code, wall s, CPU s of the command and what it reaped, and
    per process (by pid) its kind, peak KiB and CPU s (as last polled, less what a process that
    was running before had used by then)."""
    code: int
    wall: float
    cpu: float
    kinds: dict[int, str]
    peaks_kb: dict[int, int]
    cpus: dict[int, float]


def run_measured(command: list[str], log_path: Path, daemons: dict[int, str]) -> Measured:
    """Run `command` (output to `log_path`), polling its process tree and the `daemons`' trees
    every `POLL` s."""
    running = _processes()
    before = {p for d in daemons for p in _tree(d, running)}
    peaks: dict[int, int] = {}
    cpus: dict[int, float] = {}
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
                    if p in processes:
                        used = processes[p][1] - (running[p][1] if p in before and p in running else 0.0)
                        cpus[p] = max(cpus.get(p, 0.0), used)
                time.sleep(POLL)
        except BaseException:
            process.kill()
            raise
    wall = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    return Measured(process.returncode, wall, usage.ru_utime + usage.ru_stime, kinds, peaks, cpus)


def command_line(command: str, inputs: dict[str, Any], output: Path, runner: str, workers: int) -> list[str]:
    """`python -m pipeline.cli.main COMMAND ...` on `inputs`: the generated corpus (`corpus`) or
    a real folder (`blogs`, `stories` and its `url_lists`), and generate's output (`generated`)."""
    if command == "record generate":
        if "stories" in inputs:
            args = ["--input", str(inputs["stories"])]
            args += [a for p in inputs.get("url_lists", ()) for a in ("--url-list", str(p))]
        else:
            args = [a for p in inputs["corpus"].stories for a in ("--input", str(p))]
            args += [a for p in inputs["corpus"].url_lists for a in ("--url-list", str(p))]
    elif command == "record filter":
        args = [str(inputs["generated"]), "--reader", "lexical"]
    else:
        args = ["--input", str(inputs["blogs"] if "blogs" in inputs else inputs["corpus"].blogs)]
    beam = (["--runner=FlinkRunner", f"--flink_master={MASTER}"] if runner == "flink" else
            ["--direct_running_mode=multi_processing", f"--direct_num_workers={workers}"])
    return [sys.executable, "-m", "pipeline.cli.main", *command.split(), *args, "--output", str(output), *beam]


def table_rows(folder: Path) -> int:
    """Rows of the Parquet files under `folder` (from their footers)."""
    import pyarrow.parquet as pq

    return sum(pq.ParquetFile(path).metadata.num_rows for path in sorted(folder.glob("*.parquet")))


def table_digest(folder: Path) -> dict[str, Any]:
    """{rows, digest} of the Parquet table in `folder`: sha256 of its rows' sorted digests (each
    row as canonical JSON, as tests/conftest.py's `parquet_rows` compares them), so two runs
    match whatever order their workers wrote in; read in batches, never whole."""
    import pyarrow.parquet as pq

    digests = []
    for path in sorted(folder.glob("*.parquet")):
        for batch in pq.ParquetFile(path).iter_batches(batch_size=4096):
            digests += [hashlib.blake2b(json.dumps(row, sort_keys=True, default=repr).encode("utf-8"),
                                        digest_size=16).digest() for row in batch.to_pylist()]
    digests.sort()
    return {"rows": len(digests), "digest": hashlib.sha256(b"".join(digests)).hexdigest()}


def output_tables(output: Path) -> dict[str, dict[str, Any]]:
    """`table_digest` of each table (a visible folder of Parquet files) of a run's output."""
    return {folder.name: table_digest(folder) for folder in sorted(output.iterdir())
            if folder.is_dir() and not folder.name.startswith(".") and any(folder.glob("*.parquet"))}


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


def by_kind(measured: Measured) -> dict[str, dict[str, float]]:
    """{kind: {processes, cpu_s, peak_mib}} of the processes `measured` saw (those with a peak)."""
    kinds: dict[str, dict[str, float]] = {}
    for pid, kb in measured.peaks_kb.items():
        if not kb:
            continue
        entry = kinds.setdefault(measured.kinds[pid], {"processes": 0, "cpu_s": 0.0, "peak_mib": 0.0})
        entry["processes"] += 1
        entry["cpu_s"] += measured.cpus.get(pid, 0.0)
        entry["peak_mib"] = max(entry["peak_mib"], kb / 1024)
    order = {kind: n for n, kind in enumerate(KIND_ORDER)}
    return dict(sorted(kinds.items(), key=lambda item: order.get(item[0], len(order))))


def measure(scale: Scale, runner: str, command: str, inputs: dict[str, Any], output: Path,
            workers: int, fresh_cluster: Callable[[], Optional[bool]] = lambda: None) -> Run:
    """Run one command on one runner and measure it; on Flink, `fresh_cluster()` first (whether
    the run gets a cluster started for it; False: it did not come up, and the command is not run)."""
    fresh = fresh_cluster() if runner == "flink" else None
    if fresh is False:
        return Run(scale, runner, command, -1, log="not run: the cluster did not come up again",
                   fresh_cluster=False)
    daemons = cluster_daemons() if runner == "flink" else {}
    cluster_before = _cluster_cpu(daemons)
    gc_before = gc_logs() if runner == "flink" else {}
    log_path = output.parent / f"{output.name}.log"
    argv = command_line(command, inputs, output, runner, workers)
    measured = run_measured(argv, log_path, daemons)
    code = measured.code
    run = Run(scale, runner, command, code, measured.wall, measured.cpu, log=str(log_path), fresh_cluster=fresh)
    if runner == "flink":
        time.sleep(2)   # the finished job's workers are reaped by their TaskManagers
        after = _cluster_cpu(daemons)
        run.cpu += after - cluster_before if after is not None and cluster_before is not None else 0.0
        run.flink = read_step_records(log_path.read_text(encoding="utf-8", errors="replace"))
    peaks = {f"{measured.kinds[p]} ({p})": kb for p, kb in measured.peaks_kb.items() if kb}
    if peaks:
        largest = max(peaks, key=lambda k: peaks[k])
        run.peak_mib, run.peak_process = peaks[largest] / 1024, largest
    run.kinds = by_kind(measured)
    heap = heap_after_gc_mib(gc_before) if runner == "flink" else 0.0
    if heap and "TaskManager" in run.kinds:
        run.kinds["TaskManager"]["heap_after_gc_mib"] = heap
    run.peaks_mib = {kind: entry["peak_mib"] for kind, entry in run.kinds.items()}
    stage, run.unit, table = MEASURES[command]
    summary_path = output / "summary.json"
    if summary_path.is_file():   # a failed run may have written its stages too
        run.stages = json.loads(summary_path.read_text(encoding="utf-8")).get("stages", {})
    if code == 0:
        run.items = run.stages[stage]["in"]
        run.rows = table_rows(output / table)
        run.tables = output_tables(output)
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
        scale = scale_label(r.scale)
        if r.code != 0:
            why = r.log if r.code == -1 else f"failed (exit {r.code}): {r.log}"
            lines.append(f"| {scale} | {r.runner} | {r.command} | | {r.wall:.1f} | {r.cpu:.1f} | | | | {why} |")
            continue
        flink = ""
        if r.flink is not None:
            flink = r.flink.get("error") or (", ".join(f"{n:,}" for n in r.flink["read_per_taskmanager"].values())
                                             + ("" if r.flink["both_taskmanagers"] else " (not both)"))
        kind = r.peak_process.rsplit(" (", 1)[0]
        lines.append(f"| {scale} | {r.runner} | {r.command} | {r.items:,} {r.unit} | {r.wall:.1f} | {r.cpu:.1f} "
                     f"| {r.peak_mib:.0f} ({kind}) | {r.rows:,} | {r.items_per_s:.1f} | {flink} |")
    return "\n".join(lines)


def markdown_kinds(runs: Sequence[Run]) -> str:
    """Per run and kind of process: processes, CPU s, the largest one's peak RSS; and the exit code."""
    lines = ["| scale | runner | command | exit | kind of process | processes | CPU s (polled) | peak RSS MiB "
             "| JVM heap after GC, MiB |",
             "|---:|---|---|---:|---|---:|---:|---:|---:|"]
    for r in runs:
        if not r.kinds:
            lines.append(f"| {scale_label(r.scale)} | {r.runner} | {r.command} | {r.code} | | | | | |")
        for kind, entry in r.kinds.items():
            heap = f"{entry['heap_after_gc_mib']:.0f}" if "heap_after_gc_mib" in entry else ""
            lines.append(f"| {scale_label(r.scale)} | {r.runner} | {r.command} | {r.code} | {kind} "
                         f"| {entry['processes']:.0f} | {entry['cpu_s']:.1f} | {entry['peak_mib']:.0f} | {heap} |")
    return "\n".join(lines)


def markdown_stages(runs: Sequence[Run]) -> str:
    """Per run and stage of its summary.json: in, kept, rejected (by reason), balanced."""
    lines = ["| scale | runner | command | stage | in | kept | rejected | balanced |",
             "|---:|---|---|---|---:|---:|---|---|"]
    for r in runs:
        for stage, entry in r.stages.items():
            reasons = entry.get("rejected") or {}
            rejected = f"{sum(reasons.values()):,}"
            if reasons:
                rejected += " (" + ", ".join(f"{reason} {n:,}" for reason, n in sorted(reasons.items())) + ")"
            balanced = "yes" if entry.get("balanced", True) else "**no**"
            lines.append(f"| {scale_label(r.scale)} | {r.runner} | {r.command} | {stage} | {entry.get('in', 0):,} "
                         f"| {entry.get('kept', 0):,} | {rejected} | {balanced} |")
    return "\n".join(lines)


def check_goals(runs: Sequence[Run], scales: Sequence[int], runners: Sequence[str], goals: GoalCheck,
                commands: Sequence[str] = COMMANDS) -> None:
    """Peak RSS against the previous scale and wall time against the first, per runner and command."""
    found = {(r.runner, r.command, r.scale): r for r in runs}
    for runner in runners:
        for command in commands:
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


def check_real_goals(runs: Sequence[Run], commands: Sequence[str], runners: Sequence[str],
                     goals: GoalCheck) -> None:
    """A real folder: whole / tenth peak RSS (largest process) and wall per runner and command;
    every run's exit code; the main table's rows on Flink against in process, per scale."""
    found = {(r.runner, r.command, r.scale): r for r in runs}
    for runner in runners:
        for command in commands:
            tenth, whole = found.get((runner, command, "tenth")), found.get((runner, command, "whole"))
            for goal, what in ((Goal(f"peak RSS whole / tenth, {command}, {runner}", "<=", RSS_GOAL, "x"),
                                "peak_mib"),
                               (Goal(f"wall whole / tenth, {command}, {runner}", "<=", WALL_SLACK * TENTH, "x"),
                                "wall")):
                if tenth is None or whole is None or tenth.code or whole.code or not getattr(tenth, what):
                    goals.failed(goal, "a run failed or did not run")
                else:
                    goals.measured(goal, getattr(whole, what) / getattr(tenth, what))
    for r in runs:
        goals.measured(Goal(f"exit code, {r.scale}, {r.command}, {r.runner}", "<=", 0, "", 0), r.code)
    for command in commands:
        for scale in REAL_SCALES:
            goal = Goal(f"rows identical flink / local, {scale}, {command}", ">=", 1, "", 0)
            local, flink = found.get(("local", command, scale)), found.get(("flink", command, scale))
            if "local" not in runners or "flink" not in runners:
                goals.skipped(goal, "one runner in --runners")
            elif local is None or flink is None or local.code or flink.code or local.digest is None:
                goals.failed(goal, "a run failed or did not run")
            else:
                goals.measured(goal, float(local.digest == flink.digest))


def run_generated(args: argparse.Namespace, workdir: Path, runs: list[Run],
                  fresh_cluster: Callable[[], Optional[bool]]) -> None:
    """1x, 10x, 30x ... the corpus of tests/scale_corpus.py, each runner, the three commands."""
    articles, blogs = args.base
    for scale in args.scales:
        corpus: ScaledCorpus = build_corpus(workdir / f"{scale}x" / "corpus", scale, articles, blogs,
                                            args.seed, blog_shape=args.blog_shape)
        print(f"{scale}x: {corpus.articles:,} articles, {corpus.blog_files:,} blog files "
              f"({corpus.blog_posts:,} posts)", file=sys.stderr)
        for runner in args.runners:
            inputs: dict[str, Any] = {"corpus": corpus}
            for command in args.commands:
                output = workdir / f"{scale}x" / f"{runner}-{command.replace(' ', '-')}"
                if command == "record filter" and runs[-1].code != 0:
                    runs.append(Run(scale, runner, command, -1, log="not run: record generate failed"))
                    continue
                run = measure(scale, runner, command, inputs, output, args.workers, fresh_cluster)
                runs.append(run)
                inputs["generated"] = output
                print(f"  {runner} {command}: exit {run.code}, {run.wall:.1f} s, {run.peak_mib:.0f} MiB"
                      + (f" ({run.log})" if run.code == -1 else ""), file=sys.stderr, flush=True)
        if not args.keep and not any(r.code for r in runs):   # logs are kept when a run failed
            shutil.rmtree(workdir / f"{scale}x")


def run_real(folders: Sequence[RealFolder], args: argparse.Namespace, workdir: Path, runs: list[Run],
             fresh_cluster: Callable[[], Optional[bool]]) -> None:
    """A tenth of each real folder, then the whole of it, on each runner."""
    for scale in REAL_SCALES:
        for runner in args.runners:
            for real in folders:
                inputs: dict[str, Any] = {real.option: real.folder(scale), "url_lists": args.url_list}
                output = workdir / scale / f"{runner}-{real.command.replace(' ', '-')}"
                output.parent.mkdir(parents=True, exist_ok=True)
                run = measure(scale, runner, real.command, inputs, output, args.workers, fresh_cluster)
                run.input_files = real.count(scale)
                runs.append(run)
                print(f"  {scale} {runner} {real.command} ({run.input_files:,} files): exit {run.code}, "
                      f"{run.wall:.1f} s, {run.peak_mib:.0f} MiB" + (f" ({run.log})" if run.code == -1 else ""),
                      file=sys.stderr, flush=True)
                if not args.keep and not run.code:   # digests taken; a failed run's output stays
                    shutil.rmtree(output, ignore_errors=True)


def restart_cluster(keep_logs: Path) -> bool:
    """Copy the cluster's logs to `keep_logs`, stop the cluster this script started and start it
    again (fresh JVMs, logs and config); whether it came up."""
    try:
        shutil.copytree(cache_dir() / "flink-cluster" / "log", keep_logs, dirs_exist_ok=True)
    except OSError as error:   # the logs are a help, not a figure: the bench goes on
        print(f"could not keep the cluster's logs: {error}", file=sys.stderr)
    env = {**os.environ, "PYTHON": sys.executable}
    if subprocess.run([FLINK_SH, "down"], check=False, env=env).returncode != 0:
        return False   # `up` would answer "already running" with the old JVMs
    return subprocess.run([FLINK_SH, "up"], check=False, env=env).returncode == 0


def command_list(text: str) -> list[str]:
    """`--commands`: a comma-separated subset of COMMANDS, in their order."""
    asked = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [c for c in asked if c not in COMMANDS]
    if unknown or not asked:
        raise argparse.ArgumentTypeError(f"expected some of {', '.join(COMMANDS)}, got {text!r}")
    if "record filter" in asked and "record generate" not in asked:
        raise argparse.ArgumentTypeError("record filter needs record generate")
    return [c for c in COMMANDS if c in asked]


def main() -> None:
    parser = OneLineParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scales", type=int_list, help="N x of the base corpus (1,10,30)")
    parser.add_argument("--runners", type=runner_list, default=list(RUNNERS), help="local,flink")
    parser.add_argument("--base", type=base_sizes,
                        help=f"1x: N articles and blog files, or ARTICLES,BLOGS ({BASE_ARTICLES},{BASE_BLOGS})")
    parser.add_argument("--blog-shape", choices=BLOG_SHAPES, default="real",
                        help="the generated blog files: the real corpus' shape, or copies of the 5 sample "
                             "files (real)")
    parser.add_argument("--seed", type=int, default=SEED, help="the corpus seed")
    parser.add_argument("--blogs", type=folder, metavar="DIR",
                        help="a folder of Blog Authorship Corpus .xml files: `cosmos paragraphs` on a "
                             "tenth of it and on all of it, instead of the generated corpus")
    parser.add_argument("--stories", type=folder, metavar="DIR",
                        help="a folder of CNN/Daily Mail .story files (any depth): `record generate` on "
                             "a tenth of it and on all of it, instead of the generated corpus")
    parser.add_argument("--url-list", type=Path, action="append", default=[], metavar="PATH",
                        help="with --stories: a URL list (all_train.txt ...) for `record generate` (repeatable)")
    parser.add_argument("--workers", type=int, default=2, help="local runner's worker processes (2)")
    parser.add_argument("--commands", type=command_list, default=list(COMMANDS),
                        help="generated corpus: which of the three commands run (all; `record filter` "
                             "needs `record generate`)")
    parser.add_argument("--json", type=Path, default=ROOT / "out" / "bench-scale.json", help="results file")
    parser.add_argument("--workdir", type=Path, help="where corpora and outputs go (default: a temporary folder)")
    parser.add_argument("--keep", action="store_true", help="keep the corpora and outputs")
    add_check_option(parser)
    args = parser.parse_args()
    real_mode = args.blogs is not None or args.stories is not None
    if args.workers < 1:
        parser.error("--workers must be positive")
    if real_mode and (args.scales is not None or args.base is not None):
        parser.error("--scales and --base are for the generated corpus; with --blogs or --stories the "
                     "scales are a tenth and the whole of the folder")
    if args.url_list and args.stories is None:
        parser.error("--url-list goes with --stories")
    missing = [str(p) for p in args.url_list if not p.is_file()]
    if missing:
        parser.error(f"--url-list: no such file: {missing[0]}")
    args.scales = args.scales or [1, 10, 30]
    args.base = args.base or (BASE_ARTICLES, BASE_BLOGS)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))   # the cluster is stopped on the way out
    if args.workdir:
        args.workdir.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix="bench-scale-", dir=args.workdir))
    goals = GoalCheck()
    runs: list[Run] = []
    folders: list[RealFolder] = []
    started = False
    try:
        for option in REAL_INPUTS:
            if getattr(args, option) is not None:
                real = real_folder(option, getattr(args, option), workdir)
                folders.append(real)
                print(f"--{option} {real.whole}: {len(real.files):,} {REAL_INPUTS[option][0]} files, a tenth "
                      f"({len(real.tenth_files()):,}) as symlinks under {real.tenth}"
                      + (f"; {real.others:,} other files there, which the whole run may read too"
                         if real.others else ""), file=sys.stderr)
        if "flink" in args.runners and not cluster_up():
            subprocess.run([FLINK_SH, "up"], check=True, env={**os.environ, "PYTHON": sys.executable})
            started = True
        flink_runs = 0

        def fresh_cluster() -> Optional[bool]:
            """Before a Flink run: whether it gets a cluster started for it (None: the user's)."""
            nonlocal flink_runs
            flink_runs += 1
            if not started:
                return None
            return flink_runs == 1 or restart_cluster(workdir / f"flink-logs-{flink_runs - 1}")

        if real_mode:
            run_real(folders, args, workdir, runs, fresh_cluster)
        else:
            run_generated(args, workdir, runs, fresh_cluster)
    finally:
        if started:
            subprocess.run([FLINK_SH, "down"], check=False, env={**os.environ, "PYTHON": sys.executable})
        if not args.keep and not any(r.code for r in runs):   # logs are kept when a run failed
            shutil.rmtree(workdir, ignore_errors=True)   # symlinks only: the real folders stay
            for run in runs:
                run.log = ""
    print(markdown(runs))
    print()
    print(markdown_kinds(runs))
    print()
    print(markdown_stages(runs))
    if real_mode:
        check_real_goals(runs, [real.command for real in folders], args.runners, goals)
    else:
        check_goals(runs, args.scales, args.runners, goals, args.commands)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    corpus: dict[str, Any] = (
        {"real": {real.option: {"folder": str(real.whole), "files": len(real.files),
                                "tenth": len(real.tenth_files()), "other_files": real.others}
                  for real in folders}, "url_lists": [str(p) for p in args.url_list]}
        if real_mode else
        {"scales": args.scales, "base": {"articles": args.base[0], "blogs": args.base[1]},
         "blog_shape": args.blog_shape, "seed": args.seed})
    args.json.write_text(json.dumps({
        "date": datetime.datetime.now().isoformat(timespec="seconds"), "cpus": os.cpu_count(),
        "mode": "real" if real_mode else "generated", **corpus, "runners": args.runners,
        "workers": args.workers,
        "runs": [{**asdict(r), "items_per_s": r.items_per_s} for r in runs],
        "goals": [line for _, line in goals.lines]}, indent=2) + "\n", encoding="utf-8")
    failed = any(r.code for r in runs)
    print(f"results: {args.json}" + (f"; logs: {workdir}" if failed else ""))
    status = conclude(goals, args.check)
    sys.exit(1 if failed else status)


if __name__ == "__main__":
    main()
