"""Progress lines and the account of what was written where, without Beam.

`Reporter` formats and throttles the progress line of one pipeline in one process;
`transforms.core.progress` (which imports Beam) feeds it from passthrough steps. The CLI imports
this module for the environment switches and `format_written`, so that `csdata --help` and the
commands without a pipeline never load Beam.
"""
from __future__ import annotations

import glob
import os
import socket
import sys
import threading
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import IO, Callable, Optional, Sequence

INTERVAL_ENV = "CSDATA_PROGRESS_SECONDS"
ENABLED_ENV = "CSDATA_PROGRESS"          # "0" (or "off", "false", "no") turns the lines off
DEFAULT_INTERVAL = 5.0
PREFIX = "csdata"

Step = tuple[str, str]                   # (unit, label): ("articles", "read")


def default_interval() -> float:
    """Seconds between lines: `CSDATA_PROGRESS_SECONDS`, else 5."""
    value = os.environ.get(INTERVAL_ENV, "").strip()
    try:
        return max(0.0, float(value)) if value else DEFAULT_INTERVAL
    except ValueError:
        return DEFAULT_INTERVAL


def enabled_by_env() -> bool:
    """False when `CSDATA_PROGRESS` is 0, off, false or no."""
    return os.environ.get(ENABLED_ENV, "1").strip().lower() not in ("0", "off", "false", "no")


def process_origin() -> tuple[str, int]:
    """(host name, process id) of this process: where a progress line comes from."""
    return socket.gethostname(), os.getpid()


def _separator(stream: IO[str]) -> str:
    """` · `, or ` | ` where the stream's encoding has no middle dot (an ASCII terminal)."""
    encoding = getattr(stream, "encoding", None)
    try:
        if encoding:
            " · ".encode(encoding)
        return " · "
    except (LookupError, UnicodeEncodeError):
        return " | "


@dataclass
class _Tally:
    """One step instance's running count; only its owner DoFn writes it."""

    n: int = 0


class Reporter:
    """The steps of one pipeline in one process, printed as one line at most every `interval` s.

    `clock` (monotonic seconds) and `stream` can be injected; `stream=None` means `sys.stderr` at
    print time (so pytest's capture and redirections see it).
    """

    def __init__(self, steps: Sequence[Step], interval: float, stream: Optional[IO[str]] = None,
                 clock: Callable[[], float] = time.monotonic, prefix: str = PREFIX):
        self._steps: list[Step] = list(steps)
        self._tallies: dict[Step, list[_Tally]] = {}
        self._interval = interval
        self._stream = stream
        self._clock = clock
        self._prefix = prefix
        self._lock = threading.Lock()
        self.start = clock()
        self.next_due = self.start + interval      # read without the lock by every step
        self._last_time = self.start
        self._last_counts: dict[Step, int] = {}
        self.lines = 0

    @property
    def clock(self) -> Callable[[], float]:
        return self._clock

    def tally(self, step: Step, steps: Sequence[Step] = ()) -> _Tally:
        """A new running count for `step`; `steps` (the pipeline's steps up to this one, in
        pipeline order) extends the line when longer than what this process has seen."""
        with self._lock:
            if len(steps) > len(self._steps):
                self._steps = list(steps)
            if step not in self._steps:
                self._steps.append(step)
            tally = _Tally()
            self._tallies.setdefault(step, []).append(tally)
            return tally

    def counts(self) -> dict[Step, int]:
        return {step: sum(t.n for t in self._tallies.get(step, ())) for step in self._steps}

    def format(self, counts: dict[Step, int], now: float) -> str:
        """`PREFIX: n unit label · n label · ... · rate unit/s · H:MM:SS` (a unit is not repeated)."""
        stream = self._stream or sys.stderr
        parts, previous_unit = [], None
        for (unit, label), n in counts.items():
            parts.append(f"{n:,} {label}" if unit == previous_unit else f"{n:,} {unit} {label}")
            previous_unit = unit
        moved = [(step, n - self._last_counts.get(step, 0)) for step, n in counts.items()
                 if n != self._last_counts.get(step, 0)]
        if moved and now > self._last_time:
            (unit, _), delta = moved[0]
            parts.append(f"{delta / (now - self._last_time):,.1f} {unit}/s")
        parts.append(str(timedelta(seconds=int(max(0.0, now - self.start)))))
        return f"{self._prefix}: " + _separator(stream).join(parts)

    def report(self, now: Optional[float] = None, force: bool = False) -> Optional[str]:
        """Print the line when the interval has elapsed (or `force`) and a count moved since the
        previous line; returns it, else None."""
        now = self._clock() if now is None else now
        if not force and now < self.next_due:
            return None
        with self._lock:
            if not force and now < self.next_due:      # another thread printed meanwhile
                return None
            counts = self.counts()
            if counts == self._last_counts:            # nothing new to say
                return None
            line = self.format(counts, now)
            self._last_counts, self._last_time = counts, now
            self.next_due = now + self._interval
            self.lines += 1
        stream = self._stream or sys.stderr
        try:
            print(line, file=stream, flush=True)
        except (OSError, ValueError):                  # a closed stderr must not fail the run
            pass
        return line

    def finish(self, now: Optional[float] = None) -> Optional[str]:
        """The last line, when an earlier line was printed and the counts moved since."""
        if not self.lines:
            return None
        return self.report(now, force=True)


