"""The crash-point matrix: `record generate` ended on purpose at every named step of the output
protocol, the checkpoint, the model memo and the restore (`transforms.core.resume.crash`), over an output
that holds two committed runs. After the crash the output is the previous run or the new one,
whole (`csdata stats` reads it); after a rerun it is a clean run's rows and accounting, with only
the committed attempt and the one it replaced left. The points are found in the source, so a new
step without a case here fails `test_every_crash_point_has_a_case`."""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.cli.main import main
from pipeline.outputs.paths import RUN_MARKER, OutputPaths
from tests.conftest import DATA, ROOT, parquet_rows
from transforms.core.resume.crash import CRASH_ENV

pytestmark = pytest.mark.slow

GENERATE = ["record", "generate", "--input", str(DATA / "cnn"), "--set", "output.resume_every=2"]
OLDEST, PREVIOUS = ["--set", "passage.min_tokens=70"], ["--set", "passage.min_tokens=60"]
KILLED = -signal.SIGKILL

# point -> what the output holds right after the crash: the previous run or the new one.
CASES = {
    "begin.leased": "previous",
    "begin.attempts_removed": "previous",
    "write.temp_written": "previous",
    "checkpoint.part_committed": "previous",
    "checkpoint.done": "previous",
    "memo.piece_written": "previous",
    "commit.marked": "previous",
    "commit.linked": "previous",
    "commit.swapped": "new",
    "commit.committed": "new",
    "cleanup.remove_attempt": "new",
    "cleanup.remove_work": "new",
}
# Points reached only on a second crash: a restore runs only once a checkpoint is done.
AFTER = {"restore.checked": ("checkpoint.done", "previous")}
# Points of an object store only (a plain command's local files uploaded): tests/s3.
REMOTE_ONLY = {"commit.uploaded"}


def source_points() -> set[str]:
    found = set()
    for package in ("pipeline", "transforms"):
        for path in (ROOT / package).rglob("*.py"):
            found.update(re.findall(r'^\s*crash_point\("([^"]+)"\)', path.read_text(), re.M))
    return found


def test_every_crash_point_has_a_case():
    assert source_points() == set(CASES) | set(AFTER) | REMOTE_ONLY


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """An output of two committed runs (OLDEST, then PREVIOUS), and a clean run of GENERATE."""
    base = tmp_path_factory.mktemp("crash")
    history = base / "history"
    assert main(["-q", *GENERATE, *OLDEST, "--output", str(history)]) == 0
    assert main(["-q", *GENERATE, *PREVIOUS, "--output", str(history)]) == 0
    clean = base / "clean"
    assert main(["-q", *GENERATE, "--output", str(clean)]) == 0
    assert parquet_rows(history) != parquet_rows(clean)
    return {"history": history, "clean": clean}


def copy_output(source: Path, target: Path) -> None:
    """A copy of an output: its root (attempts, lease) and its link."""
    shutil.copytree(OutputPaths(str(source)).root, OutputPaths(str(target)).root, symlinks=True)
    attempt = OutputPaths(str(target)).attempt(Path(os.readlink(source)).name)
    os.symlink(os.path.relpath(attempt, target.parent), target)


