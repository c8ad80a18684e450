"""`make bench`: a ReCoRD variant generated cold and from stored annotations (`--annotations`).

On the real CNN/DM samples beside the checkout (else the repo's stories), in process: one
`record annotate` run, then the same variant spec (default: a passage-split change and a
stage-2 threshold change, `--set passage.min_tokens=120 --set query.ngram=4`) generated cold
(model loaded and run) and from the annotations: one untimed warm-up run of each kind, then
`--rounds` rounds of one cold and one warm run each, interleaved so that both kinds see the same
load on a shared machine; the medians of wall-clock and CPU seconds (this process: the in-process
runner's work) are shown. Prints the speed-up (target >= 10x), how many annotations were reused,
and whether both runs wrote the same rows (they must: the script exits 1 when they differ).

    .venv/bin/python tests/bench_record_variants.py [--input PATTERN ...] [--set KEY=VALUE ...] [--rounds 3]
        [--check]

`--check` ends with one line per goal (the speed-up by wall clock and by CPU time, each the ratio
of the medians; measured, goal, PASS/MISS) and exits 1 when one was missed.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from bench_common import Goal, GoalCheck, add_check_option, conclude, n_rounds  # noqa: E402
from bench_record import default_inputs  # noqa: E402

from pipeline.cli.main import quiet_beam_import_warning  # noqa: E402

quiet_beam_import_warning()

from apache_beam.options.pipeline_options import PipelineOptions  # noqa: E402

from data_specs import RecordSpec, load_spec  # noqa: E402
from pipeline.graphs.record import run_annotate, run_record  # noqa: E402
from transforms.core.io.tables import read_summary, read_table  # noqa: E402

VARIANT = ["passage.min_tokens=120", "query.ngram=4"]
TABLES = ("passages", "queries", "rejects")
TARGET = 10.0   # cold / --annotations, by wall clock and by CPU time


def options() -> PipelineOptions:
    return PipelineOptions(["--runner=apache_beam.runners.portability.fn_api_runner.FnApiRunner"])


def timed(run) -> tuple[float, float, str]:
    """(wall seconds, CPU seconds of this process, output directory) of one run."""
    out = tempfile.mkdtemp(prefix="bench-variants-")
    start, cpu = time.perf_counter(), time.process_time()
    run(out)
    return time.perf_counter() - start, time.process_time() - cpu, out


def rows(run_dir: str, table: str) -> list[dict]:
    found = read_table(run_dir, table).to_pylist()
    return sorted(found, key=lambda row: sorted((k, repr(v)) for k, v in row.items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--input", action="append")
    parser.add_argument("--set", dest="overrides", action="append",
                        help=f"the variant's spec overrides (default: {' '.join(VARIANT)})")
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds; the median is shown")
    add_check_option(parser)
    args = parser.parse_args()
    inputs = args.input or default_inputs()
    overrides = args.overrides or VARIANT
    spec: RecordSpec = load_spec("record")
    variant: RecordSpec = load_spec("record", overrides)
    print(f"inputs: {', '.join(os.path.relpath(i) for i in inputs)}")
    print(f"variant: --set {' --set '.join(overrides)}")

    def annotate(out: str) -> None:
        run_annotate(spec, inputs, out, options=options())

    annotations = timed(annotate)[2]   # warm-up: the first run in a process pays for imports
    annotate_runs = [timed(annotate) for _ in range(args.rounds)]

    def cold(out: str) -> None:
        run_record(variant, inputs, out, options=options())

    def reuse(out: str) -> None:
        run_record(variant, inputs, out, options=options(), annotations=annotations)

    timed(cold)
    timed(reuse)
    cold_runs, reuse_runs = [], []
    for _ in range(args.rounds):
        cold_runs.append(timed(cold))
        reuse_runs.append(timed(reuse))
    medians = {name: (statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs))
               for name, runs in (("annotate", annotate_runs), ("cold", cold_runs), ("reuse", reuse_runs))}

    summary = read_summary(os.path.join(reuse_runs[0][2], "summary.json"))
    entry = summary["annotations"]
    same = all(rows(cold_runs[0][2], t) == rows(reuse_runs[0][2], t) for t in TABLES)
    counts = ", ".join(f"{t} {len(read_table(reuse_runs[0][2], t))}" for t in TABLES)
    print(f"articles read: {summary['stages']['read']['kept']}; "
          f"annotated: {summary['stages']['annotate']['in']}; rows: {counts}")
    print(f"{'':34}{'wall s':>9}{'CPU s':>9}")
    for name, title in (("annotate", "record annotate"), ("cold", "generate variant, cold"),
                        ("reuse", "generate variant, --annotations")):
        wall, cpu = medians[name]
        print(f"{title:<34}{wall:9.2f}{cpu:9.2f}")
    print(f"reused {entry['reused']} of {entry['articles']} annotations")
    (cold_wall, cold_cpu), (reuse_wall, reuse_cpu) = medians["cold"], medians["reuse"]
    print(f"speed-up (cold / --annotations): {cold_wall / reuse_wall:.1f}x wall, "
          f"{cold_cpu / reuse_cpu:.1f}x CPU   (target >= {TARGET:g}x)")
    print(f"rows identical to the cold run: {'yes' if same else 'NO'}")
    goals = GoalCheck()
    for what, cold_s, reuse_s in (("wall", cold_wall, reuse_wall), ("CPU", cold_cpu, reuse_cpu)):
        goals.measured(Goal(f"ReCoRD variant cold / from --annotations, {what}, medians of "
                            f"{n_rounds(args.rounds)}", ">=", TARGET, "x", digits=1), cold_s / reuse_s)
    status = conclude(goals, args.check)
    sys.exit(1 if not same else status)


if __name__ == "__main__":
    main()
