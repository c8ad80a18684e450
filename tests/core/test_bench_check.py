"""`--check` of the `make bench` scripts: the goal lines and the exit status (tests/bench_common.py),
on hand-made figures (the measurements of docs/benchmarks.md, not a bench run)."""
from __future__ import annotations

import argparse
import io

import pytest

from tests.bench_common import Goal, GoalCheck, add_check_option, conclude, n_rounds


def report(goals: GoalCheck) -> tuple[int, list[str]]:
    out = io.StringIO()
    status = goals.report(out)
    return status, out.getvalue().splitlines()


def test_met_goals_exit_0_with_a_line_each():
    goals = GoalCheck()
    assert goals.measured(Goal("Cosmos QA stage 1 / bare senter, wall, medians of 3 rounds", "<=", 4.0, "x"), 3.44)
    assert goals.measured(Goal("csdata --help, median of 5 runs", "<", 0.5, " s", digits=3), 0.082)
    assert report(goals) == (0, [
        "--check:",
        "  Cosmos QA stage 1 / bare senter, wall, medians of 3 rounds: 3.44x (goal <= 4x) PASS",
        "  csdata --help, median of 5 runs: 0.082 s (goal < 0.5 s) PASS",
        "--check: 2 of 2 goals met",
    ])


def test_a_missed_goal_exits_1_and_says_which():
    goals = GoalCheck()
    assert goals.measured(Goal("variant cold / --annotations, wall", ">=", 10.0, "x", digits=1), 12.9)
    assert not goals.measured(Goal("2 / 1 workers at 360 articles, wall, median of 3 rounds", ">=", 1.8, "x"),
                              1.73)
    assert report(goals) == (1, [
        "--check:",
        "  variant cold / --annotations, wall: 12.9x (goal >= 10x) PASS",
        "  2 / 1 workers at 360 articles, wall, median of 3 rounds: 1.73x (goal >= 1.8x) MISS",
        "--check: 1 of 2 goals met",
    ])


def test_a_part_without_a_figure_is_a_miss_and_a_skipped_part_is_not():
    failed = GoalCheck()
    failed.failed(Goal("2 / 1 workers at 360 articles, wall, median of 3 rounds", ">=", 1.8, "x"),
                  "no round succeeded")
    assert report(failed) == (1, [
        "--check:",
        "  2 / 1 workers at 360 articles, wall, median of 3 rounds: no measurement, no round succeeded "
        "(goal >= 1.8x) MISS",
        "--check: 0 of 1 goals met",
    ])
    skipped = GoalCheck()
    skipped.skipped(Goal("stages 1-2 / bare nlp.pipe, CPU, medians of 3 rounds", ">=", 0.95), "--no-ratio")
    skipped.measured(Goal("peak RSS 10x / 1x input, in process", "<=", 1.2, "x"), 1.16)
    assert report(skipped) == (0, [
        "--check:",
        "  stages 1-2 / bare nlp.pipe, CPU, medians of 3 rounds: not run, --no-ratio (goal >= 0.95) SKIP",
        "  peak RSS 10x / 1x input, in process: 1.16x (goal <= 1.2x) PASS",
        "--check: 1 of 1 goals met",
    ])


def test_nothing_measured_says_so_and_exits_0():
    assert report(GoalCheck()) == (0, ["--check:", "--check: no goals measured"])
    only_skipped = GoalCheck()
    only_skipped.skipped(Goal("peak RSS last / first --scale, each configuration", "<=", 1.2, "x"),
                         "--no-scaling")
    assert report(only_skipped) == (0, [
        "--check:",
        "  peak RSS last / first --scale, each configuration: not run, --no-scaling (goal <= 1.2x) SKIP",
        "--check: no goals measured",
    ])


@pytest.mark.parametrize(("op", "value", "met"), [
    (">=", 0.95, True), (">=", 0.94, False),   # at the target: met
    ("<=", 4.0, True), ("<=", 4.01, False),
    ("<", 0.5, False), ("<", 0.499, True),      # `< 0.5 s`: the target itself misses
])
def test_the_goal_boundaries(op, value, met):
    target = {">=": 0.95, "<=": 4.0, "<": 0.5}[op]
    assert Goal("g", op, target).met(value) is met


def test_the_comparison_uses_the_unrounded_figure():
    goals = GoalCheck()
    goals.measured(Goal("stages 1-2 / bare nlp.pipe, wall, medians of 3 rounds", ">=", 0.95), 0.949)
    assert report(goals) == (1, [
        "--check:",
        "  stages 1-2 / bare nlp.pipe, wall, medians of 3 rounds: 0.95 (goal >= 0.95) MISS",
        "--check: 0 of 1 goals met",
    ])


def test_an_unknown_comparison_is_refused():
    with pytest.raises(ValueError, match="op must be one of"):
        Goal("g", ">", 1.0)


def test_without_check_a_miss_prints_nothing_and_exits_0(capsys):
    goals = GoalCheck()
    goals.measured(Goal("Flink cluster / in process (2 workers), wall, medians of 1 rounds", "<=", 2.0, "x"), 2.3)
    assert conclude(goals, check=False) == 0
    assert capsys.readouterr().out == ""
    assert conclude(goals, check=True) == 1
    assert capsys.readouterr().out.splitlines() == [
        "--check:",
        "  Flink cluster / in process (2 workers), wall, medians of 1 rounds: 2.30x (goal <= 2x) MISS",
        "--check: 0 of 1 goals met",
    ]


def test_the_check_option():
    parser = argparse.ArgumentParser()
    parser.add_argument("samples", nargs="?", default="default")
    add_check_option(parser)
    assert parser.parse_args([]).check is False
    assert vars(parser.parse_args(["--check", "dir"])) == {"samples": "dir", "check": True}


def test_rounds_in_a_goal_name():
    assert (n_rounds(1), n_rounds(3)) == ("1 round", "3 rounds")
