"""Checks before the run and the output protocol seen from the command line: a failed or
interrupted run leaves the previous output exactly as it was; a finished one replaces it whole."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pipeline.cli import main as cli
from pipeline.cli.main import main
from pipeline.outputs.paths import RUN_MARKER, OutputPaths

ROOT = Path(__file__).resolve().parents[2]
STORIES = ROOT / "tests" / "data" / "record" / "cnn"
CORPUS = [str(ROOT / "tests" / "data" / "record" / p) for p in ("cnn", "dailymail", "hf_rows.jsonl")]


def attempts(output: Path) -> list[str]:
    """The attempt folders in the output's root."""
    return sorted(p.name for p in Path(OutputPaths(str(output)).attempts).iterdir())


def committed(output: Path) -> str:
    """The attempt the output's link points at."""
    return Path(os.readlink(output)).name


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def generate(output: Path, *extra: str) -> int:
    return main(["record", "generate", "--input", str(STORIES), "--output", str(output), *extra])


@pytest.fixture
def finished_run(tmp_path) -> Path:
    output = tmp_path / "out"
    assert generate(output) == 0
    return output


def test_a_finished_run_is_swapped_in_whole_and_marked(tmp_path, capsys):
    finished_run = tmp_path / "out"
    assert generate(finished_run) == 0
    assert sorted(p.name for p in finished_run.iterdir()) == [
        RUN_MARKER, "passages", "provenance.json", "queries", "rejects", "summary.json"]
    assert attempts(finished_run) == [committed(finished_run)]
    out = capsys.readouterr().out
    assert f"output: {finished_run}" in out
    assert f"passages                5  {finished_run}/passages/" in out     # 7 stories, 2 rejected


def test_a_rerun_replaces_the_previous_output(finished_run):
    first = committed(finished_run)
    (finished_run / "passages" / "stale.parquet").write_bytes(b"from an older run")
    assert generate(finished_run, "--set", "passage.min_tokens=120") == 0
    assert not (finished_run / "passages" / "stale.parquet").exists()
    second = committed(finished_run)
    assert attempts(finished_run) == sorted([first, second])    # the replaced one stays a run long
    assert generate(finished_run) == 0
    assert attempts(finished_run) == sorted([second, committed(finished_run)])


@pytest.mark.parametrize("argv_tail, message", [
    (["--input", "/no/such/dir/*.story"], "matches no file"),
    (["--spce", "record.yaml"], "unrecognized option --spce"),
    (["--sett", "passage.min_tokens=3"], "unrecognized option --sett"),
    (["--set", "passage.min_tokens=abc"], "passage.min_tokens"),
])
def test_before_the_run_errors_keep_the_previous_output(finished_run, capsys, argv_tail, message):
    before = snapshot(finished_run)
    argv = ["record", "generate", "--output", str(finished_run)]
    if "--input" not in argv_tail:
        argv += ["--input", str(STORIES)]
    assert main(argv + argv_tail) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("csdata: error: ") and message in err[0]
    assert snapshot(finished_run) == before
    assert attempts(finished_run) == [committed(finished_run)]


def test_output_that_cannot_be_written_is_refused_before_the_run(tmp_path, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    assert generate(blocker / "out") == 2
    assert "cannot write there" in capsys.readouterr().err


def test_a_foreign_non_empty_directory_is_never_replaced(tmp_path, capsys):
    mine = tmp_path / "thesis"
    mine.mkdir()
    (mine / "chapter1.tex").write_text("years of work")
    assert generate(mine) == 2
    assert "not a csdata run" in capsys.readouterr().err
    assert (mine / "chapter1.tex").read_text() == "years of work"


@pytest.mark.parametrize("command", [["record", "export"], ["record", "filter", "--output", "x"], ["stats"]])
def test_downstream_commands_refuse_an_incomplete_run(tmp_path, capsys, command):
    half = tmp_path / "half"
    (half / "passages").mkdir(parents=True)       # what a run killed outside the output protocol left behind
    assert main(command[:2] + [str(half)] + command[2:] if command != ["stats"] else ["stats", str(half)]) == 2
    assert "not the output of a finished csdata run" in capsys.readouterr().err


def test_a_run_whose_accounting_fails_keeps_the_previous_output(finished_run, monkeypatch, capsys):
    before = snapshot(finished_run)
    record = cli.dataset_modules()[0]

    def lost_records(args, extra, beam_options):
        Path(args.output, "summary.json").write_text("{}")
        return 3
    monkeypatch.setattr(record, "run", lost_records)
    assert generate(finished_run) == 3
    assert snapshot(finished_run) == before
    assert "previous output" in capsys.readouterr().err
    kept = [name for name in attempts(finished_run) if name != committed(finished_run)]
    assert len(kept) == 1                                # kept for inspection, in the output's root
    assert (Path(OutputPaths(str(finished_run)).attempt(kept[0])) / "summary.json").read_text() == "{}"


def test_version(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0
    assert capsys.readouterr().out.startswith("csdata ")


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_an_interrupted_run_keeps_the_previous_output(finished_run, signum):
    before = snapshot(finished_run)
    first = attempts(finished_run)
    argv = [sys.executable, "-m", "pipeline.cli.main", "record", "generate", "--output", str(finished_run)]
    for path in CORPUS:
        argv += ["--input", path]
    # Started as from a terminal: a suite run as a background job (`make test &`) hands its
    # children SIGINT ignored, and the CLI then leaves Ctrl-C alone, as a shell's `&` intends.
    proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    while attempts(finished_run) == first and time.monotonic() < deadline:   # it has begun
        time.sleep(0.05)
    assert attempts(finished_run) != first
    time.sleep(1.0)
    proc.send_signal(signum)
    err = proc.communicate(timeout=120)[1].decode()
    assert proc.returncode == 130
    lines = [line for line in err.splitlines() if "apitools" not in line]
    log = finished_run.parent / f".{finished_run.name}.csdata" / "csdata.log"
    assert lines == [f"csdata: interrupted ({signal.Signals(signum).name}); previous output kept (log: {log})"]
    assert snapshot(finished_run) == before
    assert attempts(finished_run) == first
    assert sorted(os.listdir(finished_run.parent)) == [f".{finished_run.name}.csdata", finished_run.name]
