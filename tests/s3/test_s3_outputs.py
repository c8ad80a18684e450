"""The output protocol on the real S3 server: the lease (conditional PUTs) refuses a second live run
in one line and is taken over from a dead holder (its age by the store's clock); of two runs racing
for a dead holder's lease exactly one commits; a run that lost its lease or was overtaken by
another commit does not commit; a reader during commits sees one whole run; a kill or a store
error at each step of the protocol leaves the previous commit or the new one, whole."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions

from pipeline.cli.main import main
from pipeline.outputs import protocol
from pipeline.outputs.lease import OutputBusy
from tests.conftest import DATA, ROOT
from tests.s3.store import BUCKET, S3_ARGS, keys, upload
from transforms.core.errors import StorageError
from transforms.core.resume.crash import CRASH_ENV

pytestmark = pytest.mark.s3


def url(key: str) -> str:
    return f"s3://{BUCKET}/{key}"


@pytest.fixture
def options():
    """Beam's filesystems pointed at the test server, in this process."""
    opts = PipelineOptions(S3_ARGS)
    FileSystems.set_options(opts)
    return opts


def write_lease(s3, prefix: str, host: str, pid: int, age: float, timeout: float = 60.0) -> None:
    s3.put_object(Bucket=BUCKET, Key=f"{prefix}/out/lease.json", Body=json.dumps({
        "host": host, "pid": pid, "attempt": "20000101T000000Z-0a0b0c0d", "started": "",
        "heartbeat": time.time() - age, "timeout": timeout, "jobs": []}).encode())


def write_dead_lease(s3, prefix: str, heartbeat_ahead: float = 0.0) -> None:
    """A holder on another host that stopped renewing: its lease object is older, by the store's
    clock, than its 1 s timeout (whatever its own clock wrote as its heartbeat)."""
    write_lease(s3, prefix, "node-7", 4242, age=-heartbeat_ahead, timeout=1.0)
    time.sleep(2.5)   # the store dates its objects to the second


def write_run_files(folder: str, number: int, names=("a.txt", "b.txt")) -> None:
    """A run's files, each holding `number`."""
    for name in names:
        with FileSystems.create(f"{folder}/{name}") as handle:
            handle.write(str(number).encode())


def commit_run(output: str, number: int, options) -> None:
    with protocol.begin(output, options=options) as run:
        write_run_files(run.folder, number)
        protocol.commit(run, {"number": number})


def committed_number(output: str) -> int:
    """The number of the run the output's commit names, its files checked whole."""
    run = protocol.resolve_run(output)
    marker = json.loads(read_text(f"{run}/csdata-run.json"))
    assert {int(read_text(f"{run}/{name}")) for name in marker["files"]} == {marker["number"]}
    return marker["number"]


def read_text(path: str) -> str:
    with FileSystems.open(path, compression_type="uncompressed") as handle:
        return handle.read().decode()


def test_a_live_holder_elsewhere_refuses_the_run_in_one_line(s3, prefix, options, capsys):
    write_lease(s3, prefix, "node-7", 4242, age=5)
    code = main(["record", "generate", "--input", str(DATA / "cnn"), "--output", url(f"{prefix}/out"), *S3_ARGS])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert len(err) == 1 and "is in use by pid 4242 on node-7 (attempt 20000101T000000Z-0a0b0c0d" in err[0], err
    assert "runs/" not in "".join(keys(s3, f"{prefix}/out"))   # nothing written


def test_a_holder_whose_heartbeat_is_older_than_its_timeout_is_taken_over(s3, prefix, options):
    write_dead_lease(s3, prefix)
    commit_run(url(f"{prefix}/out"), 1, options)
    assert read_text(f"{protocol.resolve_run(url(f'{prefix}/out'))}/a.txt") == "1"
    assert f"{prefix}/out/lease.json" not in keys(s3, f"{prefix}/out")   # released at the end


def test_a_dead_local_holder_is_taken_over_at_once(s3, prefix, options):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    write_lease(s3, prefix, socket.gethostname(), dead.pid, age=1)
    commit_run(url(f"{prefix}/out"), 1, options)


