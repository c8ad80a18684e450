"""Progress of long runs on stderr, and the end-of-run account of what was written where.

A pipeline's `ProgressLine` makes passthrough `Progress` steps; every worker process prints one
combined line for them at most every `interval` seconds (default 5, `CSDATA_PROGRESS_SECONDS`):

    csdata: 1,234 articles read · 567 annotated · 890 queries written · 12.3 articles/s · 0:01:23

Counts are those of the printing process since its first step was set up; the rate is that of
the first step whose count moved since the previous line, over that time (the in-process runner
runs one fused stage after another, so a whole-run average of the first step would go stale);
the time is how long the process's reporter has run. A process other than the one that built the
pipeline (a `multi_processing` worker, a portable runner's SDK harness) tags its lines
`csdata [worker PID]:`, each with its own share of the counts. Every step also bumps the Beam
counter `csdata:progress.{unit}.{label}` once per bundle, which runners' UIs show and the
finished pipeline's metrics hold.

Lines are printed only when an element passes a step (or a bundle ends), the interval has
elapsed and a count moved (no thread, no per-element lock or print); a last line is printed at
teardown when a line was printed before and the counts have moved since. Runs shorter than the
interval print nothing. Elements are passed through untouched. `ProgressLine(enabled=False)` or
`CSDATA_PROGRESS=0` keeps the steps (and their counters) but prints nothing.
"""
from __future__ import annotations

import os
import socket
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import IO, Any, Callable, Optional, Sequence

import apache_beam as beam
from apache_beam.metrics import Metrics

from transforms.core.accounting import NAMESPACE

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


def _origin() -> tuple[str, int]:
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


def reporter_for(group: str, steps: Sequence[Step], interval: float, origin: tuple[str, int]) -> Reporter:
    """This process's reporter of pipeline `group` (made on first use)."""
    with _REPORTERS_LOCK:
        reporter = _REPORTERS.get(group)
        if reporter is None:
            here = _origin()
            if here == origin:
                prefix = PREFIX
            elif here[0] == origin[0]:
                prefix = f"{PREFIX} [worker {here[1]}]"
            else:
                prefix = f"{PREFIX} [worker {here[0]}/{here[1]}]"
            reporter = _REPORTERS[group] = Reporter(steps, interval, prefix=prefix)
        return reporter


class _ProgressFn(beam.DoFn):
    """Pass elements through; count them for the Beam counter and this process's reporter."""

    def __init__(self, group: str, steps: Sequence[Step], enabled: bool, interval: float,
                 count: Optional[Callable[[Any], int]], origin: tuple[str, int]):
        self._group, self._steps, self._step = group, tuple(steps), tuple(steps)[-1]
        self._enabled, self._interval, self._count, self._origin = enabled, interval, count, origin
        self._reporter: Optional[Reporter] = None

    def setup(self) -> None:
        unit, label = self._step
        self._counter = Metrics.counter(NAMESPACE, f"progress.{unit}.{label}")
        self._pending = 0
        if self._enabled:
            self._reporter = reporter_for(self._group, self._steps, self._interval, self._origin)
            self._tally = self._reporter.tally(self._step, self._steps)
            self._clock = self._reporter.clock

    def start_bundle(self) -> None:
        self._pending = 0

    def process(self, element: Any) -> tuple[Any]:
        n = 1 if self._count is None else self._count(element)
        self._pending += n
        reporter = self._reporter
        if reporter is not None:
            self._tally.n += n
            now = self._clock()
            if now >= reporter.next_due:
                reporter.report(now)
        return (element,)                              # a tuple: cheaper than a generator

    def finish_bundle(self) -> None:
        if self._pending:
            self._counter.inc(self._pending)
            self._pending = 0
        if self._reporter is not None:
            self._reporter.report()

    def teardown(self) -> None:
        if self._reporter is not None:
            self._reporter.finish()


class Progress(beam.PTransform):
    """Pass a PCollection through unchanged, counting `count(element)` (default 1) per element
    as `unit label` ("articles read") on the progress line of `line` (or a line of its own)."""

    def __init__(self, label: str, unit: str, count: Optional[Callable[[Any], int]] = None,
                 line: Optional[ProgressLine] = None):
        super().__init__()
        self._line = line if line is not None else ProgressLine()
        self._steps = self._line._add((unit, label))
        self._count = count

    def expand(self, pcoll):
        line = self._line
        return pcoll | "Count" >> beam.ParDo(_ProgressFn(
            line.group, self._steps, line.enabled, line.interval, self._count, line.origin))


class ProgressLine:
    """The `Progress` steps of one pipeline, reported together on one line.

        progress = ProgressLine(enabled=not quiet)
        articles = articles | "ProgressRead" >> progress.step("read", "articles")

    `enabled=False` (or `CSDATA_PROGRESS=0` where the pipeline is built) prints nothing;
    `interval` defaults to `CSDATA_PROGRESS_SECONDS` or 5 s, read where the pipeline is built.
    Steps are shown in the order they were made, so make them in pipeline order.
    """

    def __init__(self, enabled: bool = True, interval: Optional[float] = None):
        self.enabled = bool(enabled) and enabled_by_env()
        self.interval = default_interval() if interval is None else max(0.0, float(interval))
        self.group = uuid.uuid4().hex                  # names this pipeline's reporters
        self.origin = _origin()                        # the process that builds the pipeline
        self._steps: list[Step] = []

    def _add(self, step: Step) -> tuple[Step, ...]:
        """Register `step`; the steps up to it (a step made twice keeps its first place)."""
        if step not in self._steps:
            self._steps.append(step)
        return tuple(self._steps[:self._steps.index(step) + 1])

    def step(self, label: str, unit: str, count: Optional[Callable[[Any], int]] = None) -> Progress:
        """A passthrough step counting `unit label`; the same (label, unit) twice shares a count."""
        return Progress(label, unit, count, line=self)


# --------------------------------------------------------------------------- what was written where

def table_rows(output_dir: str, table: str) -> Optional[int]:
    """Rows of `{output_dir}/{table}/*.parquet` from the Parquet footers; None without shards."""
    import pyarrow.parquet as pq
    from apache_beam.io.filesystems import FileSystems

    pattern = f"{output_dir.rstrip('/')}/{table}/*.parquet"
    try:
        paths = [m.path for r in FileSystems.match([pattern]) for m in r.metadata_list]
    except Exception:                                  # no such folder or bucket
        return None
    if not paths:
        return None
    total = 0
    for path in paths:
        if "://" in path:
            with FileSystems.open(path) as handle:
                total += pq.ParquetFile(handle).metadata.num_rows
        else:
            total += pq.ParquetFile(path).metadata.num_rows
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
