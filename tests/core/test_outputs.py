"""The output protocol (pipeline/outputs) on a local disk: one live run per output, commits that a
reader sees whole, dead attempts removed, and a holder killed with SIGKILL taken over."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from pipeline.cli.main import main
from pipeline.outputs import protocol
from pipeline.outputs.holder import Holder
from pipeline.outputs.lease import LocalLease, OutputBusy
from pipeline.outputs.paths import RUN_MARKER, OutputPaths
from transforms.core.errors import UserError

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "record"
CORPUS = [str(DATA / p) for p in ("cnn", "dailymail", "hf_rows.jsonl")]


def attempts(output: Path) -> list[str]:
    folder = Path(OutputPaths(str(output)).attempts)
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


def start_generate(output: Path) -> subprocess.Popen:
    argv = [sys.executable, "-m", "pipeline.cli.main", "-q", "record", "generate", "--output", str(output)]
    for path in CORPUS:
        argv += ["--input", path]
    return subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def wait_for_attempt(output: Path, before: list[str], proc: subprocess.Popen) -> str:
    """The attempt a started run made (it holds the lease by then)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        new = [name for name in attempts(output) if name not in before]
        if new:
            return new[0]
        time.sleep(0.05)
    pytest.fail(f"the run made no attempt folder (exit {proc.poll()})")


def test_a_lease_is_exclusive_and_names_its_holder(tmp_path):
    paths = OutputPaths(str(tmp_path / "out"))
    first = LocalLease(paths, "attempt-a", timeout=60)
    assert first.acquire() is None
    try:
        with pytest.raises(OutputBusy) as refused:
            LocalLease(paths, "attempt-b", timeout=60).acquire()
        message = str(refused.value)
        assert "\n" not in message
        assert f"pid {os.getpid()} on {socket.gethostname()} (attempt attempt-a" in message
    finally:
        first.release()
    second = LocalLease(paths, "attempt-b", timeout=60)
    assert second.acquire() is None   # a released lease leaves no holder behind
    second.release()


def test_a_holder_is_dead_when_its_process_is_gone_or_its_heartbeat_is_old():
    now = time.time()
    here = socket.gethostname()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    assert not Holder(here, dead.pid, "a", "", now, 60).alive(now)
    assert Holder(here, os.getpid(), "a", "", now - 3600, 60).alive(now) is False   # heartbeat 1 h old
    assert Holder("elsewhere", 1, "a", "", now - 59, 60).alive(now)
    assert not Holder("elsewhere", 1, "a", "", now - 61, 60).alive(now)


def test_a_zombie_holder_counts_as_dead():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    time.sleep(0.5)   # exited, not yet reaped: a zombie that `kill -0` still finds
    try:
        assert not Holder(socket.gethostname(), child.pid, "a", "", time.time(), 60).alive()
    finally:
        child.wait()


def commit_run(output: str, number: int) -> None:
    """A run whose two files and marker all say `number`."""
    with protocol.begin(output) as run:
        for name in ("a.txt", "b.txt"):
            Path(run.folder, name).write_text(str(number))
        protocol.commit(run, {"number": number})


def test_a_reader_during_commits_sees_one_whole_run(tmp_path):
    output = str(tmp_path / "out")
    commit_run(output, 0)
    done = threading.Event()
    writer_error: list[BaseException] = []

    def write() -> None:
        try:
            for number in range(1, 40):
                commit_run(output, number)
                time.sleep(0.01)   # runs take minutes; a reader's few reads fit between two commits
        except BaseException as error:   # reported by the test below
            writer_error.append(error)
        finally:
            done.set()

    thread = threading.Thread(target=write)
    thread.start()
    reads, seen = 0, set()
    while not done.is_set():
        try:
            run = protocol.resolve_run(output)
            marker = json.loads(Path(run, RUN_MARKER).read_text())["number"]
            values = {int(Path(run, name).read_text()) for name in ("a.txt", "b.txt")}
        except (FileNotFoundError, UserError):   # removed two commits after the reader resolved it
            continue
        assert values == {marker}, f"a mixture of runs {values} under the marker of run {marker}"
        reads += 1
        seen.add(marker)
    thread.join()
    assert not writer_error, writer_error
    assert reads > 0 and len(seen) > 1
    assert json.loads(Path(output, RUN_MARKER).read_text())["number"] == 39
    # The committed attempt and the one it replaced: every other is gone.
    assert len(attempts(Path(output))) == 2