def test_a_second_run_while_one_runs_is_refused_and_the_first_commits_whole(s3, prefix, capsys):
    upload(s3, {f"cnn/{p.name}": p for p in (DATA / "cnn" / "stories").glob("*.story")}, f"{prefix}/in")
    argv = ["record", "generate", "--input", url(f"{prefix}/in/cnn/*.story"), "--input", str(DATA / "dailymail"),
            "--input", str(DATA / "hf_rows.jsonl"), "--output", url(f"{prefix}/out"), *S3_ARGS]
    first = subprocess.Popen([sys.executable, "-m", "pipeline.cli.main", "-q", *argv], cwd=ROOT,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while f"{prefix}/out/lease.json" not in keys(s3, f"{prefix}/out"):
        assert first.poll() is None and time.monotonic() < deadline, "the first run took no lease"
        time.sleep(0.05)
    code = main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and f"is in use by pid {first.pid} on {socket.gethostname()}" in err[0], err
    assert first.wait(timeout=300) == 0, first.stderr.read().decode() if first.stderr else ""
    marker = json.loads(s3.get_object(Bucket=BUCKET, Key=f"{prefix}/out/csdata-run.json")["Body"].read())
    attempt = f"{prefix}/out/{marker['run']}/"
    held = sorted(k[len(attempt):] for k in keys(s3, attempt) if not k.endswith("csdata-run.json"))
    assert held == marker["files"] and any(f.startswith("queries/") for f in held)


def test_a_reader_during_commits_sees_one_whole_run(s3, prefix, options):
    output = url(f"{prefix}/out")
    commit_run(output, 0, options)
    done = threading.Event()
    errors: list[BaseException] = []

    def write() -> None:
        try:
            for number in range(1, 8):
                commit_run(output, number, options)
        except BaseException as error:  # reported below
            errors.append(error)
        finally:
            done.set()

    thread = threading.Thread(target=write)
    thread.start()
    reads, seen = 0, set()
    while not done.is_set():
        run = protocol.resolve_run(output)
        try:
            marker = json.loads(read_text(f"{run}/csdata-run.json"))["number"]
            values = {int(read_text(f"{run}/{name}")) for name in ("a.txt", "b.txt")}
        except Exception:   # noqa: BLE001 - removed two commits after the reader resolved it
            continue
        assert values == {marker}, f"a mixture of runs {values} under the marker of run {marker}"
        reads += 1
        seen.add(marker)
    thread.join()
    assert not errors, errors
    assert reads > 0 and len(seen) > 1


def test_a_holder_whose_clock_runs_ahead_is_dead_by_the_stores_clock(s3, prefix, options):
    # Its heartbeat says an hour from now; the store says its lease was last written seconds ago.
    write_dead_lease(s3, prefix, heartbeat_ahead=3600)
    commit_run(url(f"{prefix}/out"), 1, options)
    assert committed_number(url(f"{prefix}/out")) == 1


def test_two_runs_racing_for_a_dead_holders_lease_exactly_one_commits(s3, prefix, options):
    output = url(f"{prefix}/out")
    write_dead_lease(s3, prefix)
    start = threading.Barrier(2)
    refused = threading.Event()
    outcomes: dict[int, str] = {}

    def race(number: int) -> None:
        start.wait()
        try:
            with protocol.begin(output, options=options) as run:
                refused.wait(timeout=60)   # the lease stays held until the other run tried
                write_run_files(run.folder, number)
                protocol.commit(run, {"number": number})
            outcomes[number] = "committed"
        except OutputBusy:
            outcomes[number] = "busy"
            refused.set()

    threads = [threading.Thread(target=race, args=(n,)) for n in (1, 2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes.values()) == ["busy", "committed"], outcomes
    winner = next(n for n, outcome in outcomes.items() if outcome == "committed")
    assert committed_number(output) == winner


def test_a_run_that_lost_its_lease_does_not_commit(s3, prefix, options):
    output = url(f"{prefix}/out")
    commit_run(output, 1, options)
    with pytest.raises(StorageError, match="lost the lease"):
        with protocol.begin(output, options=options) as run:
            write_run_files(run.folder, 2, ("a.txt",))
            # Another run took the lease over (this one looked dead to it): a new lease object.
            write_lease(s3, prefix, "node-7", 4242, age=0)
            protocol.commit(run, {"number": 2})
    assert committed_number(output) == 1


def test_a_commit_overtaken_by_another_commit_fails_and_leaves_that_commit(s3, prefix, options):
    output = url(f"{prefix}/out")
    commit_run(output, 1, options)
    with pytest.raises(StorageError, match="another run committed"):
        with protocol.begin(output, options=options) as run:
            write_run_files(run.folder, 3, ("a.txt",))
            # A partitioned holder's commit landing while this run ran (its files and its commit).
            write_run_files(run.paths.attempt("20000101T000000Z-0f0f0f0f"), 2)
            record = {"number": 2, "run": "runs/20000101T000000Z-0f0f0f0f", "files": ["a.txt", "b.txt"]}
            s3.put_object(Bucket=BUCKET, Key=f"{prefix}/out/csdata-run.json", Body=json.dumps(record).encode())
            protocol.commit(run, {"number": 3})
    assert json.loads(s3.get_object(Bucket=BUCKET, Key=f"{prefix}/out/csdata-run.json")["Body"].read())["number"] == 2


def test_clean_while_a_run_holds_the_output_is_refused_in_one_line(s3, prefix, options, capsys):
    output = url(f"{prefix}/out")
    commit_run(output, 1, options)
    write_lease(s3, prefix, "node-7", 4242, age=0)
    code = main(["clean", output, *S3_ARGS])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "is in use by pid 4242 on node-7" in err[0], err
    assert committed_number(output) == 1


COMMIT_SCRIPT = """
import sys
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions
from pipeline.outputs import protocol
output, number, args = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
options = PipelineOptions(args)
FileSystems.set_options(options)
with protocol.begin(output, local_files=True, options=options) as run:
    for name in ("a.txt", "b.txt"):
        with open(f"{run.folder}/{name}", "w") as handle:
            handle.write(str(number))
    protocol.commit(run, {"number": number})
"""
# point -> the run the output holds after a kill there: the previous commit (1) or the new one (3).
S3_CASES = {"begin.leased": 1, "begin.attempts_removed": 1, "commit.uploaded": 1, "commit.marked": 1,
            "commit.committed": 3, "cleanup.remove_attempt": 3}


@pytest.mark.parametrize("point", sorted(S3_CASES))
def test_a_kill_at_a_crash_point_on_s3_leaves_one_whole_commit(s3, prefix, options, point):
    output = url(f"{prefix}/out")
    if point.startswith("cleanup."):
        commit_run(output, 0, options)   # replaced by the next: an attempt for the cleanup to remove
    commit_run(output, 1, options)
    killed = subprocess.run([sys.executable, "-c", COMMIT_SCRIPT, output, "3", *S3_ARGS], cwd=ROOT,
                            env={**os.environ, CRASH_ENV: point}, capture_output=True, timeout=120)
    assert killed.returncode == -9, killed.stderr.decode()
    assert committed_number(output) == S3_CASES[point]
    commit_run(output, 4, options)   # the rerun takes the dead holder's lease at once (same host)
    assert committed_number(output) == 4
    attempts = {k.split("/")[4] for k in keys(s3, f"{prefix}/out/runs/")}
    assert len(attempts) == 2        # the committed run and the one it replaced


@pytest.mark.parametrize("how", ["raise", "interrupt"])
def test_an_error_after_the_commit_on_s3_keeps_the_new_commit(s3, prefix, options, how):
    output = url(f"{prefix}/out")
    commit_run(output, 0, options)
    commit_run(output, 1, options)
    done = subprocess.run([sys.executable, "-c", COMMIT_SCRIPT, output, "3", *S3_ARGS], cwd=ROOT,
                          env={**os.environ, CRASH_ENV: f"cleanup.remove_attempt:{how}"},
                          capture_output=True, timeout=120,
                          preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert (done.returncode == 0) == (how == "raise"), done.stderr.decode()   # Ctrl-C ends the script
    assert committed_number(output) == 3
