"""`make bench-resume` (also run by `make bench`): a run SIGKILLed at about 70 % of a clean run's
wall time, then rerun, in process and on the local Flink cluster.

For `record generate` on `--articles` articles (10,000) and `cosmos paragraphs` on `--blogs` blog
files (15,000, about three quarters of the Blog Authorship Corpus; the corpus of
tests/scale_corpus.py, made from the repository's own samples): sizes where a run's fixed costs
(start-up, model loading; on Flink job submission, worker boot and each stage's start), which every
rerun pays again, are a small share of it, as they are for a real dump. Per runner
(`local` = `--direct_running_mode=multi_processing --direct_num_workers=2`, `flink` = the cluster
of services/flink):

1. a clean run into a fresh output: its wall time W;
2. the same command into another fresh output, killed with SIGKILL after `--kill-at` x W (local:
   the command's whole process group, as a closed laptop or an OOM-killed session ends it; Flink:
   the driver alone, whose job the rerun cancels when it takes the dead run's lease over);
3. the same command again into that output: its wall time R; it must say it resumes.

Reported: W, R, R/W (goal <= 0.45), and whether the rerun's tables (every row) and summary.json
stages equal the clean run's (goal: identical). A markdown table goes to stdout, the figures to
`--json` (out/bench-resume.json).

    .venv/bin/python tests/bench_resume.py [--runners local,flink] [--articles 10000] [--blogs 15000]
        [--kill-at 0.7] [--workdir DIR] [--keep] [--check]
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from bench_common import Goal, GoalCheck, add_check_option, conclude  # noqa: E402
from bench_flink import FLINK_SH, cluster_up  # noqa: E402
from bench_scale import command_line  # noqa: E402
from scale_corpus import SEED, build_corpus  # noqa: E402

from tests.conftest import parquet_rows  # noqa: E402

COMMANDS = ("record generate", "cosmos paragraphs")
RATIO_GOAL = 0.45


@dataclass
class Resume:
    runner: str
    command: str
    clean_wall: float = 0.0
    killed_after: float = 0.0
    rerun_wall: float = 0.0
    resumed_line: str = ""
    identical: bool = False
    codes: tuple[int, int, int] = (0, 0, 0)

    @property
    def ratio(self) -> float:
        return self.rerun_wall / self.clean_wall if self.clean_wall else 0.0


def timed(argv: list[str], log: Path) -> tuple[int, float]:
    start = time.perf_counter()
    with log.open("w") as handle:
        code = subprocess.run(argv, cwd=ROOT, stdout=handle, stderr=subprocess.STDOUT).returncode
    return code, time.perf_counter() - start


def killed(argv: list[str], after: float, log: Path, whole_group: bool) -> int:
    """Start `argv`, SIGKILL it after `after` seconds; its exit status (negative: killed)."""
    with log.open("w") as handle:
        proc = subprocess.Popen(argv, cwd=ROOT, stdout=handle, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            return proc.wait(timeout=after)   # finished before the kill
        except subprocess.TimeoutExpired:
            if whole_group:
                os.killpg(proc.pid, signal.SIGKILL)
            else:
                proc.send_signal(signal.SIGKILL)
            return proc.wait()


def stages(output: Path) -> Any:
    summary = json.loads((output / "summary.json").read_text(encoding="utf-8"))
    return summary["stages"]


def measure(runner: str, command: str, inputs: dict[str, Any], workdir: Path, kill_at: float) -> Resume:
    slug = f"{runner}-{command.replace(' ', '-')}"
    clean, resumed = workdir / f"{slug}-clean", workdir / f"{slug}-resumed"
    result = Resume(runner, command)
    code_clean, result.clean_wall = timed(command_line(command, inputs, clean, runner, 2),
                                          workdir / f"{slug}-clean.log")
    result.killed_after = kill_at * result.clean_wall
    code_killed = killed(command_line(command, inputs, resumed, runner, 2), result.killed_after,
                         workdir / f"{slug}-killed.log", whole_group=runner == "local")
    rerun_log = workdir / f"{slug}-rerun.log"
    code_rerun, result.rerun_wall = timed(command_line(command, inputs, resumed, runner, 2), rerun_log)
    result.codes = (code_clean, code_killed, code_rerun)
    text = rerun_log.read_text(encoding="utf-8", errors="replace")
    result.resumed_line = next((line for line in text.splitlines() if "resuming" in line), "")
    if code_clean == 0 and code_rerun == 0:
        result.identical = (parquet_rows(clean) == parquet_rows(resumed)
                            and stages(clean) == stages(resumed))
    return result


def markdown(results: list[Resume]) -> str:
    lines = ["| runner | command | clean wall | killed after | rerun wall | rerun / clean | rows and stages |",
             "|---|---|---:|---:|---:|---:|---|"]
    for r in results:
        lines.append(f"| {r.runner} | {r.command} | {r.clean_wall:.1f} s | {r.killed_after:.1f} s | "
                     f"{r.rerun_wall:.1f} s | {r.ratio:.2f}x | {'identical' if r.identical else 'DIFFER'} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runners", default="local,flink", help="local,flink")
    parser.add_argument("--articles", type=int, default=10000, help="articles of the ReCoRD corpus (10000)")
    parser.add_argument("--blogs", type=int, default=15000, help="blog files of the Cosmos QA corpus (15000)")
    parser.add_argument("--kill-at", type=float, default=0.7, help="share of the clean wall time (0.7)")
    parser.add_argument("--commands", default=",".join(COMMANDS), help="which commands (both)")
    parser.add_argument("--json", type=Path, default=ROOT / "out" / "bench-resume.json", help="results file")
    parser.add_argument("--workdir", type=Path, help="where the corpus and outputs go (a temporary folder)")
    parser.add_argument("--keep", action="store_true", help="keep the corpus and outputs")
    add_check_option(parser)
    args = parser.parse_args()
    runners = [r for r in args.runners.split(",") if r]
    commands = [c for c in args.commands.split(",") if c]
    if args.workdir:
        args.workdir.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix="bench-resume-", dir=args.workdir))
    corpus = build_corpus(workdir / "corpus", 1, args.articles, args.blogs, SEED)
    print(f"{corpus.articles:,} articles, {corpus.blog_files:,} blog files", file=sys.stderr)
    results: list[Resume] = []
    started = False
    try:
        if "flink" in runners and not cluster_up():
            subprocess.run([FLINK_SH, "up"], check=True, env={**os.environ, "PYTHON": sys.executable})
            started = True
        for runner in runners:
            for command in commands:
                result = measure(runner, command, {"corpus": corpus}, workdir, args.kill_at)
                results.append(result)
                print(f"  {runner} {command}: clean {result.clean_wall:.1f} s, rerun {result.rerun_wall:.1f} s "
                      f"({result.ratio:.2f}x), exits {result.codes}, "
                      f"{'identical' if result.identical else 'DIFFER'}; {result.resumed_line}",
                      file=sys.stderr, flush=True)
    finally:
        if started:
            subprocess.run([FLINK_SH, "down"], check=False, env={**os.environ, "PYTHON": sys.executable})
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    print(markdown(results))
    goals = GoalCheck()
    for r in results:
        goals.measured(Goal(f"{r.runner} {r.command}: rerun after a kill at {args.kill_at:g} / clean",
                            "<=", RATIO_GOAL, "x"), r.ratio)
        goals.measured(Goal(f"{r.runner} {r.command}: rows and stages identical", ">=", 1, "", 0),
                       float(r.identical))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({
        "date": datetime.datetime.now().isoformat(timespec="seconds"), "cpus": os.cpu_count(),
        "articles": corpus.articles, "blog_files": corpus.blog_files, "kill_at": args.kill_at,
        "results": [{**asdict(r), "ratio": r.ratio} for r in results],
        "goals": [line for _, line in goals.lines]}, indent=2) + "\n", encoding="utf-8")
    print(f"results: {args.json}")
    sys.exit(conclude(goals, args.check))


if __name__ == "__main__":
    main()
