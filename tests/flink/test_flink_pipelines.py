"""Every Beam pipeline on a real Flink cluster writes the rows of the in-process runner.

Needs the cluster of `make services-test` (services/flink: a JobManager on localhost:8081 and two
TaskManagers with two slots each); `make services-test` starts it, runs this module and stops it.
Each command runs twice on the same small inputs of the repo, in process and with only
`--runner=FlinkRunner --flink_master=...` added; every Parquet table (rejects included, rows
sorted) and `summary.json` must be equal. Each job is then checked through Flink's REST API: its
SDK harness was `PROCESS` (not LOOPBACK, which would run all Python work in this process), and
both TaskManagers read records in the job's Python stages.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Sequence
from pathlib import Path

import pytest

from pipeline.cli.main import main
from pipeline.engine.flink import rest_get
from tests.conftest import INPUTS, URL_LISTS, parquet_rows, without_timings
from tests.wheels import write_wheel

pytestmark = [pytest.mark.flink, pytest.mark.slow]

MASTER = os.environ.get("CSDATA_FLINK_MASTER", "localhost:8081")
FLINK = ["--runner=FlinkRunner", f"--flink_master={MASTER}"]
TESTS = Path(__file__).resolve().parents[1]
RECORD_INPUTS = [a for path in INPUTS for a in ("--input", path)]
RECORD_URLS = [a for path in URL_LISTS for a in ("--url-list", path)]
COSMOS = TESTS / "data" / "cosmos"
PROTOQA = TESTS / "data" / "protoqa"
JOB_LINE = re.compile(r"^csdata: Flink job ([0-9a-f]{32}) ", re.M)
PROGRESS_LINE = re.compile(r"^csdata: .*\b[\d,]+ \w+ read\b", re.M)   # from the job's counters


@pytest.fixture(autouse=True)
def progress_every_second(monkeypatch):
    monkeypatch.setenv("CSDATA_PROGRESS_SECONDS", "1")


@pytest.fixture(scope="module")
def taskmanagers() -> set[str]:
    """The ids of the cluster's TaskManagers (the test fails, not skips, without a cluster)."""
    try:
        listed = rest_get(MASTER, "/taskmanagers")["taskmanagers"]
    except OSError as error:
        pytest.fail(f"no Flink cluster at {MASTER} ({error}): run these tests with `make services-test`")
    assert len(listed) == 2, f"expected the 2 TaskManagers of `make flink-up`, found {len(listed)}"
    return {tm["id"] for tm in listed}


def run(argv: list[str], capsys) -> tuple[list[str], str]:
    """Run `csdata argv`; returns the Flink job ids it printed and its stderr."""
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 0, err
    return JOB_LINE.findall(err), err


def assert_same_output(local: Path, flink: Path) -> None:
    local_rows, flink_rows = parquet_rows(local), parquet_rows(flink)
    assert local_rows, f"{local} holds no table"
    assert set(flink_rows) == set(local_rows)
    for table, expected in local_rows.items():
        assert flink_rows[table] == expected, f"table {table} differs between the runners"
    summary = [json.loads((d / "summary.json").read_text()) for d in (local, flink)]
    assert without_timings(summary[1]) == without_timings(summary[0])


def finished_job(job_id: str, wait: float = 60.0) -> dict:
    """The job's REST report once Flink has it FINISHED (its JobManager may say so a little
    after Beam's job server told the driver)."""
    deadline = time.monotonic() + wait
    while True:
        job = rest_get(MASTER, f"/jobs/{job_id}")
        if job["state"] != "RUNNING" or time.monotonic() > deadline:
            assert job["state"] == "FINISHED", job["state"]
            return job
        time.sleep(0.5)


