"""Faults on the real Flink cluster, each survived: a TaskManager killed with SIGKILL, a Python
worker killed (as the out-of-memory killer does), the S3 server away for a while mid-run, a full
disk and a bucket that refuses writes.

Needs the cluster and the S3 server of `make services-test` (services/flink, services/s3). A job
that loses a TaskManager or a worker is restarted by the restart strategy `make flink-up`
configures (services/flink/config.yaml), on a TaskManager that flink.sh's watchdog starts in place
of a lost one, and writes the rows of a clean in-process run; a full disk or bucket ends the
command in one line with the previous output untouched."""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from pipeline.cli.main import main
from pipeline.engine.flink import rest_get
from pipeline.engine.worker_boot import TEMP_PREFIX
from pipeline.outputs.paths import OutputPaths
from tests.conftest import DATA, ROOT, parquet_rows
from tests.flink.test_flink_pipelines import FLINK, JOB_LINE, MASTER, assert_same_output, digest, run
from tests.s3.store import BUCKET, FULL_BUCKET, S3_ARGS, keys, upload
from transforms.core.cache import cache_dir

pytestmark = [pytest.mark.flink, pytest.mark.slow]

CLUSTER = cache_dir() / "flink-cluster"
S3_SH = ROOT / "services" / "s3" / "s3.sh"
RESTARTED = re.compile(r"^csdata: Flink job [0-9a-f]{32}: task .+ failed: .+; Flink restarts the job$", re.M)
STORIES = [str(DATA / "cnn"), str(DATA / "dailymail")]
GENERATE = ["record", "generate", *[a for path in STORIES for a in ("--input", path)]]


class Driver:
    """`csdata ARGV` on the cluster in a subprocess, its stderr in a file."""

    def __init__(self, argv: list[str], log: Path):
        self.log = log
        self.process = subprocess.Popen([sys.executable, "-m", "pipeline.cli.main", *argv, *FLINK], cwd=ROOT,
                                        stdout=subprocess.DEVNULL, stderr=log.open("w"),
                                        env=dict(os.environ, CSDATA_PROGRESS_SECONDS="1"))

    def job_id(self, wait: float = 180) -> str:
        deadline = time.monotonic() + wait
        while not (found := JOB_LINE.search(self.log.read_text())):
            assert self.process.poll() is None, self.log.read_text()
            assert time.monotonic() < deadline, "no Flink job id in 3 minutes"
            time.sleep(0.2)
        return found.group(1)

    def finish(self, wait: float = 420) -> tuple[int, str]:
        code = self.process.wait(timeout=wait)
        return code, self.log.read_text()


def python_stage_running(job_id: str) -> bool:
    """Whether a Python stage (a MapPartition) of the job runs now."""
    job = rest_get(MASTER, f"/jobs/{job_id}")
    return any("MapPartition" in v["name"] and v["status"] == "RUNNING" for v in job["vertices"])


def wait_until(condition, wait: float, what: str) -> None:
    deadline = time.monotonic() + wait
    while not condition():
        assert time.monotonic() < deadline, f"{what}: not within {wait:.0f} s"
        time.sleep(0.2)


def failures(job_id: str) -> int:
    return len(rest_get(MASTER, f"/jobs/{job_id}/exceptions").get("exceptionHistory", {}).get("entries", []))


def taskmanager_pids() -> list[int]:
    pids = [int(p) for f in CLUSTER.glob("flink-*-taskexecutor.pid") for p in f.read_text().split()]
    return [p for p in pids if Path(f"/proc/{p}").exists()]