def test_the_commit_names_the_files_and_the_run_it_replaced(tmp_path):
    output = str(tmp_path / "out")
    commit_run(output, 1)
    first = Path(os.readlink(output)).name
    commit_run(output, 2)
    marker = json.loads(Path(output, RUN_MARKER).read_text())
    assert marker["files"] == ["a.txt", "b.txt"]
    assert marker["run"] == f"runs/{Path(os.readlink(output)).name}"
    assert marker["replaces"] == f"runs/{first}"


def test_an_older_csdata_output_directory_is_replaced_and_kept_one_run(tmp_path):
    output = tmp_path / "out"
    output.mkdir()
    (output / "summary.json").write_text("{}")   # a finished run of an older csdata
    commit_run(str(output), 1)
    assert output.is_symlink() and (output / "a.txt").read_text() == "1"
    moved = [name for name in attempts(output) if name.endswith("-moved")]
    assert len(moved) == 1
    assert (Path(OutputPaths(str(output)).attempt(moved[0])) / "summary.json").read_text() == "{}"


def test_a_failed_run_removes_its_attempt_and_keeps_the_output(tmp_path):
    output = str(tmp_path / "out")
    commit_run(output, 1)
    before = attempts(Path(output))
    with pytest.raises(RuntimeError):
        with protocol.begin(output) as run:
            Path(run.folder, "a.txt").write_text("half")
            raise RuntimeError("a stage failed")
    assert attempts(Path(output)) == before
    assert Path(output, "a.txt").read_text() == "1"


@pytest.mark.slow
def test_a_second_run_into_a_live_output_is_refused_in_one_line(tmp_path, capsys):
    output = tmp_path / "out"
    proc = start_generate(output)
    wait_for_attempt(output, [], proc)
    code = main(["record", "generate", "--input", str(DATA / "cnn"), "--output", str(output)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert len(err) == 1 and f"is in use by pid {proc.pid} on {socket.gethostname()}" in err[0], err
    assert proc.wait(timeout=300) == 0, proc.stderr.read().decode() if proc.stderr else ""
    # The first run's output is whole: its marker names every file it holds.
    marker = json.loads((output / RUN_MARKER).read_text())
    assert sorted(str(p.relative_to(output)) for p in output.rglob("*")
                  if p.is_file() and p.name != RUN_MARKER) == marker["files"]
    assert attempts(output) == [Path(os.readlink(output)).name]


@pytest.mark.slow
def test_a_holder_killed_with_sigkill_is_taken_over(tmp_path):
    output = tmp_path / "out"
    proc = start_generate(output)
    dead = wait_for_attempt(output, [], proc)
    time.sleep(1.0)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert dead in attempts(output)              # what the killed run left
    assert main(["-q", "record", "generate", "--input", str(DATA / "cnn"), "--output", str(output)]) == 0
    assert attempts(output) == [Path(os.readlink(output)).name]   # its attempt went


def test_clean_while_a_run_holds_the_output_is_refused_and_removes_nothing(tmp_path, capsys):
    output = str(tmp_path / "out")
    commit_run(output, 1)
    with protocol.begin(output) as run:      # a live run: its attempt is being written
        Path(run.folder, "a.txt").write_text("half")
        code = main(["clean", output])
        err = capsys.readouterr().err.strip().splitlines()
        assert code == 2 and len(err) == 1 and f"is in use by pid {os.getpid()}" in err[0], err
        assert Path(run.folder, "a.txt").is_file()
    assert Path(output, "a.txt").read_text() == "1"


def test_a_dead_holders_job_server_is_stopped_only_if_it_is_the_process_it_recorded():
    from pipeline.outputs.holder import cancel_jobs, start_ticks

    server = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        ticks = start_ticks(server.pid)
        assert ticks > 0

        def holder(recorded: str) -> Holder:
            return Holder(socket.gethostname(), 1, "a", "", 0.0, 1.0,
                          [{"master": "localhost:1", "job": "0" * 32, "servers": recorded}])

        cancel_jobs(holder(f"{server.pid}@{ticks + 1}"))   # another process that got the same pid
        time.sleep(0.2)
        assert server.poll() is None
        cancel_jobs(holder(f"{server.pid}@{ticks}"))
        assert server.wait(timeout=10) == -signal.SIGKILL
    finally:
        server.kill()
