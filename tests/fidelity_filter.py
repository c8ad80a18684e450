"""Strength of the machine filter's readers on real news (a measurement, not a test).

Paper §3.3 drops every triple that SAN, trained in five-fold cross-validation, answers: SAN
answered 68 % of 770k triples, trained on about 616k triples a fold. This script generates the
triples of the given CNN/DM articles once (`csdata record generate`), runs `csdata record filter`
on them with each reader, and prints per fold, side by side: the triples, the triples the fold's
model was trained on, the random baseline and each reader's answered rate; then each reader's
wall time and peak resident memory (the filter runs as a child process, measured with `wait4`).

    .venv/bin/python tests/fidelity_filter.py ../shared/samples/cnndm/stories \\
        ../shared/samples/cnndm/hf_train_sample.jsonl

With the default readers (lexical, cross-encoder) this takes about 20 minutes on 2 CPU cores;
`--set filter.readers.cross-encoder.max_steps=20` gives a quick, weaker look.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Sequence

PAPER_ANSWERED = 0.68          # SAN, paper §3.3
PAPER_TRAINING = 616_000       # triples a fold: 4/5 of 770k


def csdata(*argv: str) -> list[str]:
    """The command line of `csdata argv` with this interpreter."""
    return [sys.executable, "-m", "pipeline.cli.main", *argv]


def run_measured(argv: list[str]) -> tuple[float, float]:
    """Run a child to its end; (wall seconds, its peak resident memory in GB). Exit 1 if it fails."""
    started = time.monotonic()
    child = subprocess.Popen(argv, cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                             stdout=subprocess.DEVNULL)     # its own summary: in the run's files
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode:
        sys.exit(f"fidelity_filter: `{' '.join(argv[3:])}` failed (exit {child.returncode})")
    return time.monotonic() - started, usage.ru_maxrss / 2**20


def side_by_side(summaries: dict[str, dict]) -> list[str]:
    """The per-fold table, one answered-rate column per reader."""
    names = list(summaries)
    first = summaries[names[0]]
    head = "| fold | triples | trained on | random | " + " | ".join(f"{n} answered" for n in names) + " |"
    lines = [head, "|" + "---|" * (4 + len(names))]
    per_reader = {n: {f["fold"]: f for f in s["folds"]} for n, s in summaries.items()}
    for fold in first["folds"]:
        k = fold["fold"]
        rates = " | ".join(f"{per_reader[n][k]['answered_rate']:.1%}" for n in names)
        lines.append(f"| {k} | {fold['triples']:,} | {fold['training_triples']:,} | "
                     f"{fold['random_baseline']:.1%} | {rates} |")
    rates = " | ".join(f"{summaries[n]['answered_rate']:.1%}" for n in names)
    lines.append(f"| all | {first['in']:,} | | {first['random_baseline']:.1%} | {rates} |")
    lines.append(f"| paper (SAN) | 770k | about {PAPER_TRAINING:,} | | {PAPER_ANSWERED:.0%} |")
    return lines


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("inputs", nargs="+", help="CNN/DM story folders, .tgz or .jsonl files")
    parser.add_argument("--readers", default="lexical,cross-encoder",
                        help="comma-separated readers to compare (default: %(default)s)")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a spec override for the filter runs (repeatable)")
    parser.add_argument("--work", help="folder for the runs (default: a temporary one, removed)")
    parser.add_argument("--json", help="also write the figures to this JSON file")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="csdata-filter-") as temporary:
        work = args.work or temporary
        generated = f"{work}/generated"
        inputs = [a for path in args.inputs for a in ("--input", path)]
        run_measured(csdata("-q", "record", "generate", *inputs, "--output", generated))
        summaries, costs = {}, {}
        overrides = [a for item in args.set for a in ("--set", item)]
        for reader in args.readers.split(","):
            out = f"{work}/filter-{reader.replace(':', '_')}"
            print(f"fidelity_filter: {reader} ...", file=sys.stderr, flush=True)
            costs[reader] = run_measured(csdata("-q", "record", "filter", generated, "--output", out,
                                                "--reader", reader, "--folds", str(args.folds), *overrides))
            with open(f"{out}/summary.json", encoding="utf-8") as handle:
                summaries[reader] = json.load(handle)
    print(f"Machine filter on {summaries[next(iter(summaries))]['in']:,} triples, {args.folds} folds "
          f"({os.cpu_count()} CPU cores)\n")
    print("\n".join(side_by_side(summaries)))
    print()
    for reader, (seconds, peak) in costs.items():
        print(f"{reader}: {seconds / 60:.1f} min, peak resident memory {peak:.2f} GB")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump({"summaries": summaries,
                       "costs": {r: {"seconds": s, "peak_gb": g} for r, (s, g) in costs.items()}},
                      handle, indent=1)


if __name__ == "__main__":
    main()
