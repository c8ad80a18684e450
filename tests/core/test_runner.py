"""Checks before the run and the output-staging rule: a failed or interrupted run leaves the
previous output exactly as it was; a finished one replaces it whole."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pipeline import cli
from pipeline.cli import main
from pipeline.runner import RUN_MARKER, staging_path

ROOT = Path(__file__).resolve().parents[2]
STORIES = ROOT / "tests" / "data" / "record" / "cnn"
CORPUS = [str(ROOT / "tests" / "data" / "record" / p) for p in ("cnn", "dailymail", "hf_rows.jsonl")]


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
    assert not staging_path(str(finished_run)).exists()
    out = capsys.readouterr().out
    assert f"output: {finished_run}" in out
    assert f"passages                5  {finished_run}/passages/" in out     # 7 stories, 2 rejected


def test_a_rerun_replaces_the_previous_output(finished_run):
    (finished_run / "passages" / "stale.parquet").write_bytes(b"from an older run")
    assert generate(finished_run, "--set", "passage.min_tokens=120") == 0
    assert not (finished_run / "passages" / "stale.parquet").exists()


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
    assert not staging_path(str(finished_run)).exists()


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
    (half / "passages").mkdir(parents=True)       # what a run killed without staging left behind
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
    assert staging_path(str(finished_run)).exists()    # kept for inspection, beside the output


def test_version(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0
    assert capsys.readouterr().out.startswith("csdata ")


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_an_interrupted_run_keeps_the_previous_output(finished_run, signum):
    before = snapshot(finished_run)
    staging = staging_path(str(finished_run))
    argv = [sys.executable, "-m", "pipeline.cli", "record", "generate", "--output", str(finished_run)]
    for path in CORPUS:
        argv += ["--input", path]
    # Started as from a terminal: a suite run as a background job (`make test &`) hands its
    # children SIGINT ignored, and the CLI then leaves Ctrl-C alone, as a shell's `&` intends.
    proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    while not staging.exists() and time.monotonic() < deadline:   # the run has started writing
        time.sleep(0.05)
    assert staging.exists()
    time.sleep(1.0)
    proc.send_signal(signum)
    err = proc.communicate(timeout=120)[1].decode()
    assert proc.returncode == 130
    lines = [line for line in err.splitlines() if "apitools" not in line]
    assert lines == [f"csdata: interrupted ({signal.Signals(signum).name}); previous output kept"]
    assert snapshot(finished_run) == before
    assert not staging.exists()
    assert os.listdir(finished_run.parent) == [finished_run.name]
