"""Progress lines on stderr, without Beam.

`Reporter` formats and throttles the progress line of one pipeline in one process;
`transforms.core.progress.steps` (which imports Beam) feeds it from passthrough steps. `TaskLog` prints
the lines of one long task inside a step. The CLI imports this module for the environment
switches, so that `csdata --help` and the commands without a pipeline never load Beam.
"""
from __future__ import annotations

import os
import socket
import sys
import threading
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import IO, Any, Callable, Mapping, Optional, Sequence

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


HEARTBEAT_SECONDS = 30.0               # a line at least this often, moved or not (long stages)


@dataclass
class _Tally:
    """One step instance's running count; only its owner DoFn writes it. `busy` while the step is
    inside a bundle: its count may still grow."""

    n: int = 0
    busy: bool = False


def clock_text(seconds: float) -> str:
    """`H:MM:SS` of a duration (whole seconds)."""
    return str(timedelta(seconds=int(max(0.0, seconds))))


def eta_seconds(done: int, total: int, rate: float) -> Optional[float]:
    """Seconds until `done` reaches `total` at `rate` units a second; None without a positive
    rate or when nothing is left."""
    if rate <= 0 or done >= total:
        return None
    return (total - done) / rate


def count_text(n: int, total: Optional[int], unit: str, label: str, with_unit: bool) -> str:
    """`1,234 articles read`, or `567/1,234 annotated` (the unit left out where the part before
    has it; `/total` only where the total is known)."""
    count = f"{n:,}" if total is None else f"{n:,}/{total:,}"
    return f"{count} {unit} {label}" if with_unit else f"{count} {label}"


# Labels of steps that see every unit the first step of their unit counted (less the few a stage
# rejects on the way), so that count is their total: files read of files matched, articles
# annotated of articles read, triples predicted of triples read. A step that keeps a sample or
# filters ("segmented" stories, "kept" questions) has no total: its ETA would never arrive.
TOTALLED = frozenset({"read", "annotated", "predicted"})


