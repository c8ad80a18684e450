"""Progress of long runs on stderr: the Beam passthrough steps (`transforms.core.progress.lines`,
which has no Beam, formats and throttles the line, and holds the account of what was written
where).

A pipeline's `ProgressLine` makes passthrough `Progress` steps; the run prints one line for them
on the driver's stderr, every `interval` seconds while counts move (default 5,
`CSDATA_PROGRESS_SECONDS`) and at least every 30 s while a long stage moves none:

    csdata: 7,054 articles read · 1,210/7,054 annotated · 3,544 queries written · 4.1 articles/s · ETA 0:23:44 · 0:09:12

A step's total is the count of the first step of its unit (articles annotated of articles read),
shown once that step is idle everywhere; the ETA is that of the last step with a total it has
not reached, at its mean rate since it started. The rate is that of the first step whose count
moved since the previous line, over that time (the in-process runner runs one fused stage after
another, so a whole-run average of the first step would go stale); the time is how long the run
has gone.

The driver's side (`pipeline.engine.progress.RunProgress`, what the engine wraps a run in) keeps
the line in the driver: steps that run in the driver's process count into it directly; the
worker processes of the same machine (`multi_processing`, a local Flink cluster's Python
workers) send their counts to it (`transforms.core.progress.relay`) rather than printing lines of their
own; a runner's committed counters (a Flink job's, through its REST API; the finished
pipeline's) are a floor under each count. A worker on another machine, or one with no driver
listening, prints its own share, tagged `csdata [worker PID]:`. Every step also bumps the Beam
counter `csdata:progress.{unit}.{label}` once per bundle, which runners' UIs show and the
finished pipeline's metrics hold.

Steps do their part only when an element passes (or a bundle starts or ends) and the interval
has elapsed (no thread, no per-element lock or print in a worker); the driver's thread ticks
once a second. A last line is printed at the end when a line was printed before and the counts
have moved since. Elements are passed through untouched. `ProgressLine(enabled=False)` or
`CSDATA_PROGRESS=0` keeps the steps (and their counters) but prints nothing.
"""
from __future__ import annotations

import uuid
from typing import Any, Callable, Optional, Sequence

import apache_beam as beam
from apache_beam.metrics import Metrics

from transforms.core.accounting import NAMESPACE
from transforms.core.progress.lines import (
    Reporter,
    Step,
    default_interval,
    enabled_by_env,
    process_origin,
    reporter_for,
)


class ProgressFn(beam.DoFn):
    """Pass elements through; count them for the Beam counter and this process's reporter."""

    def __init__(self, group: str, steps: Sequence[Step], enabled: bool, interval: float,
                 count: Optional[Callable[[Any], int]], origin: tuple[str, int]):
        # The line's group, its steps up to this one, interval and switch: read by the driver.
        self.group, self.steps = group, tuple(steps)
        self.step: Step = self.steps[-1]
        self.enabled, self.interval, self._count, self._origin = enabled, interval, count, origin
        self._reporter: Optional[Reporter] = None

    def setup(self) -> None:
        self._counter = Metrics.counter(NAMESPACE, counter_name(self.step))
        self._pending = 0
        if self.enabled:
            self._reporter = reporter_for(self.group, self.steps, self.interval, self._origin)
            self._tally = self._reporter.tally(self.step, self.steps)
            self._clock = self._reporter.clock

    def start_bundle(self) -> None:
        self._pending = 0
        if self._reporter is not None:
            self._tally.busy = True

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
            self._tally.busy = False
            self._reporter.bundle_done()

    def teardown(self) -> None:
        if self._reporter is not None:
            self._reporter.finish()


def counter_name(step: Step) -> str:
    """The Beam counter (namespace `NAMESPACE`) a step bumps once per bundle."""
    unit, label = step
    return f"progress.{unit}.{label}"


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
        return pcoll | "Count" >> beam.ParDo(ProgressFn(
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
        self.origin = process_origin()                 # the process that builds the pipeline
        self._steps: list[Step] = []

    def _add(self, step: Step) -> tuple[Step, ...]:
        """Register `step`; the steps up to it (a step made twice keeps its first place)."""
        if step not in self._steps:
            self._steps.append(step)
        return tuple(self._steps[:self._steps.index(step) + 1])

    def step(self, label: str, unit: str, count: Optional[Callable[[Any], int]] = None) -> Progress:
        """A passthrough step counting `unit label`; the same (label, unit) twice shares a count."""
        return Progress(label, unit, count, line=self)
