"""Time `csdata protoqa score` on the real dev predictions against the official evaluator, and
`csdata --help`.

Needs ../shared/samples/protoqa (targets, predictions, and reference_scores with the official
run's `seconds`). Three parts, all in one run:

1. Scoring alone, per similarity, each in a fresh process, so the WordNet time includes loading
   the WordNet index, as the official run's time includes loading WordNet. Python imports
   (scipy's solver included) are reported separately.
2. The WHOLE command, `csdata protoqa score --similarity wordnet`, as a subprocess: cold (an
   empty WordNet index cache, i.e. a first use without make's install step, so the index is
   built from the WordNet index files) and warm (cache present, min of
   3). It is compared with the official evaluator on the same files. When
   `protoqa_evaluator` (iesl/protoqa-evaluator) is installed, the official evaluator runs here,
   in this run. Otherwise the bench uses the recorded time of the official run, and labels it
   "recorded". The official code needs NLTK's Punkt model, which cannot be installed offline.
3. `csdata --help` wall time, median of 5 runs.

Goals: the whole command at least 100x faster than the official evaluator, cold and warm; `csdata
--help` under 0.5 s.

Usage: .venv/bin/python tests/bench_protoqa.py [SAMPLES_DIR] [--check]

`--check` ends with one line per goal (measured, goal, PASS/MISS) and exits 1 when one was missed.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from bench_common import Goal, GoalCheck, add_check_option, conclude  # noqa: E402

SAMPLES = ROOT.parent / "shared" / "samples" / "protoqa"
SPEEDUP_GOAL = 100.0   # the whole command against the official evaluator
HELP_GOAL = 0.5        # seconds, `csdata --help`
SCRIPT = Path(sys.executable).with_name("csdata")   # the installed console script, if any
CSDATA = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "pipeline.cli.main"]

CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
sys.path.insert(0, sys.argv[1])
from transforms.protoqa import metric as pm
from transforms.protoqa import wordnet as pw
import scipy.optimize  # noqa: F401  (the solver metric.py imports on first use: an import cost)
t1 = time.perf_counter()
targets = pm.load_targets(sys.argv[2]); predictions = pm.load_predictions(sys.argv[3])
means, _ = pm.evaluate(targets, predictions, sys.argv[4])
t2 = time.perf_counter()
print(json.dumps({"imports": t1 - t0, "seconds": t2 - t1, "means": means}))
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("samples", nargs="?", type=Path, default=SAMPLES,
                        help="the ProtoQA samples folder (targets, predictions, reference_scores; "
                             "default: %(default)s)")
    add_check_option(parser)
    args = parser.parse_args(argv)
    samples: Path = args.samples
    refs = samples / "reference_scores"
    if not refs.exists():
        print(f"no reference scores under {refs}; nothing to benchmark")
        return 1
    print(f"{'similarity':<12}{'imports s':>10}{'ours s':>10}{'official s':>12}{'speed-up':>10}"
          f"{'max |diff|':>12}")
    for similarity, name in (("exact", "exact_match"), ("wordnet", "wordnet")):
        reference = json.loads((refs / f"iesl_gpt2finetuned.{name}.json").read_text())
        out = subprocess.run([sys.executable, "-c", CHILD, str(ROOT),
                              str(samples / reference["targets"]),
                              str(samples / reference["predictions"]), similarity],
                             check=True, capture_output=True, text=True).stdout
        run = json.loads(out.strip().splitlines()[-1])
        diff = max(abs(run["means"][k] - v["mean"]) for k, v in reference["metrics"].items())
        print(f"{similarity:<12}{run['imports']:>10.2f}{run['seconds']:>10.3f}"
              f"{reference['seconds']:>12.1f}{reference['seconds'] / run['seconds']:>9.0f}x"
              f"{diff:>12.1e}")
    print("(official s: the recorded official run)")
    goals = GoalCheck()
    whole_command(samples, refs, goals)
    help_time(goals)
    return conclude(goals, args.check)


def _timed(argv: list[str], env: dict[str, str] | None = None, check: bool = True) -> tuple[float, int, str]:
    """(wall seconds, exit code, last stderr line) of one subprocess."""
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=ROOT, env=env, check=check, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    return seconds, done.returncode, (done.stderr.strip().splitlines() or [""])[-1]


def official_seconds(samples: Path, reference: dict) -> tuple[float, str]:
    """The official evaluator's wall time on the same files: run now when it is installed,
    else (or when it fails) the time recorded with the reference scores."""
    if importlib.util.find_spec("protoqa_evaluator") is None:
        return reference["seconds"], "recorded (protoqa_evaluator not installed)"
    argv = [sys.executable, "-m", "protoqa_evaluator", "evaluate", str(samples / reference["targets"]),
            str(samples / reference["predictions"]), "--similarity_function", "wordnet"]
    print("running the official evaluator (minutes) ...", flush=True)
    seconds, code, last = _timed(argv, check=False)
    if code != 0:
        return reference["seconds"], f"recorded (the official evaluator failed here: {last})"
    return seconds, "run now"


def whole_command(samples: Path, refs: Path, goals: GoalCheck, warm_runs: int = 3) -> None:
    """`csdata protoqa score --similarity wordnet` end to end, cold and warm index cache; the
    speed-ups over the official evaluator go to `goals`."""
    reference = json.loads((refs / "iesl_gpt2finetuned.wordnet.json").read_text())
    argv = [*CSDATA, "protoqa", "score", "--targets", str(samples / reference["targets"]),
            "--predictions", str(samples / reference["predictions"]), "--similarity", "wordnet"]
    with tempfile.TemporaryDirectory(prefix="csdata-bench-cache-") as cache_dir:
        env = dict(os.environ, CSDATA_CACHE_DIR=cache_dir)
        cold = _timed(argv, env)[0]
        warm = min(_timed(argv, env)[0] for _ in range(warm_runs))
    official, how = official_seconds(samples, reference)
    print(f"\nwhole command `{' '.join(Path(a).name if i == 0 else a for i, a in enumerate(CSDATA))} "
          "protoqa score --similarity wordnet`:")
    print(f"{'run':<14}{'ours s':>10}{'official s':>12}{'speed-up':>10}")
    for name, seconds in (("cold cache", cold), (f"warm (min {warm_runs})", warm)):
        print(f"{name:<14}{seconds:>10.2f}{official:>12.1f}{official / seconds:>9.0f}x")
    print(f"(official s: {how})")
    official_how = "recorded" if how.startswith("recorded") else how
    for name, seconds in (("cold cache, one run", cold), (f"warm cache, min of {warm_runs} runs", warm)):
        goals.measured(Goal(f"protoqa score --similarity wordnet, speed-up over the official evaluator "
                            f"({official_how}), {name}", ">=", SPEEDUP_GOAL, "x", digits=0), official / seconds)


def help_time(goals: GoalCheck, runs: int = 5) -> None:
    """`csdata --help` wall time: median of `runs` runs, after one warm-up run (to `goals`)."""
    argv = [*CSDATA, "--help"]
    _timed(argv)
    times = [_timed(argv)[0] for _ in range(runs)]
    print(f"\n`csdata --help`: median {statistics.median(times):.3f} s of {runs} runs "
          f"(min {min(times):.3f}, max {max(times):.3f}; target < {HELP_GOAL:g} s)")
    goals.measured(Goal(f"csdata --help, median of {runs} runs", "<", HELP_GOAL, " s", digits=3),
                   statistics.median(times))


if __name__ == "__main__":
    sys.exit(main())
