"""Named crash points: the steps of the output protocol, the checkpoint and the restore where a
test ends the process on purpose, to prove that a crash there loses nothing.

`crash_point("commit.swapped")` does nothing unless the environment variable `CSDATA_CRASH_AT`
names that point: `NAME` kills the process with SIGKILL there (no handler, no cleanup: a power
cut), `NAME:raise` raises `CrashPoint` (an error of the store at that step), `NAME:interrupt`
sends the process SIGINT (Ctrl-C, handled as csdata handles it). Worker processes inherit the
variable in process; a cluster's workers do not see it.

Every point is called with a literal name, so the test of the matrix
(`tests/core/test_crash_points.py`) finds them all in the source and fails on one it does not
cover.
"""
from __future__ import annotations

import os
import signal

from transforms.core.errors import StorageError

CRASH_ENV = "CSDATA_CRASH_AT"


class CrashPoint(StorageError):
    """The failure a `NAME:raise` crash point raises: an error of the store at that step."""


def crash_point(name: str) -> None:
    """End the process here when `CSDATA_CRASH_AT` names `name` (see the module doc)."""
    wanted = os.environ.get(CRASH_ENV)
    if not wanted:
        return
    point, _, how = wanted.partition(":")
    if point != name:
        return
    if how == "raise":
        raise CrashPoint(f"crash point {name}")
    if how == "interrupt":
        os.kill(os.getpid(), signal.SIGINT)
        return
    os.kill(os.getpid(), signal.SIGKILL)
