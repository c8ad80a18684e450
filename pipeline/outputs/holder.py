"""Who holds an output's lease (`pipeline.outputs.lease`): the `Holder` record the lease holds,
whether its run still lives, the Flink jobs it submitted and the job servers it started, and how
a run that takes a dead holder's lease over stops them.

A job server is named by its pid and its start time (`start_ticks`), so a later process that got
the same pid is never stopped; a cancelled job is waited for, at most `JOB_STOP_SECONDS`, before
the take-over touches the output.
"""
from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
import time
from dataclasses import dataclass, field
from typing import Optional

from transforms.core.errors import StorageError

JOB_STOP_SECONDS = 60.0  # how long a take-over waits for a cancelled job to stop


@dataclass
class Holder:
    """What a lease says of the run holding it."""

    host: str
    pid: int
    attempt: str
    started: str
    heartbeat: float
    timeout: float
    jobs: list[dict[str, str]] = field(default_factory=list)

    @classmethod
    def parse(cls, data: Optional[dict]) -> Optional[Holder]:
        try:
            return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data}) if data else None
        except TypeError:
            return None

    def alive(self, now: Optional[float] = None, age: Optional[float] = None) -> bool:
        """Whether the holder may still be running (see the module doc); `age`, the seconds
        since its last heartbeat as the store tells them, is used before any local clock."""
        if self.host == socket.gethostname() and not pid_alive(self.pid):
            return False
        if age is None:
            age = (now or time.time()) - self.heartbeat
        return age <= self.timeout

    def describe(self, now: Optional[float] = None) -> str:
        age = max(0, round((now or time.time()) - self.heartbeat))
        return f"pid {self.pid} on {self.host} (attempt {self.attempt}, last heartbeat {age} s ago)"


def pid_alive(pid: int) -> bool:
    """Whether process `pid` of this host runs (a zombie, killed and not yet reaped, does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def running_jobs() -> list[dict[str, str]]:
    """The Flink jobs this process runs now, with the pids of the job servers it started (only
    a run on a cluster has imported pipeline.engine.flink_jobs)."""
    flink = sys.modules.get("pipeline.engine.flink_jobs")
    if flink is None:
        return []
    servers = ",".join(f"{pid}@{start_ticks(pid)}" for pid in job_servers(os.getpid()))
    return [{"master": m.master, "job": m.job_id, "servers": servers} for m in list(flink.RUNNING) if m.job_id]


def job_servers(parent: int) -> list[int]:
    """The Beam job server processes (a Java child) of process `parent`."""
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit() and _is_job_server(int(entry.name), parent):
            found.append(int(entry.name))
    return found


def start_ticks(pid: int) -> int:
    """When process `pid` started (clock ticks after boot; 0 when it is gone): with the pid, it
    names one process, not a later one that got the same pid."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            return int(handle.read().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return 0


def _is_job_server(pid: int, parent: int) -> bool:
    """Whether `pid` is a Beam job server (a Java child) that this process `parent` started."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            ppid = int(handle.read().rsplit(")", 1)[1].split()[1])
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            command = handle.read()
    except (OSError, IndexError, ValueError):
        return False
    return ppid == parent and b"job-server" in command


def cancel_jobs(holder: Holder, wait: float = JOB_STOP_SECONDS) -> list[str]:
    """Cancel the Flink jobs a dead holder left running (its driver died with them submitted),
    wait until each has stopped, and stop the job servers it left on this host (by the pid and
    start time it recorded); returns the ids of the jobs cancelled. A cluster that cannot be
    reached is left alone (the job ends on its own); a job still running after `wait` seconds
    is a `StorageError`, before anything of the output is touched."""
    if not holder.jobs:
        return []
    from pipeline.engine.flink import rest_get
    from pipeline.engine.flink_jobs import TERMINAL_STATES, cancel_job

    cancelled = []
    for job in holder.jobs:
        if holder.host == socket.gethostname():
            for server in filter(None, job.get("servers", "").split(",")):
                pid, _, ticks = server.partition("@")
                if not (pid.isdigit() and ticks.isdigit()):   # a damaged or older lease: leave it
                    continue
                if start_ticks(int(pid)) == int(ticks):   # that process, not a later one
                    with contextlib.suppress(OSError):
                        os.kill(int(pid), signal.SIGKILL)
        try:
            state = rest_get(job["master"], f"/jobs/{job['job']}").get("state")
            if state in TERMINAL_STATES:
                continue
            cancel_job(job["master"], job["job"])
            cancelled.append(job["job"])
            deadline = time.monotonic() + wait
            while rest_get(job["master"], f"/jobs/{job['job']}").get("state") not in TERMINAL_STATES:
                if time.monotonic() > deadline:
                    raise StorageError(f"Flink job {job['job']} of a dead run into this output did not "
                                       f"stop within {wait:g} s of its cancel; stop it on the cluster "
                                       f"and run again")
                time.sleep(0.5)
        except (OSError, ValueError, KeyError):
            continue
    return cancelled
