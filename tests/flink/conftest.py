"""What every test on the Flink cluster leaves behind: no job running.

A job that outlives its test (a driver that hung, or a test that timed out under pytest-timeout)
would hold the cluster's slots, and every later job would wait for them: one hang would become
a suite that never ends. So each test ends with the cluster idle; a job still running some
seconds after the test is cancelled, and the test errors, naming it.
"""
from __future__ import annotations

import os
import time

import pytest

from pipeline.engine.flink import rest_get
from pipeline.engine.flink_jobs import TERMINAL_STATES, cancel_job

MASTER = os.environ.get("CSDATA_FLINK_MASTER", "localhost:8081")
SETTLE_SECONDS = 30.0   # a finished job may read RUNNING a little after its driver saw it end


def unfinished_jobs() -> dict[str, str]:
    """The cluster's jobs not in a terminal state: {job id: its name}."""
    jobs = rest_get(MASTER, "/jobs/overview").get("jobs", [])
    return {job["jid"]: job["name"] for job in jobs if job["state"] not in TERMINAL_STATES}


@pytest.fixture(autouse=True)
def no_job_left_running():
    yield
    try:
        left = unfinished_jobs()
    except OSError:
        return   # no cluster: the test itself has already failed on that
    deadline = time.monotonic() + SETTLE_SECONDS
    while left and time.monotonic() < deadline:
        time.sleep(0.5)
        left = unfinished_jobs()
    for job_id in left:
        cancel_job(MASTER, job_id)
    deadline = time.monotonic() + SETTLE_SECONDS
    while unfinished_jobs() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not left, f"jobs still running {SETTLE_SECONDS:.0f} s after the test, cancelled: {left}"
