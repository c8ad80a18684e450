"""One progress line for a run whose steps run in several processes of the driver's machine
(`--direct_running_mode=multi_processing`, a local Flink cluster's Python workers): each worker
process's `Reporter` sends its counts to the driver as a datagram instead of printing a line
of its own, and the driver's `Listener` adds them into the run's one line.

The address is a Unix datagram socket named after the pipeline's progress group (Linux's
abstract namespace: nothing on disk; elsewhere a socket file in the temporary folder), so a
worker needs nothing but the group its steps carry. A worker on another machine, or one whose
driver does not listen (a run not started through `RunProgress`), prints its own tagged line.
Sending never blocks a worker: a message the driver has no room for is dropped, and the next one
carries the same counts (they are absolute). Beam-free, like `transforms.core.progress.lines`.
"""
from __future__ import annotations

import json
import os
import socket
import sys
import tempfile
import threading
from typing import Any, Mapping, Optional, Union

MAX_MESSAGE = 65536
TICK_SECONDS = 1.0      # how often the driver's line is looked at while no message comes

Step = tuple[str, str]
Address = Union[str, bytes]


def address(group: str) -> Address:
    """The driver's socket address for progress group `group`."""
    if sys.platform.startswith("linux"):
        return f"\0csdata-progress-{group}"
    return os.path.join(tempfile.gettempdir(), f"csdata-progress-{group[:20]}.sock")


def encode(origin: str, counts: Mapping[Step, tuple[int, bool]]) -> bytes:
    """A worker's message: who sends it and each step's `(count, busy)`."""
    return json.dumps({"from": origin, "steps": [[u, lb, n, b] for (u, lb), (n, b) in counts.items()]},
                      separators=(",", ":")).encode("utf-8")


def decode(data: bytes) -> Optional[tuple[str, dict[Step, tuple[int, bool]]]]:
    """`(origin, {step: (count, busy)})` of a message; None for anything else."""
    try:
        message = json.loads(data.decode("utf-8"))
        steps = {(str(u), str(lb)): (int(n), bool(b)) for u, lb, n, b in message["steps"]}
        return str(message["from"]), steps
    except (ValueError, TypeError, KeyError, AttributeError):
        return None


class Relay:
    """A worker process's sender of its counts to the driver of progress group `group`."""

    def __init__(self, group: str):
        self._address = address(group)
        self._origin = f"{socket.gethostname()}/{os.getpid()}"
        self._socket: Optional[socket.socket] = None

    def send(self, counts: Mapping[Step, tuple[int, bool]]) -> bool:
        """Send `counts`; False where no driver listens (the caller prints instead)."""
        family = getattr(socket, "AF_UNIX", None)
        if family is None:
            return False
        try:
            if self._socket is None:
                self._socket = socket.socket(family, socket.SOCK_DGRAM)
                self._socket.setblocking(False)
            self._socket.sendto(encode(self._origin, counts), self._address)
        except BlockingIOError:          # the driver's queue is full: the next message says it all
            return True
        except OSError:                  # nobody listens there
            return False
        return True


class Listener:
    """The driver's end of group `group`: a thread that feeds each worker's latest counts into
    `reporter` (`Reporter.source`) and lets it print (`Reporter.report`: every message, and every
    `TICK_SECONDS` without one, so the heartbeat runs while a long stage moves nothing)."""

    def __init__(self, group: str, reporter: Any, tick: float = TICK_SECONDS):
        self._reporter, self._tick = reporter, tick
        self._address = address(group)
        self._stop = threading.Event()
        self._socket: Optional[socket.socket] = None
        family = getattr(socket, "AF_UNIX", None)
        if family is not None:
            try:
                sock = socket.socket(family, socket.SOCK_DGRAM)
                sock.bind(self._address)
                sock.settimeout(tick)
                self._socket = sock
            except OSError:              # workers then print their own lines
                self._socket = None
        self._thread = threading.Thread(target=self._run, name="csdata-progress", daemon=True)

    @property
    def listening(self) -> bool:
        return self._socket is not None

    def start(self) -> Listener:
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            if self._socket is None:
                self._stop.wait(self._tick)
            else:
                self.drain(block=True)
            if not self._stop.is_set():
                self._reporter.report()

    def drain(self, block: bool = False) -> int:
        """Take the messages waiting (the first one awaited up to a tick when `block`)."""
        sock, taken = self._socket, 0
        if sock is None:
            return 0
        try:
            sock.settimeout(self._tick if block else 0.0)
            while True:
                data = sock.recv(MAX_MESSAGE)
                message = decode(data)
                if message is not None:
                    self._reporter.source(*message)
                    taken += 1
                sock.settimeout(0.0)
        except OSError:                  # nothing more waiting (or the socket closed)
            pass
        return taken

    def stop(self) -> None:
        """Stop the thread, take what the workers sent last, close the socket."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5 * self._tick)
        self.drain()
        if self._socket is not None:
            self._socket.close()
            self._socket = None
            if isinstance(self._address, str) and not self._address.startswith("\0"):
                try:
                    os.unlink(self._address)
                except OSError:
                    pass