def crash(output: Path, point: str) -> subprocess.CompletedProcess:
    env = {**os.environ, CRASH_ENV: point}
    # Started as from a terminal: a suite run as a background job hands its children SIGINT
    # ignored, and the CLI then leaves Ctrl-C alone.
    return subprocess.run([sys.executable, "-m", "pipeline.cli.main", "-q", *GENERATE, "--output", str(output)],
                          cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=300,
                          preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def attempts(output: Path) -> list[str]:
    return sorted(p.name for p in Path(OutputPaths(str(output)).attempts).iterdir())


def assert_whole(output: Path, runs: dict[str, Path], which: str) -> None:
    """The output is run `which` ("previous" or "new"), every file its marker names there."""
    expected = runs["history"] if which == "previous" else runs["clean"]
    assert parquet_rows(output) == parquet_rows(expected)
    marker = json.loads((output / RUN_MARKER).read_text())
    assert sorted(str(p.relative_to(output)) for p in output.rglob("*")
                  if p.is_file() and p.name != RUN_MARKER) == marker["files"]
    assert main(["stats", str(output)]) == 0


def assert_rerun_is_clean(output: Path, runs: dict[str, Path]) -> None:
    assert main(["-q", *GENERATE, "--output", str(output)]) == 0
    assert parquet_rows(output) == parquet_rows(runs["clean"])
    stages = [json.loads((run / "summary.json").read_text())["stages"] for run in (output, runs["clean"])]
    assert stages[0] == stages[1]
    committed = Path(os.readlink(output)).name
    replaced = json.loads((output / RUN_MARKER).read_text())["replaces"].rsplit("/", 1)[-1]
    assert attempts(output) == sorted({committed, replaced})
    assert not Path(OutputPaths(str(output)).work).exists()


@pytest.mark.parametrize("point", sorted(CASES))
def test_a_kill_at_a_crash_point_leaves_a_whole_output_and_the_rerun_a_clean_one(tmp_path, runs, point, capsys):
    output = tmp_path / "out"
    copy_output(runs["history"], output)
    assert crash(output, point).returncode == KILLED
    capsys.readouterr()
    assert_whole(output, runs, CASES[point])
    assert_rerun_is_clean(output, runs)


@pytest.mark.parametrize("point", sorted(AFTER))
def test_a_kill_during_a_restore_leaves_a_whole_output_and_the_rerun_a_clean_one(tmp_path, runs, point):
    output = tmp_path / "out"
    copy_output(runs["history"], output)
    first, which = AFTER[point]
    assert crash(output, first).returncode == KILLED
    assert crash(output, point).returncode == KILLED
    assert_whole(output, runs, which)
    assert_rerun_is_clean(output, runs)


def test_an_interrupt_held_back_by_the_link_swap_leaves_the_new_output_committed(tmp_path, runs):
    output = tmp_path / "out"
    copy_output(runs["history"], output)
    done = crash(output, "commit.swapped:interrupt")
    assert done.returncode == 130, done.stderr.decode()
    assert done.stderr.decode().splitlines()[-1].startswith(
        f"csdata: interrupted (SIGINT); the new output at {output} is committed"), done.stderr.decode()
    assert_whole(output, runs, "new")
    assert Path(OutputPaths(str(output)).attempt(Path(os.readlink(output)).name)).is_dir()


@pytest.mark.parametrize("point", ["cleanup.remove_attempt", "cleanup.remove_work"])
def test_a_store_error_in_the_cleanup_after_the_commit_is_one_line_and_the_run_succeeds(tmp_path, runs, point):
    output = tmp_path / "out"
    copy_output(runs["history"], output)
    done = crash(output, f"{point}:raise")
    err = done.stderr.decode().strip().splitlines()
    assert done.returncode == 0, err
    assert [line for line in err if "cleanup left" in line] == [
        line for line in err if line.startswith("csdata: the output is committed; the cleanup left 1 folder(s) (")]
    assert any("`csdata clean" in line for line in err), err
    assert_whole(output, runs, "new")
    assert_rerun_is_clean(output, runs)


def test_an_error_before_the_commit_point_keeps_the_previous_output_and_removes_the_attempt(tmp_path, runs):
    output = tmp_path / "out"
    copy_output(runs["history"], output)
    before = attempts(output)
    done = crash(output, "commit.marked:raise")
    assert done.returncode != 0
    assert "previous output kept" in done.stderr.decode()
    assert_whole(output, runs, "previous")
    assert attempts(output) == before


def test_a_restore_that_finds_a_part_done_json_did_not_commit_stops_in_one_line(tmp_path):
    output = tmp_path / "out"
    assert crash(output, "checkpoint.done").returncode == KILLED
    kept = next(Path(OutputPaths(str(output)).work).glob("*/curated/kept"))
    part = sorted(kept.glob("*.part"))[0]
    extra = kept / f"{'a' * 32}-{part.name.rsplit('-', 1)[1]}"   # a part a cancelled job wrote on
    shutil.copy(part, extra)
    shutil.copy(f"{part}.ok", f"{extra}.ok")
    done = subprocess.run([sys.executable, "-m", "pipeline.cli.main", "-q", *GENERATE, "--output", str(output)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    assert len(lines) == 2 and lines[0].startswith("csdata: resuming an interrupted run"), lines
    assert re.match(rf"csdata: error: the checkpoint {kept.parent} does not hold what its done.json committed "
                    rf"\(kept: 2 parts of \d+ elements found, 1 parts of \d+ elements committed\); remove "
                    rf"{kept.parent} to run its stages again", lines[1]), lines
