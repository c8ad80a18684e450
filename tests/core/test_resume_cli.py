"""Resume after SIGKILL, from the command line, in process: a run killed before it stored any
work, mid-way and during its commit is rerun; the rerun says what it reuses, writes the rows and
the accounting of a clean run, and leaves nothing behind but the committed run."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pipeline.cli.main import main
from pipeline.outputs.paths import OutputPaths
from tests.conftest import DATA, ROOT, parquet_rows

pytestmark = pytest.mark.slow

COSMOS = ROOT / "tests" / "data" / "cosmos"
# A piece every 2 model results, so that the small samples leave several pieces mid-run.
SMALL_PIECES = ["--set", "output.resume_every=2"]
COMMANDS = {
    "record": ["record", "generate", *[a for p in ("cnn", "dailymail", "hf_rows.jsonl")
                                      for a in ("--input", str(DATA / p))], *SMALL_PIECES],
    "cosmos": ["cosmos", "paragraphs", "--input", str(COSMOS / "blogs"), "--input",
               str(COSMOS / "stories.jsonl"), *SMALL_PIECES],
}
RESUMING = re.compile(r"^csdata: resuming an interrupted run: (?:.* and )?([\d,]+) model results in [\d,]+ pieces", re.M)


@pytest.fixture(scope="module")
def clean_runs(tmp_path_factory) -> dict[str, Path]:
    """A clean run of each command."""
    runs = {}
    for name, argv in COMMANDS.items():
        output = tmp_path_factory.mktemp("clean") / name
        assert main(["-q", *argv, "--output", str(output)]) == 0
        runs[name] = output
    return runs


def pieces(output: Path) -> list[Path]:
    return sorted(Path(OutputPaths(str(output)).work).rglob("*.pieces"))


def attempts(output: Path) -> list[str]:
    return sorted(p.name for p in Path(OutputPaths(str(output)).attempts).iterdir())


def start(argv: list[str], code: str = "") -> subprocess.Popen:
    """`csdata ARGV` in a fresh interpreter, after running `code` there."""
    script = f"import sys\n{code}\nfrom pipeline.cli.main import main\nsys.exit(main(sys.argv[1:]))"
    return subprocess.Popen([sys.executable, "-c", script, "-q", *argv], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def wait_for(condition, proc: subprocess.Popen, what: str) -> None:
    deadline = time.monotonic() + 120
    while not condition():
        assert proc.poll() is None, f"the run ended before {what}: {proc.stderr.read().decode()[-2000:]}"
        assert time.monotonic() < deadline, f"not {what} within 2 minutes"
        time.sleep(0.02)


def rerun(argv: list[str], output: Path, capsys) -> str:
    assert main([*argv, "--output", str(output)]) == 0
    return capsys.readouterr().err


def assert_like_clean(output: Path, clean: Path) -> None:
    assert parquet_rows(output) == parquet_rows(clean)
    stages = [json.loads((run / "summary.json").read_text())["stages"] for run in (output, clean)]
    assert stages[0] == stages[1]
    # Nothing left behind: the committed attempt alone, no work.
    assert attempts(output) == [Path(os.readlink(output)).name]
    assert not Path(OutputPaths(str(output)).work).exists()


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_killed_mid_way_the_rerun_reuses_the_stored_work(tmp_path, capsys, clean_runs, name):
    output = tmp_path / "out"
    argv = COMMANDS[name]
    proc = start([*argv, "--output", str(output)])
    wait_for(lambda: len(pieces(output)) >= 2, proc, "two pieces were stored")
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    stored = sum(int(p.name.rsplit("-", 1)[1].split(".")[0]) for p in pieces(output))
    err = rerun(argv, output, capsys)
    found = RESUMING.search(err)
    assert found, err
    assert int(found.group(1).replace(",", "")) == stored
    if name == "record":   # the curated splits are kept before any model result: 12 splits, and
        # the rejects of one duplicate id, one near duplicate and one passage too short
        assert "the curated stages' output (12 records, 3 rejects) and " in found.group(0), err
    assert_like_clean(output, clean_runs[name])


def test_killed_before_it_stored_anything_the_rerun_starts_over(tmp_path, capsys, clean_runs):
    output = tmp_path / "out"
    argv = COMMANDS["record"]
    proc = start([*argv, "--output", str(output)])
    wait_for(lambda: Path(OutputPaths(str(output)).attempts).is_dir() and attempts(output), proc,
             "the attempt was made")
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not pieces(output)
    err = rerun(argv, output, capsys)
    assert not RESUMING.search(err), err
    assert_like_clean(output, clean_runs["record"])


def test_killed_during_its_commit_the_rerun_reuses_all_of_it(tmp_path, capsys, clean_runs):
    output = tmp_path / "out"
    argv = COMMANDS["record"]
    # Killed once its attempt holds the finished run and its marker, before the link names it.
    die = ("import os, signal\nimport pipeline.outputs.protocol as protocol\n"
           "protocol._swap_link = lambda *a: os.kill(os.getpid(), signal.SIGKILL)")
    proc = start([*argv, "--output", str(output)], die)
    assert proc.wait(timeout=300) == -signal.SIGKILL
    assert not output.exists() and pieces(output)
    marked = [name for name in attempts(output)
              if Path(OutputPaths(str(output)).attempt(name), "csdata-run.json").is_file()]
    assert len(marked) == 1   # whole, but never committed: no reader follows it
    err = rerun(argv, output, capsys)
    assert RESUMING.search(err), err
    assert_like_clean(output, clean_runs["record"])


def test_fresh_starts_over(tmp_path, capsys, clean_runs):
    output = tmp_path / "out"
    argv = COMMANDS["record"]
    proc = start([*argv, "--output", str(output)])
    wait_for(lambda: len(pieces(output)) >= 1, proc, "a piece was stored")
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    err = rerun([*argv, "--fresh"], output, capsys)
    assert not RESUMING.search(err), err
    assert_like_clean(output, clean_runs["record"])


def test_work_under_another_spec_is_not_reused(tmp_path, capsys):
    output = tmp_path / "out"
    argv = COMMANDS["record"]
    proc = start([*argv, "--output", str(output)])
    wait_for(lambda: len(pieces(output)) >= 1, proc, "a piece was stored")
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    err = rerun([*argv, "--set", "passage.min_tokens=60"], output, capsys)
    assert not RESUMING.search(err), err
