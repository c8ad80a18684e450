"""Progress of long runs on stderr: the Beam passthrough steps (`transforms.core.reporting`, which
has no Beam, formats and throttles the line, and holds the account of what was written where).

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

import uuid
from typing import Any, Callable, Optional, Sequence

import apache_beam as beam
from apache_beam.metrics import Metrics

from transforms.core.accounting import NAMESPACE
from transforms.core.reporting import (
    Reporter,
    Step,
    default_interval,
    enabled_by_env,
    process_origin,
    reporter_for,
)


class _ProgressFn(beam.DoFn):
    """Pass elements through; count them for the Beam counter and this process's reporter."""

    def __init__(self, group: str, steps: Sequence[Step], enabled: bool, interval: float,
                 count: Optional[Callable[[Any], int]], origin: tuple[str, int]):
        self._group, self._steps = group, tuple(steps)
        self.step: Step = self._steps[-1]          # read by `progress_steps`
        self._enabled, self._interval, self._count, self._origin = enabled, interval, count, origin
        self._reporter: Optional[Reporter] = None

    def setup(self) -> None:
        self._counter = Metrics.counter(NAMESPACE, counter_name(self.step))
        self._pending = 0
        if self._enabled:
            self._reporter = reporter_for(self._group, self._steps, self._interval, self._origin)
            self._tally = self._reporter.tally(self.step, self._steps)
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


def counter_name(step: Step) -> str:
    """The Beam counter (namespace `NAMESPACE`) a step bumps once per bundle."""
    unit, label = step
    return f"progress.{unit}.{label}"


def progress_steps(pipeline: beam.Pipeline) -> list[Step]:
    """The `Progress` steps of `pipeline` in the order they were applied (a step applied twice
    once): what a driver shows for a runner whose workers' stderr it cannot see."""
    steps: list[Step] = []

    class _Visitor(beam.pipeline.PipelineVisitor):
        def visit_transform(self, node) -> None:
            if not isinstance(node.transform, beam.ParDo):
                return
            fn = node.transform.fn
            if isinstance(fn, _ProgressFn) and fn.step not in steps:
                steps.append(fn.step)

    pipeline.visit(_Visitor())
    return steps


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