_REPORTERS: dict[str, Reporter] = {}
_REPORTERS_LOCK = threading.Lock()


def line_prefix(origin: tuple[str, int]) -> str:
    """`csdata` in the process that built the pipeline (`origin`), else `csdata [worker PID]`
    (`[worker HOST/PID]` on another machine)."""
    here = process_origin()
    if here == origin:
        return PREFIX
    if here[0] == origin[0]:
        return f"{PREFIX} [worker {here[1]}]"
    return f"{PREFIX} [worker {here[0]}/{here[1]}]"


def reporter_for(group: str, steps: Sequence[Step], interval: float, origin: tuple[str, int]) -> Reporter:
    """This process's reporter of pipeline `group` (made on first use)."""
    with _REPORTERS_LOCK:
        reporter = _REPORTERS.get(group)
        if reporter is None:
            reporter = _REPORTERS[group] = Reporter(steps, interval, prefix=line_prefix(origin))
        return reporter


class TaskLog:
    """The lines of one long task inside a step (a fold's training): `PREFIX: LABEL: text` on
    stderr, at most one every `interval` seconds unless `force`; nothing when not `enabled`.

    Plain values only, so a DoFn can hold one and Beam can pickle it; the prefix is worked out
    where it prints (the driver or a worker).
    """

    def __init__(self, label: str, enabled: bool, interval: float, origin: tuple[str, int],
                 stream: Optional[IO[str]] = None, clock: Callable[[], float] = time.monotonic):
        self.label, self.enabled, self.interval, self.origin = label, enabled, interval, origin
        self._stream, self._clock = stream, clock
        self._next_due: Optional[float] = None

    def say(self, text: str, force: bool = False) -> Optional[str]:
        """Print `text` when the interval has passed since the last line (or `force`)."""
        if not self.enabled:
            return None
        now = self._clock()
        if not force and self._next_due is not None and now < self._next_due:
            return None
        if self._next_due is None and not force:      # the first throttled line waits an interval
            self._next_due = now + self.interval
            return None
        self._next_due = now + self.interval
        stream = self._stream or sys.stderr
        line = f"{line_prefix(self.origin)}: {self.label}: {text}".replace(" · ", _separator(stream))
        try:
            print(line, file=stream, flush=True)
        except (OSError, ValueError):                  # a closed stderr must not fail the run
            pass
        return line


def eta_text(done: int, total: int, elapsed: float) -> str:
    """`40/400 steps · 2.1 s/step · ETA 0:12:36` (no rate or ETA before the first step)."""
    parts = [f"{done:,}/{total:,} steps"]
    if done > 0 and elapsed > 0:
        per = elapsed / done
        parts += [f"{per:.1f} s/step", f"ETA {timedelta(seconds=int(per * (total - done)))}"]
    return " · ".join(parts)


# --------------------------------------------------------------------------- what was written where

def table_rows(output_dir: str, table: str) -> Optional[int]:
    """Rows of `{output_dir}/{table}/*.parquet` from the Parquet footers; None without shards."""
    import pyarrow.parquet as pq

    pattern = f"{output_dir.rstrip('/')}/{table}/*.parquet"
    if "://" not in pattern:                           # local: no Beam file system needed
        paths = sorted(glob.glob(pattern))
        if not paths:
            return None
        return sum(pq.ParquetFile(path).metadata.num_rows for path in paths)
    from apache_beam.io.filesystems import FileSystems

    try:
        paths = [m.path for r in FileSystems.match([pattern]) for m in r.metadata_list]
    except Exception:                                  # no such folder or bucket
        return None
    if not paths:
        return None
    total = 0
    for path in paths:
        with FileSystems.open(path) as handle:
            total += pq.ParquetFile(handle).metadata.num_rows
    return total


def format_written(output_dir: str, tables: Sequence[str]) -> str:
    """Rows per output table and where it is, for the end of a run:

        table               rows  path
        passages              11  out/record/passages/
        queries               41  out/record/queries/

    A table without shards shows `-` rows.
    """
    base = str(output_dir).rstrip("/")
    lines = [f"{'table':<16}{'rows':>9}  path"]
    for table in tables:
        rows = table_rows(base, table)
        shown = "-" if rows is None else f"{rows:,}"
        lines.append(f"{table:<16}{shown:>9}  {base}/{table}/")
    return "\n".join(lines)
