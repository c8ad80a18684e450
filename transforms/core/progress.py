"""Progress of long runs on stderr: the Beam passthrough steps (`transforms.core.progress_lines`, which
has no Beam, formats and throttles the line, and holds the account of what was written where).

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

`RunProgress` (what `pipeline.engine.runner.run_pipeline` wraps a run in) keeps the line in the driver:
steps that run in the driver's process count into it directly; the worker processes of the same
machine (`multi_processing`, a local Flink cluster's Python workers) send their counts to it
(`transforms.core.relay`) rather than printing lines of their own; a runner's committed counters
(a Flink job's, through its REST API; the finished pipeline's) are a floor under each count. A
worker on another machine, or one with no driver listening, prints its own share, tagged
`csdata [worker PID]:`. Every step also bumps the Beam counter `csdata:progress.{unit}.{label}`
once per bundle, which runners' UIs show and the finished pipeline's metrics hold.

Steps do their part only when an element passes (or a bundle starts or ends) and the interval
has elapsed (no thread, no per-element lock or print in a worker); the driver's thread ticks
once a second. A last line is printed at the end when a line was printed before and the counts
have moved since. Elements are passed through untouched. `ProgressLine(enabled=False)` or
`CSDATA_PROGRESS=0` keeps the steps (and their counters) but prints nothing.
"""
from __future__ import annotations

import uuid
from typing import Any, Callable, Mapping, Optional, Sequence

import apache_beam as beam
from apache_beam.metrics import Metrics

from transforms.core.accounting import NAMESPACE
from transforms.core.progress_lines import (
    Reporter,
    Step,
    default_interval,
    enabled_by_env,
    forget_reporter,
    process_origin,
    reporter_for,
)
from transforms.core.relay import Listener


class _ProgressFn(beam.DoFn):
    """Pass elements through; count them for the Beam counter and this process's reporter."""

    def __init__(self, group: str, steps: Sequence[Step], enabled: bool, interval: float,
                 count: Optional[Callable[[Any], int]], origin: tuple[str, int]):
        self._group, self._steps = group, tuple(steps)
        self.step: Step = self._steps[-1]          # read by `progress_lines`
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


def progress_lines(pipeline: beam.Pipeline) -> dict[str, tuple[list[Step], float, bool]]:
    """The progress lines of `pipeline`: for each group, its steps in the order they were made
    (a step made twice once), its interval and whether it prints."""
    lines: dict[str, tuple[list[Step], float, bool]] = {}

    class _Visitor(beam.pipeline.PipelineVisitor):
        def visit_transform(self, node) -> None:
            if not isinstance(node.transform, beam.ParDo):
                return
            fn = node.transform.fn
            if isinstance(fn, _ProgressFn):
                # Each step holds the line's steps made up to it: prefixes of one list.
                steps, _, _ = lines.setdefault(fn._group, ([], fn._interval, fn._enabled))
                if len(fn._steps) > len(steps):
                    steps[:] = fn._steps

    pipeline.visit(_Visitor())
    return lines


def committed_counts(counters: Mapping[str, int], steps: Sequence[Step]) -> dict[Step, int]:
    """The count of each step among a job's Beam counters (by name, namespace `NAMESPACE`)."""
    return {step: counters[counter_name(step)] for step in steps if counter_name(step) in counters}


class RunProgress:
    """The driver's side of a run's progress line(s) (one per `ProgressLine` of the pipeline):

        with RunProgress(pipeline) as progress:
            result = pipeline.run()
            result.wait_until_finish()
            progress.finish(result)

    Starts a `transforms.core.relay.Listener` per line, which takes the counts of the worker
    processes of this machine and prints the line; `commit` takes a runner's counters while the
    job runs (the Flink monitor's), `finish` the finished pipeline's and prints the last line.
    """

    def __init__(self, pipeline: beam.Pipeline):
        self._lines = {group: line for group, line in progress_lines(pipeline).items() if line[2]}
        self.reporters: dict[str, Reporter] = {}
        self._listeners: list[Listener] = []

    def __enter__(self) -> RunProgress:
        here = process_origin()
        for group, (steps, interval, _) in self._lines.items():
            reporter = self.reporters[group] = reporter_for(group, steps, interval, here)
            self._listeners.append(Listener(group, reporter).start())
        return self

    def commit(self, counters: Mapping[str, int]) -> None:
        """The job's Beam counters of namespace `NAMESPACE` so far (by name)."""
        for group, reporter in self.reporters.items():
            reporter.commit(committed_counts(counters, self._lines[group][0]))

    def _stop(self) -> None:
        for listener in self._listeners:
            listener.stop()
        self._listeners = []

    def finish(self, result: Any = None) -> None:
        """The run is over: the workers' last counts, the committed counters of `result` (a
        `PipelineResult`, where its runner has them) and the last line."""
        self._stop()
        if result is not None:
            self.commit(result_counters(result))
        for reporter in self.reporters.values():
            reporter.finish()

    def __exit__(self, *exc: object) -> None:
        self._stop()
        for group in self.reporters:
            forget_reporter(group)


def result_counters(result: Any) -> dict[str, int]:
    """The finished pipeline's counters of namespace `NAMESPACE` by name ({} where its runner
    cannot say)."""
    from apache_beam.metrics.metric import MetricsFilter

    try:
        found = result.metrics().query(MetricsFilter().with_namespace(NAMESPACE))["counters"]
    except Exception:  # noqa: BLE001 - a runner without metrics (or whose job service is gone)
        return {}
    counters: dict[str, int] = {}
    for counter in found:
        value = counter.committed if counter.committed is not None else counter.attempted
        name = counter.key.metric.name
        counters[name] = counters.get(name, 0) + int(value or 0)
    return counters


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