def parent_of(pid: int) -> int:
    """The parent pid of `pid` (0 once it is gone)."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return 0


def environment_of(pid: int) -> dict[str, str]:
    """The environment process `pid` started with ({} once it is gone)."""
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return {}
    return dict(item.split("=", 1) for item in raw.decode("utf-8", "replace").split("\0") if "=" in item)


def sdk_workers_of(job_name: str) -> dict[int, str]:
    """The Python SDK workers running the job named `job_name`: {worker pid: its boot's folder,
    or '' where that folder is not the boot's own}.
    `csdata-sdk-worker` hands each worker the job's pipeline options (`PIPELINE_OPTIONS`, which
    name the job) and the folder it made for it (`SEMI_PERSISTENT_DIRECTORY`) in its environment;
    a folder is the boot's own, for it to remove, when its name carries the boot's pid (the
    worker's parent)."""
    found = {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if b"sdk_worker_main" not in (proc / "cmdline").read_bytes():
                continue
        except OSError:
            continue
        pid = int(proc.name)
        env = environment_of(pid)
        if job_name not in env.get("PIPELINE_OPTIONS", ""):
            continue
        folder = env.get("SEMI_PERSISTENT_DIRECTORY", "")
        found[pid] = folder if Path(folder).name.startswith(f"{TEMP_PREFIX}{parent_of(pid)}-") else ""
    return found


@pytest.fixture(scope="module")
def clean_generate(tmp_path_factory) -> Path:
    """The rows of GENERATE in process, which a run on the cluster that a fault hit must write."""
    output = tmp_path_factory.mktemp("clean") / "local"
    assert main([*GENERATE, "--output", str(output)]) == 0
    return output


def test_a_taskmanager_killed_mid_job_is_replaced_and_the_job_writes_the_clean_rows(tmp_path, clean_generate):
    driver = Driver([*GENERATE, "--output", str(tmp_path / "flink")], tmp_path / "stderr")
    job_id = driver.job_id()
    wait_until(lambda: python_stage_running(job_id), 120, "a Python stage running")
    victim = taskmanager_pids()[-1]
    os.kill(victim, signal.SIGKILL)
    code, err = driver.finish()
    assert code == 0, err
    assert RESTARTED.search(err), err
    assert "Traceback" not in err
    assert_same_output(clean_generate, tmp_path / "flink")
    assert victim not in taskmanager_pids()
    wait_until(lambda: rest_get(MASTER, "/overview")["taskmanagers"] == 2, 120, "two TaskManagers again")


def test_a_python_worker_killed_mid_job_is_restarted_and_the_job_writes_the_clean_rows(tmp_path, clean_generate):
    job_name = f"csdata-test-faults-{uuid.uuid4().hex[:12]}"   # what marks this job's workers
    driver = Driver([*GENERATE, "--output", str(tmp_path / "flink"), f"--job_name={job_name}"],
                    tmp_path / "stderr")
    job_id = driver.job_id()
    killed: set[int] = set()
    folders: set[str] = set()
    deadline = time.monotonic() + 180
    # SIGKILL this job's Python workers until the job has failed once (a worker between two
    # bundles may die unnoticed: the next one is killed then). Other jobs' workers are left alone.
    while failures(job_id) == 0:
        assert driver.process.poll() is None and time.monotonic() < deadline, "no worker was lost mid-bundle"
        workers = sdk_workers_of(job_name)
        folders.update(folder for folder in workers.values() if folder and Path(folder).is_dir())
        for pid in workers:
            if python_stage_running(job_id):
                os.kill(pid, signal.SIGKILL)
                killed.add(pid)
        time.sleep(0.3)
    code, err = driver.finish()
    assert code == 0, err
    assert killed and RESTARTED.search(err), err
    assert_same_output(clean_generate, tmp_path / "flink")
    # Every folder a boot of this job made is gone once the job is: a boot removes its own when
    # its worker ends, and a later boot removes those of boots that died (their pid is in the name).
    assert folders, "no folder of this job's boots was seen"
    left = lambda: sorted(folder for folder in folders if Path(folder).exists())  # noqa: E731
    wait_until(lambda: not left(), 120, f"the folders of this job's boots removed: {left()}")


def job_server_children(parent: int) -> list[int]:
    """The Beam job server processes (Java) that process `parent` started."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            ppid = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
            if ppid == parent and b"job-server" in (proc / "cmdline").read_bytes():
                found.append(int(proc.name))
        except (OSError, ValueError, IndexError):
            continue
    return found


def test_a_killed_driver_is_resumed_by_its_rerun_with_the_rows_of_a_clean_run(tmp_path, capsys):
    small_pieces = ["--set", "output.resume_every=2"]   # several pieces from the small sample
    run([*GENERATE, *small_pieces, "--output", str(tmp_path / "local")], capsys)
    output = tmp_path / "flink"
    work = Path(OutputPaths(str(output)).work)
    driver = Driver([*GENERATE, *small_pieces, "--output", str(output)], tmp_path / "stderr")
    job_id = driver.job_id()
    wait_until(lambda: len(list(work.rglob("*.pieces"))) >= 2, 240, "two pieces of work stored")
    servers = job_server_children(driver.process.pid)
    assert servers, "no job server under the driver"
    driver.process.send_signal(signal.SIGKILL)   # the driver alone: its job may run on
    driver.process.wait()
    code = main([*GENERATE, *small_pieces, "--output", str(output), *FLINK])
    err = capsys.readouterr().err
    assert code == 0, err
    # The curated splits are kept before any model result: the clean run's passage splits and
    # the rejects of the stages up to the split.
    stages = json.loads((tmp_path / "local" / "summary.json").read_text())["stages"]
    splits = stages["passage_split"]["kept"]
    rejected = sum(sum(stages[s]["rejected"].values()) for s in ("read", "dedup_exact", "dedup_near", "passage_split"))
    assert re.search(rf"^csdata: resuming an interrupted run: the curated stages' output \({splits:,} records, "
                     rf"{rejected:,} rejects\) and [\d,]+ model results", err, re.M), err
    state = rest_get(MASTER, f"/jobs/{job_id}")["state"]
    assert state in ("CANCELED", "FINISHED"), state
    if state == "CANCELED":
        assert f"csdata: Flink job {job_id} of a dead run into this output cancelled" in err, err
    assert not [pid for pid in servers if Path(f"/proc/{pid}").exists()], "the dead driver's job server runs on"
    assert_same_output(tmp_path / "local", output)
    assert not work.exists()


def s3_server(command: str) -> None:
    subprocess.run(["bash", str(S3_SH), command], check=True, capture_output=True,
                   env=dict(os.environ, PYTHON=sys.executable))


def test_the_s3_server_away_mid_write_is_ridden_out_and_the_run_commits_whole(s3, prefix, tmp_path, capsys):
    upload(s3, {p.name: p for p in sorted((DATA / "cnn" / "stories").glob("*.story"))}, f"{prefix}/in")
    argv = ["record", "generate", "--input", f"s3://{BUCKET}/{prefix}/in/*.story", *S3_ARGS]
    run([*argv, "--output", str(tmp_path / "local")], capsys)
    driver = Driver([*argv, "--output", f"s3://{BUCKET}/{prefix}/out"], tmp_path / "stderr")
    driver.job_id()

    def writing() -> bool:
        assert driver.process.poll() is None, driver.log.read_text()
        return any("/runs/2" in key for key in keys(s3, f"{prefix}/out/"))

    wait_until(writing, 300, "the job writing its attempt")
    s3_server("down")
    try:
        time.sleep(5)
    finally:
        s3_server("up")
    code, err = driver.finish()
    assert code == 0, err
    marker = json.loads(s3.get_object(Bucket=BUCKET, Key=f"{prefix}/out/csdata-run.json")["Body"].read())
    attempt = f"{prefix}/out/{marker['run']}"
    fetched = tmp_path / "fetched"
    for key in keys(s3, attempt):
        target = fetched / key[len(attempt) + 1:]
        target.parent.mkdir(parents=True, exist_ok=True)
        s3.download_file(BUCKET, key, str(target))
    assert parquet_rows(fetched) == parquet_rows(tmp_path / "local")
    assert {k.split("/")[4] for k in keys(s3, f"{prefix}/out/runs/")} == {marker["run"].split("/")[1]}


def error_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if "error" in line.lower()]


def test_a_full_disk_under_the_cluster_is_one_line_and_keeps_the_previous_output(tmp_path, capsys):
    if os.geteuid() != 0:
        pytest.fail("mounting the tmpfs the TaskManagers write to needs root")
    run(["record", "generate", "--input", str(DATA / "cnn"), "--output", str(tmp_path / "previous")], capsys)
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)], check=True)
    try:
        shutil.copytree(tmp_path / "previous", mnt / "out")
        before = digest(mnt / "out")
        free = shutil.disk_usage(mnt).free
        (mnt / "filler").write_bytes(b"\0" * (free - 24 * 1024))
        started = time.monotonic()
        driver = Driver([*GENERATE, "--output", str(mnt / "out")], tmp_path / "stderr")
        code, err = driver.finish()
        assert code == 1, err
        assert error_lines(err) == [f"csdata: error: no space left writing {mnt}/out (the disk or bucket is "
                                    f"full); previous output kept (log: {mnt}/.out.csdata/csdata.log)"], err
        assert "Traceback" not in err and not RESTARTED.search(err), err   # cancelled, not restarted
        assert time.monotonic() - started < 150
        assert digest(mnt / "out") == before
        # Beside the previous output at most its root (the lease, reusable work), and no attempt.
        assert {p.name for p in mnt.iterdir()} <= {"filler", "out", ".out.csdata"}
        assert not list((mnt / ".out.csdata" / "runs").glob("*"))
    finally:
        # The cancelled job's Python workers are kept for its next stage (10 s on this cluster,
        # `--environment_cache_millis`) before they stop and let go of the files they held there.
        deadline = time.monotonic() + 60
        while subprocess.run(["umount", str(mnt)]).returncode != 0:
            assert time.monotonic() < deadline, f"{mnt} still busy after 60 s"
            time.sleep(1)


def test_a_bucket_that_refuses_writes_is_one_line_before_the_job(s3, prefix, tmp_path, capsys):
    output = f"s3://{FULL_BUCKET}/{prefix}/out"
    before = keys(s3, "", bucket=FULL_BUCKET)
    driver = Driver([*GENERATE, "--output", output, *S3_ARGS], tmp_path / "stderr")
    code, err = driver.finish()
    assert code == 2, err
    assert err.splitlines() == [
        f"csdata: error: --output {output}: cannot write there (the store refuses writes: no space left in "
        "the bucket (a quota), or no write permission (it answered InternalError))"], err
    assert not JOB_LINE.search(err)
    assert keys(s3, "", bucket=FULL_BUCKET) == before