def assert_ran_on_the_cluster(job_ids: list[str], taskmanagers: set[str]) -> None:
    """Every job finished with PROCESS workers, and each TaskManager read records in the
    Python stages (MapPartition) of the command's main job."""
    assert job_ids, "the command printed no Flink job id"
    busiest: dict[str, int] = {}
    for job_id in job_ids:
        job = finished_job(job_id)
        config = rest_get(MASTER, f"/jobs/{job_id}/config")["execution-config"]
        assert config["user-config"]["environmentType"] == "PROCESS"
        per_tm: dict[str, int] = {}
        for vertex in job["vertices"]:
            if "MapPartition" not in vertex["name"]:
                continue
            detail = rest_get(MASTER, f"/jobs/{job_id}/vertices/{vertex['id']}/taskmanagers")
            for tm in detail["taskmanagers"]:
                per_tm[tm["taskmanager-id"]] = per_tm.get(tm["taskmanager-id"], 0) + tm["metrics"]["read-records"]
        if sum(per_tm.values()) > sum(busiest.values()):
            busiest = per_tm
    working = {tm for tm, records in busiest.items() if records > 0}
    assert working == taskmanagers, f"records per TaskManager: {busiest}"


def both(tmp_path: Path, name: str, argv: list[str], capsys, taskmanagers: set[str],
         jobs: list[str] | None = None, on_cluster: Sequence[str] = ()) -> tuple[Path, Path]:
    """Run `argv --output DIR` in process and on the cluster (with `on_cluster` added there);
    check they wrote the same. The cluster's job ids are added to `jobs` when given."""
    local, flink = tmp_path / f"{name}-local", tmp_path / f"{name}-flink"
    run([*argv, "--output", str(local)], capsys)
    job_ids, err = run([*argv, "--output", str(flink), *FLINK, *on_cluster], capsys)
    assert PROGRESS_LINE.search(err), err
    assert_same_output(local, flink)
    assert_ran_on_the_cluster(job_ids, taskmanagers)
    if jobs is not None:
        jobs.extend(job_ids)
    return local, flink


def vertex_of(job_id: str, step: str) -> str:
    """The id of the job's vertex whose fused Beam steps include `step`."""
    job = finished_job(job_id)
    [vertex] = [v for v in job["vertices"] if re.search(rf"[{{,/ ]{step}[}},)]", v["name"])]
    return vertex["id"]


def records_per_taskmanager(job_id: str, step: str) -> dict[str, int]:
    """Records read per TaskManager by the job's vertex whose fused Beam steps include `step`."""
    detail = rest_get(MASTER, f"/jobs/{job_id}/vertices/{vertex_of(job_id, step)}/taskmanagers")
    return {tm["taskmanager-id"]: tm["metrics"]["read-records"] for tm in detail["taskmanagers"]}


def test_record_annotate_generate_and_filter(tmp_path, capsys, taskmanagers):
    annotated, _ = both(tmp_path, "annotate", ["record", "annotate", *RECORD_INPUTS], capsys, taskmanagers)
    generated, _ = both(tmp_path, "generate", ["record", "generate", *RECORD_INPUTS, *RECORD_URLS],
                        capsys, taskmanagers)
    # The two runners must agree on something, not on two empty tables.
    assert sum(len(v) for k, v in parquet_rows(generated).items() if k.startswith("queries")) > 0
    both(tmp_path, "reuse", ["record", "generate", *RECORD_INPUTS, *RECORD_URLS,
                             "--annotations", str(annotated)], capsys, taskmanagers)
    jobs: list[str] = []
    both(tmp_path, "filter", ["record", "filter", str(generated)], capsys, taskmanagers, jobs)
    # What csdata promises of the folds' training (a step of its own after a reshuffle): the
    # spec's 5 folds are each trained once, and the training spreads over both TaskManagers.
    trained = records_per_taskmanager(jobs[-1], "TrainFold")
    assert set(trained) == taskmanagers and all(count > 0 for count in trained.values()), trained
    assert sum(trained.values()) == 5, trained


def taskmanager_log(tm_id: str) -> str:
    """A TaskManager's log, where Beam's logging service puts its Python workers' lines."""
    url = f"http://{MASTER.removeprefix('http://')}/taskmanagers/{tm_id}/log"
    with urllib.request.urlopen(url, timeout=30) as response:
        return response.read().decode("utf-8", "replace")