class Reporter:
    """The progress line of one pipeline in one process, printed at most every `interval` s while
    counts move and at least every `HEARTBEAT_SECONDS` (or `interval`, if longer) while a run goes.

    Counts are this process's steps' tallies plus the latest counts other processes sent
    (`source`, see `transforms.core.progress.relay`), and never below what the runner committed
    (`commit`: a job's counters, which cover finished work only). A step's total is the count of
    the first step of its unit ("annotated" articles of "read" articles; only for `TOTALLED`
    labels) once that step is idle
    in every process (batch stages after a grouping start once the stages before it finished;
    in one fused stage with it, the total is still growing and is not shown). `relay` (a
    `transforms.core.progress.relay.Relay`) sends this process's counts to the driver instead of printing
    them, and prints only where the driver does not listen. `clock` (monotonic seconds) and
    `stream` can be injected; `stream=None` means `sys.stderr` at print time (so pytest's capture
    and redirections see it).
    """

    def __init__(self, steps: Sequence[Step], interval: float, stream: Optional[IO[str]] = None,
                 clock: Callable[[], float] = time.monotonic, prefix: str = PREFIX,
                 relay: Optional[Any] = None):
        self._steps: list[Step] = list(steps)
        self._tallies: dict[Step, list[_Tally]] = {}
        self._sources: dict[str, dict[Step, tuple[int, bool]]] = {}
        self._committed: dict[Step, int] = {}
        self._interval = interval
        self._heartbeat = max(interval, HEARTBEAT_SECONDS)
        self._stream = stream
        self._clock = clock
        self._prefix = prefix
        self._relay = relay
        self._lock = threading.Lock()
        self.start = clock()
        self.next_due = self.start + interval      # read without the lock by every step
        self._last_time = self.start
        self._last_counts: dict[Step, int] = {}
        self._last_busy: dict[Step, bool] = {}
        self._idle_since: dict[Step, float] = {}   # the last time each step was seen at 0
        self.lines = 0

    @property
    def clock(self) -> Callable[[], float]:
        return self._clock

    def _know(self, step: Step) -> None:
        if step not in self._steps:
            self._steps.append(step)

    def tally(self, step: Step, steps: Sequence[Step] = ()) -> _Tally:
        """A new running count for `step`; `steps` (the pipeline's steps up to this one, in
        pipeline order) extends the line when longer than what this process has seen."""
        with self._lock:
            if len(steps) > len(self._steps):
                self._steps = list(steps) + [s for s in self._steps if s not in steps]
            self._know(step)
            tally = _Tally()
            self._tallies.setdefault(step, []).append(tally)
            return tally

    def source(self, name: str, counts: Mapping[Step, tuple[int, bool]]) -> None:
        """The latest `(count, busy)` of each step in another process `name` (its counts since
        its own start: they replace what it sent before)."""
        with self._lock:
            for step in counts:
                self._know(step)
            self._sources[name] = dict(counts)

    def commit(self, counts: Mapping[Step, int]) -> None:
        """Counts the runner committed for the whole job: each step's count is at least this."""
        with self._lock:
            for step, n in counts.items():
                self._know(step)
                self._committed[step] = max(n, self._committed.get(step, 0))

    def local_counts(self) -> dict[Step, tuple[int, bool]]:
        """`(count, busy)` of each step in this process alone (what a relay sends)."""
        return {step: (sum(t.n for t in self._tallies.get(step, ())),
                       any(t.busy for t in self._tallies.get(step, ())))
                for step in self._steps}

    def counts(self) -> dict[Step, int]:
        """Each step's count: this process's and the other processes', at least the committed."""
        totals = {step: n for step, (n, _) in self.local_counts().items()}
        for counts in self._sources.values():
            for step, (n, _) in counts.items():
                totals[step] = totals.get(step, 0) + n
        return {step: max(totals.get(step, 0), self._committed.get(step, 0)) for step in self._steps}

    def busy(self) -> dict[Step, bool]:
        """Whether each step is inside a bundle in this process or in another."""
        busy = {step: b for step, (_, b) in self.local_counts().items()}
        for counts in self._sources.values():
            for step, (_, b) in counts.items():
                busy[step] = busy.get(step, False) or b
        return busy

    def totals(self, counts: Mapping[Step, int], busy: Mapping[Step, bool]) -> dict[Step, Optional[int]]:
        """Each step's total: the count of the first step of its unit, where that is another
        step, this step's label is one of `TOTALLED`, the first step is idle everywhere, and
        this step has started and not passed it; else None."""
        first: dict[str, Step] = {}
        totals: dict[Step, Optional[int]] = {}
        for step in self._steps:
            lead = first.setdefault(step[0], step)
            n, total = counts.get(step, 0), counts.get(lead, 0)
            known = (lead != step and step[1] in TOTALLED and not busy.get(lead, False)
                     and 0 < n <= total)
            totals[step] = total if known else None
        return totals

    def _observe(self, counts: Mapping[Step, int], now: float) -> None:
        for step in self._steps:
            if counts.get(step, 0) == 0:
                self._idle_since[step] = now
            else:                                      # moving since before this reporter saw it
                self._idle_since.setdefault(step, self.start)

    def format(self, counts: dict[Step, int], now: float, busy: Optional[Mapping[Step, bool]] = None,
               final: bool = False) -> str:
        """`PREFIX: n unit label · n/N label · ... · rate unit/s · ETA H:MM:SS · H:MM:SS`.

        The rate is that of the first step that moved since the previous line, over that time.
        The ETA is that of the last step with a total it has not reached, at its mean rate since
        it started (the last time it was seen at 0); none on the `final` line."""
        stream = self._stream or sys.stderr
        totals = self.totals(counts, busy if busy is not None else self.busy())
        parts, previous_unit = [], None
        for (unit, label), n in counts.items():
            parts.append(count_text(n, totals.get((unit, label)), unit, label, unit != previous_unit))
            previous_unit = unit
        moved = [(step, n - self._last_counts.get(step, 0)) for step, n in counts.items()
                 if n != self._last_counts.get(step, 0)]
        if moved and now > self._last_time:
            (unit, _), delta = moved[0]
            parts.append(f"{delta / (now - self._last_time):,.1f} {unit}/s")
        for step in reversed(list(counts) if not final else []):
            total, n = totals.get(step), counts[step]
            if total is None or n >= total:
                continue
            started = self._idle_since.get(step, self.start)
            eta = eta_seconds(n, total, n / (now - started)) if now > started else None
            if eta is not None:
                parts.append(f"ETA {clock_text(eta)}")
            break
        parts.append(clock_text(now - self.start))
        return f"{self._prefix}: " + _separator(stream).join(parts)

    def report(self, now: Optional[float] = None, force: bool = False, final: bool = False) -> Optional[str]:
        """Print the line (or relay the counts) when the interval has elapsed and a count moved
        since the previous line, or the heartbeat is due, or `force` and something moved;
        returns it, else None. The `final` line of a run has no ETA."""
        now = self._clock() if now is None else now
        if not force and now < self.next_due:
            return None
        with self._lock:
            if not force and now < self.next_due:      # another thread printed meanwhile
                return None
            counts, busy = self.counts(), self.busy()
            self._observe(counts, now)
            moved = any(n != self._last_counts.get(step, 0) for step, n in counts.items()) or (
                self._relay is not None and any(b != self._last_busy.get(step, False) for step, b in busy.items()))
            if not moved and (force or now < self._last_time + self._heartbeat):
                return None
            line = self.format(counts, now, busy, final)
            self._last_counts, self._last_busy, self._last_time = counts, busy, now
            self.next_due = now + self._interval
            self.lines += 1
        if self._relay is not None and self._relay.send(self.local_counts()):
            return line
        stream = self._stream or sys.stderr
        try:
            print(line, file=stream, flush=True)
        except (OSError, ValueError):                  # a closed stderr must not fail the run
            pass
        return line

    def bundle_done(self) -> Optional[str]:
        """At the end of a step's bundle: a relay sends at once (the driver learns the step is
        idle and its count final); a printing reporter prints when due."""
        return self.report(force=self._relay is not None)

    def finish(self, now: Optional[float] = None) -> Optional[str]:
        """The last line, when an earlier line was printed and the counts moved since."""
        if not self.lines:
            return None
        return self.report(now, force=True, final=True)


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
    """This process's reporter of pipeline `group` (made on first use). Another process on the
    machine of `origin` (a local runner's worker, a local cluster's) relays its counts to the
    driver's line (`transforms.core.progress.relay`); it prints its own, tagged, line only where no
    driver listens (a remote machine, a run without `RunProgress`)."""
    from transforms.core.progress.relay import Relay

    with _REPORTERS_LOCK:
        reporter = _REPORTERS.get(group)
        if reporter is None:
            here = process_origin()
            relay = Relay(group) if here != origin and here[0] == origin[0] else None
            reporter = _REPORTERS[group] = Reporter(steps, interval, prefix=line_prefix(origin), relay=relay)
        return reporter


def forget_reporter(group: str) -> None:
    """Drop this process's reporter of `group` (its run is over)."""
    with _REPORTERS_LOCK:
        _REPORTERS.pop(group, None)


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
