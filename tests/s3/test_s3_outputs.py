"""The output protocol on the real S3 server: the lease (conditional PUTs) refuses a second live run
in one line and is taken over from a dead holder; a reader during commits sees one whole run."""
from __future__ import annotations

import json
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
from tests.conftest import DATA, ROOT
from tests.s3.store import BUCKET, S3_ARGS, keys, upload

pytestmark = pytest.mark.s3


def url(key: str) -> str:
    return f"s3://{BUCKET}/{key}"


@pytest.fixture
def options():
    """Beam's filesystems pointed at the test server, in this process."""
    opts = PipelineOptions(S3_ARGS)
    FileSystems.set_options(opts)
    return opts


def write_lease(s3, prefix: str, host: str, pid: int, age: float) -> None:
    s3.put_object(Bucket=BUCKET, Key=f"{prefix}/out/lease.json", Body=json.dumps({
        "host": host, "pid": pid, "attempt": "20000101T000000Z-0a0b0c0d", "started": "",
        "heartbeat": time.time() - age, "timeout": 60.0, "jobs": []}).encode())


def commit_run(output: str, number: int, options) -> None:
    with protocol.begin(output, options=options) as run:
        for name in ("a.txt", "b.txt"):
            with FileSystems.create(f"{run.folder}/{name}") as handle:
                handle.write(str(number).encode())
        protocol.commit(run, {"number": number})


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
    write_lease(s3, prefix, "node-7", 4242, age=120)
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
