"""Time `csdata protoqa score` on the real dev predictions against the official evaluator.

Needs ../shared/samples/protoqa (targets, predictions, reference_scores with the official
run's `seconds`). Each similarity runs in a fresh process, so the WordNet time includes
loading WordNet, as the official run's does; Python imports are reported apart.
Then times the WHOLE command, ``python -m pipeline.cli protoqa score --similarity wordnet``,
as a subprocess: cold (empty WordNet index cache, so the index is built from NLTK) and warm
(cache present), beside the official evaluator's recorded time (it is not run here).
Usage: .venv/bin/python tests/bench_protoqa.py [SAMPLES_DIR]
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT.parent / "shared" / "samples" / "protoqa"

CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
sys.path.insert(0, sys.argv[1])
from transforms.protoqa import metric as pm
from transforms.protoqa import wordnet as pw
import nltk.tokenize.destructive  # noqa: F401  (import cost, reported apart)
t1 = time.perf_counter()
targets = pm.load_targets(sys.argv[2]); predictions = pm.load_predictions(sys.argv[3])
means, _ = pm.evaluate(targets, predictions, sys.argv[4])
t2 = time.perf_counter()
print(json.dumps({"imports": t1 - t0, "seconds": t2 - t1, "means": means}))
"""


def main() -> int:
    refs = SAMPLES / "reference_scores"
    if not refs.exists():
        print(f"no reference scores under {refs}; nothing to benchmark")
        return 1
    print(f"{'similarity':<12}{'imports s':>10}{'ours s':>10}{'official s':>12}{'speed-up':>10}"
          f"{'max |diff|':>12}")
    for similarity, name in (("exact", "exact_match"), ("wordnet", "wordnet")):
        reference = json.loads((refs / f"iesl_gpt2finetuned.{name}.json").read_text())
        out = subprocess.run([sys.executable, "-c", CHILD, str(ROOT),
                              str(SAMPLES / reference["targets"]),
                              str(SAMPLES / reference["predictions"]), similarity],
                             check=True, capture_output=True, text=True).stdout
        run = json.loads(out.strip().splitlines()[-1])
        diff = max(abs(run["means"][k] - v["mean"]) for k, v in reference["metrics"].items())
        print(f"{similarity:<12}{run['imports']:>10.2f}{run['seconds']:>10.3f}"
              f"{reference['seconds']:>12.1f}{reference['seconds'] / run['seconds']:>9.0f}x"
              f"{diff:>12.1e}")
    whole_command(refs)
    return 0


def _run_cli(reference: dict, cache_dir: str) -> float:
    env = dict(os.environ, CSDATA_CACHE_DIR=cache_dir)
    argv = [sys.executable, "-m", "pipeline.cli", "protoqa", "score",
            "--targets", str(SAMPLES / reference["targets"]),
            "--predictions", str(SAMPLES / reference["predictions"]), "--similarity", "wordnet"]
    start = time.perf_counter()
    subprocess.run(argv, cwd=ROOT, env=env, check=True, capture_output=True, text=True)
    return time.perf_counter() - start


def whole_command(refs: Path, warm_runs: int = 3) -> None:
    """`csdata protoqa score --similarity wordnet` end to end, cold and warm index cache."""
    reference = json.loads((refs / "iesl_gpt2finetuned.wordnet.json").read_text())
    official = reference["seconds"]
    with tempfile.TemporaryDirectory(prefix="csdata-bench-cache-") as cache_dir:
        cold = _run_cli(reference, cache_dir)
        warm = min(_run_cli(reference, cache_dir) for _ in range(warm_runs))
    print("\nwhole command `python -m pipeline.cli protoqa score --similarity wordnet`:")
    print(f"{'run':<12}{'ours s':>10}{'official s':>12}{'speed-up':>10}")
    for name, seconds in (("cold cache", cold), (f"warm (min{warm_runs})", warm)):
        print(f"{name:<12}{seconds:>10.2f}{official:>12.1f}{official / seconds:>9.0f}x")


if __name__ == "__main__":
    sys.exit(main())