def test_protoqa_questions_with_the_users_worker_options_and_a_staged_package(tmp_path, capsys, taskmanagers):
    # One job checks three things: the rows of the in-process runner; the pipeline options reach
    # the workers of both TaskManagers (each worker logs them as it starts); and a staged wheel,
    # whose module each worker imports as a Beam plugin as it starts (writing down where it was
    # found), is installed into the worker's own folder, leaving the node's Python as it was.
    seen = tmp_path / "seen"
    seen.mkdir()
    source = (f"import os, pathlib\n"
              f"pathlib.Path({str(seen)!r}, str(os.getpid())).write_text(__file__)\n")
    wheel = write_wheel(tmp_path, "csdata_flink_staged_probe", "1.0", source)
    both(tmp_path, "protoqa", ["protoqa", "questions", "--input", str(PROTOQA / "scraped.jsonl"),
                               "--omitted", str(PROTOQA / "omitted.jsonl"),
                               "--flagged", str(PROTOQA / "flagged.txt")], capsys, taskmanagers,
         on_cluster=["--experiments=csdata_probe", f"--extra_package={wheel}",
                     "--beam_plugins=csdata_flink_staged_probe"])
    for tm in taskmanagers:
        started = [line for line in taskmanager_log(tm).splitlines()
                   if "Pipeline_options:" in line and "csdata_probe" in line]
        assert started, f"no Python worker of TaskManager {tm} logged this job's options"
        plugins = re.search(r"'beam_plugins': \[([^\]]*)\]", started[-1])
        assert plugins, started[-1]
        assert {"'pipeline.engine.worker'", "'csdata_flink_staged_probe'"} <= {
            name.strip() for name in plugins.group(1).split(",")}, started[-1]
        assert "'pickle_library': 'cloudpickle'" in started[-1]
    found = [p.read_text() for p in seen.iterdir()]
    assert len(found) >= len(taskmanagers), found          # a worker of each TaskManager
    for path in found:                                     # from the worker's own folder
        assert "/csdata-sdk-worker-" in path and "/site-packages/" in path, path
    node = subprocess.run([sys.executable, "-c", "import csdata_flink_staged_probe"], capture_output=True)
    assert node.returncode != 0                            # the node's Python never got it


def test_cosmos_paragraphs_and_the_files_of_one_folder_read_on_both_taskmanagers(tmp_path, capsys, taskmanagers):
    # Besides the repo's blogs and stories, one folder of 40 files: one folder is one pattern,
    # matched by one subtask; the files it matches are dealt out by path, so the step that reads
    # them runs on every TaskManager (40 files over 4 slots: all on one TaskManager's two slots
    # has a chance of 2 in 2**40).
    folder = tmp_path / "stories"
    folder.mkdir()
    for number in range(40):
        (folder / f"story{number:02d}.txt").write_text(
            f"Story {number} is about a walk. " * 12, encoding="utf-8")
    blogs = sorted(p for p in (COSMOS / "blogs").iterdir() if p.is_file())
    jobs: list[str] = []
    both(tmp_path, "cosmos", ["cosmos", "paragraphs", "--input", str(COSMOS / "blogs"),
                              "--input", str(COSMOS / "stories.jsonl"), "--input", str(folder)],
         capsys, taskmanagers, jobs)
    # The step that reads the files is fused with the stages after it (no rebalance of the
    # records): its vertex is the one counting the stories read, whose input is the files, each
    # small file one read unit.
    read = records_per_taskmanager(jobs[-1], "ProgressRead")
    assert set(read) == taskmanagers and all(n > 0 for n in read.values()), read
    assert sum(read.values()) == len(blogs) + 1 + 40


def digest(directory: Path) -> dict[str, str]:
    return {str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(directory.rglob("*")) if p.is_file()}


