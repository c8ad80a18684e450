"""What the `make bench` scripts share: the note that the real samples are missing, and `--check`.

`--check` (for use by hand, not in CI) makes a script end with one line per goal it measured and
exit 1 when one was missed. A script records each goal's measurement in a `GoalCheck` whether
or not `--check` was given, and ends with `sys.exit(conclude(goals, args.check))`: without
`--check` nothing more is printed and the exit status stays 0, as before.
"""
from __future__ import annotations

import argparse
import operator
import os
import sys
from dataclasses import dataclass
from typing import Callable, Optional, TextIO


def note_fallback(shared: str) -> None:
    """Say on stderr that the real samples are not at `shared`, so a bench runs on the repo's own
    inputs, whose figures say nothing about real data (a `git worktree` outside the checkout's
    folder, for one, has no `../shared` beside it)."""
    print(f"bench: no samples at {os.path.normpath(shared)}; running on the repo's own inputs, "
          f"whose figures are not comparable with the README's", file=sys.stderr)


_OPS: dict[str, Callable[[float, float], bool]] = {">=": operator.ge, "<=": operator.le, "<": operator.lt}


@dataclass(frozen=True)
class Goal:
    """A goal: the measurement called `name` must be `op` (`>=`, `<=` or `<`) `target`. `unit`
    follows each number as printed (`x`, ` s`); the measurement is printed with `digits`
    decimals, the target as written. The comparison uses the unrounded measurement."""
    name: str
    op: str
    target: float
    unit: str = ""
    digits: int = 2

    def __post_init__(self) -> None:
        if self.op not in _OPS:
            raise ValueError(f"goal {self.name!r}: op must be one of {', '.join(_OPS)}, not {self.op!r}")

    def met(self, value: float) -> bool:
        return _OPS[self.op](value, self.target)

    def wanted(self) -> str:
        """`goal >= 0.95x`: the goal as printed."""
        return f"goal {self.op} {self.target:g}{self.unit}"


class GoalCheck:
    """The goals a run measured, in order: met (PASS), missed (MISS: below the goal, or the part
    that measures it ran and failed) or not run (SKIP: an option left that part out; no miss)."""

    def __init__(self) -> None:
        self.lines: list[tuple[str, str]] = []   # (verdict, line)

    def measured(self, goal: Goal, value: float) -> bool:
        """Record `value` against `goal`; whether it met it."""
        met = goal.met(value)
        verdict = "PASS" if met else "MISS"
        self.lines.append((verdict, f"{goal.name}: {value:.{goal.digits}f}{goal.unit} ({goal.wanted()}) {verdict}"))
        return met

    def failed(self, goal: Goal, why: str) -> None:
        """The part that measures `goal` ran but gave no figure (`why`): a miss."""
        self.lines.append(("MISS", f"{goal.name}: no measurement, {why} ({goal.wanted()}) MISS"))

    def skipped(self, goal: Goal, why: str) -> None:
        """The part that measures `goal` did not run (`why`: the option that left it out)."""
        self.lines.append(("SKIP", f"{goal.name}: not run, {why} ({goal.wanted()}) SKIP"))

    def report(self, out: Optional[TextIO] = None) -> int:
        """Print one line per goal and a closing count to `out` (stdout); 1 when a goal was
        missed, else 0."""
        out = out or sys.stdout
        print("--check:", file=out)
        for _, line in self.lines:
            print(f"  {line}", file=out)
        checked = [verdict for verdict, _ in self.lines if verdict != "SKIP"]
        missed = checked.count("MISS")
        if not checked:
            print("--check: no goals measured", file=out)
        else:
            print(f"--check: {len(checked) - missed} of {len(checked)} goals met", file=out)
        return 1 if missed else 0


def sdk_worker(command_line: str) -> bool:
    """Whether a process's command line is a Python SDK worker: Beam's (`sdk_worker_main`) or
    csdata's local runner's (`pipeline.engine.local_worker`), not the shell that starts one."""
    return (("sdk_worker_main" in command_line or "pipeline.engine.local_worker" in command_line)
            and not command_line.startswith("/bin/sh"))


def n_rounds(n: int) -> str:
    """`1 round`, `3 rounds`: for a goal's name."""
    return f"{n} round{'' if n == 1 else 's'}"


def add_check_option(parser: argparse.ArgumentParser) -> None:
    """`--check` on a bench script's parser (`args.check`)."""
    parser.add_argument("--check", action="store_true",
                        help="end with one line per goal (measured, goal, PASS/MISS) and exit 1 "
                             "when a goal was missed (for use by hand; noisy on a shared machine)")


def conclude(goals: GoalCheck, check: bool, out: Optional[TextIO] = None) -> int:
    """The script's exit status: with `check`, `goals.report(out)`'s; without, 0 and nothing printed."""
    return goals.report(out) if check else 0
