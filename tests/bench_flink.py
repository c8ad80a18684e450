"""`make bench`: `csdata record generate` on the local Flink cluster against the in-process
runner with 2 workers, on the same input.

The input is the real CNN/DM samples beside the checkout (../shared/samples/cnndm; else the
repo's stories) repeated `--copies` times under new ids (bench_record's `write_copies`: 120
articles x 10 = 1,200). Each round runs both configurations, in alternating order, and prints
wall time, CPU time and whether the rows are identical; the medians close. CPU time counts the
driver and its workers for the in-process run, and the driver plus what the JobManager, the
TaskManagers and their Python workers used during the run (/proc, children included) for
the cluster. Goal: the cluster run within 2x of the in-process wall time on a 2-core machine;
a measurement, not a target to chase (the cluster's JVMs, its network stack and its Python
workers share the same 2 cores here).

The cluster is started with services/flink/flink.sh unless one answers already, and stopped at
the end when this script started it.

    .venv/bin/python tests/bench_flink.py [--copies 10] [--rounds 1] [--check]

`--check` ends with the goal's line (the ratio of the median wall times; measured, goal,
PASS/MISS) and exits 1 when it was missed.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, ROOT)

from bench_common import Goal, GoalCheck, add_check_option, conclude, n_rounds  # noqa: E402
from bench_record import (  # noqa: E402
    _processes,
    default_inputs,
    generate_command,
    read_articles,
    run_measured,
    write_copies,
)
from conftest import parquet_rows  # noqa: E402

from data_specs import load_spec  # noqa: E402
from transforms.core.cache import cache_dir  # noqa: E402

MASTER = "localhost:8081"
FLINK_SH = os.path.join(ROOT, "services", "flink", "flink.sh")
WALL_GOAL = 2.0


def cluster_up() -> bool:
    try:
        with urllib.request.urlopen(f"http://{MASTER}/overview", timeout=2) as response:
            return json.load(response)["taskmanagers"] == 2
    except OSError:
        return False


def cluster_pids() -> list[int]:
    """The JobManager's and TaskManagers' pids (from the cluster's pid files)."""
    pids = []
    for pid_file in (cache_dir() / "flink-cluster").glob("*.pid"):
        pids += [int(line) for line in pid_file.read_text().splitlines() if line.strip()]
    return pids


def cluster_cpu(pids: list[int]) -> float:
    """CPU seconds of the cluster's daemons and of the processes they started: their own, their
    finished children's (reaped) and their live descendants' (the Python workers)."""
    ticks = os.sysconf("SC_CLK_TCK")
    processes = _processes()
    total = 0.0
    for pid in pids:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
        fields = stat[stat.rindex(b")") + 2:].split()
        total += sum(int(f) for f in fields[11:15]) / ticks       # utime, stime, cutime, cstime
    children = {p for p, (parent, _) in processes.items() if parent in pids}
    while children:
        total += sum(processes[p][1] for p in children)
        children = {p for p, (parent, _) in processes.items() if parent in children}
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=1)
    add_check_option(parser)
    args = parser.parse_args()
    goals = GoalCheck()
    spec = load_spec("record")
    articles = read_articles(default_inputs(), spec)
    started = False
    if not cluster_up():
        subprocess.run([FLINK_SH, "up"], check=True, env={**os.environ, "PYTHON": sys.executable})
        started = True
    try:
        with tempfile.TemporaryDirectory(prefix="bench-flink-") as tmp:
            folder = os.path.join(tmp, "input")
            n = write_copies(articles, args.copies, folder)
            print(f"`csdata record generate` on {n:,} articles ({len(articles)} real ones x {args.copies}): "
                  f"local Flink cluster (2 TaskManagers x 2 slots) against in process with 2 workers")
            print(f"{'round':<7}{'configuration':<30}{'wall s':>9}{'CPU s':>9}{'rows':>10}")
            walls: dict[str, list[float]] = {"in process, 2 workers": [], "Flink cluster": []}
            for r in range(args.rounds):
                order = list(walls) if r % 2 == 0 else list(reversed(walls))
                outputs = {}
                for name in order:
                    out = os.path.join(tmp, f"{r}-{len(outputs)}")
                    if name == "Flink cluster":
                        pids = cluster_pids()
                        before = cluster_cpu(pids)
                        run = run_measured(generate_command(folder, out, 0, [
                            "--runner=FlinkRunner", f"--flink_master={MASTER}"]), out + ".log")
                        time.sleep(2)   # the workers of the finished job are reaped
                        cpu = run.driver_cpu + cluster_cpu(pids) - before
                    else:
                        run = run_measured(generate_command(folder, out, 2), out + ".log")
                        cpu = run.driver_cpu + sum(run.workers_cpu)
                    if run.code != 0:
                        sys.exit(f"{name} failed (exit {run.code}); log: {out}.log")
                    outputs[name] = out
                    walls[name].append(run.wall)
                    queries = len(parquet_rows(out).get("queries", []))
                    print(f"{r + 1:<7}{name:<30}{run.wall:9.1f}{cpu:9.1f}{queries:>10,}", flush=True)
                same = parquet_rows(outputs["Flink cluster"]) == parquet_rows(outputs["in process, 2 workers"])
                print(f"{'':<7}rows identical (every table, rejects included): {'yes' if same else 'NO'}")
            ratio = statistics.median(walls["Flink cluster"]) / statistics.median(walls["in process, 2 workers"])
            print(f"Flink / in process (2 workers), median wall: {ratio:.2f}x "
                  f"(goal: within {WALL_GOAL:.0f}x: {'met' if ratio <= WALL_GOAL else 'not met'})")
            goals.measured(Goal(f"Flink cluster / in process (2 workers), wall, medians of "
                                f"{n_rounds(args.rounds)}", "<=", WALL_GOAL, "x"), ratio)
    finally:
        if started:
            subprocess.run([FLINK_SH, "down"], check=False, env={**os.environ, "PYTHON": sys.executable})
    sys.exit(conclude(goals, args.check))


if __name__ == "__main__":
    main()