def test_a_job_that_fails_on_the_cluster_is_one_line_keeps_the_previous_output_and_had_the_users_options(
        tmp_path, capsys, taskmanagers):
    output = tmp_path / "out"
    protoqa = ["protoqa", "questions", "--input", str(PROTOQA / "scraped.jsonl"), "--output", str(output)]
    run(protoqa, capsys)
    before = digest(output)
    # Workers that cannot start: the job fails on the TaskManagers, not in this process. The
    # user's job name and parallelism win over csdata's defaults (the failed job has them too).
    job_name = f"csdata-test-options-{uuid.uuid4().hex[:8]}"
    code = main([*protoqa, *FLINK, "--environment_options=process_command=/bin/false",
                 "--parallelism=2", f"--job_name={job_name}"])
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if "error" in line.lower()]
    assert code == 1
    assert len(errors) == 1, err
    failed = re.match(r"csdata: error: Flink job ([0-9a-f]{32}) failed: .*Process died with exit code 1",
                      errors[0])
    assert failed, errors[0]
    assert "Traceback" not in err
    assert digest(output) == before
    job_id = failed.group(1)
    assert rest_get(MASTER, f"/jobs/{job_id}")["name"] == job_name
    assert rest_get(MASTER, f"/jobs/{job_id}/config")["execution-config"]["job-parallelism"] == 2


def child_job_server(proc: Path, parent: int) -> bool:
    """Whether /proc entry `proc` is a Beam job server (java -jar ...job-server...) started by `parent`."""
    try:
        stat = (proc / "stat").read_text()
        cmdline = (proc / "cmdline").read_bytes()
    except OSError:
        return False
    return int(stat.rsplit(")", 1)[1].split()[1]) == parent and b"job-server" in cmdline


def test_ctrl_c_cancels_the_job_on_the_cluster_keeps_the_previous_output_and_shows_only_csdata(
        tmp_path, capsys, taskmanagers):
    output = tmp_path / "out"
    annotate = ["record", "annotate", *RECORD_INPUTS, "--output", str(output)]
    run(annotate, capsys)
    before = digest(output)
    driver = subprocess.Popen([sys.executable, "-m", "pipeline.cli.main", *annotate, *FLINK],
                              stderr=subprocess.PIPE, text=True, cwd=TESTS.parent,
                              preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert driver.stderr is not None
    job_id = None
    lines = []
    for line in driver.stderr:                      # the job id line comes once the job runs
        lines.append(line.rstrip("\n"))
        found = JOB_LINE.match(line)
        if found:
            job_id = found.group(1)
            break
    if job_id is None:   # the driver ended without it
        log = tmp_path / ".out.csdata" / "csdata.log"
        tail = log.read_text().splitlines()[-40:] if log.exists() else []
        raise AssertionError(f"the run printed no Flink job id (exit {driver.wait(timeout=60)}): {lines}; "
                             f"the end of its log: {tail}")
    job_servers = [p for p in Path("/proc").iterdir() if p.name.isdigit() and child_job_server(p, driver.pid)]
    assert job_servers, "no job server process under the driver"
    driver.send_signal(signal.SIGINT)
    rest = driver.stderr.read()
    assert driver.wait(timeout=60) == 130, rest
    deadline = time.monotonic() + 30
    while any(p.exists() for p in job_servers):     # the job server goes with the driver
        assert time.monotonic() < deadline, f"the job server outlived the driver: {job_servers}"
        time.sleep(0.2)
    assert f"csdata: interrupted (SIGINT); Flink job {job_id} cancelled; previous output kept" in rest
    # Only csdata on the terminal: Beam's and the job server's lines are in the run's log.
    lines += rest.splitlines()
    assert [line for line in lines if not line.startswith("csdata: ")] == [], lines
    assert "apache_beam" in (tmp_path / ".out.csdata" / "csdata.log").read_text()
    assert rest_get(MASTER, f"/jobs/{job_id}")["state"] == "CANCELED"
    assert digest(output) == before
    # The interrupted run's attempt is gone: its root holds the previous run alone.
    assert [p.name for p in (tmp_path / ".out.csdata" / "runs").iterdir()] == [output.resolve().name]

