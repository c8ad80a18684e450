"""The driver's side of a run's progress lines: `RunProgress` finds the pipeline's
`transforms.core.progress.steps` steps, listens for the counts of this machine's worker processes
(`transforms.core.progress.relay`), takes a runner's committed counters as a floor and prints each line
on this process's stderr (`transforms.core.progress.lines`)."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import apache_beam as beam

from transforms.core.accounting import NAMESPACE
from transforms.core.progress.lines import Reporter, Step, forget_reporter, process_origin, reporter_for
from transforms.core.progress.relay import Listener
from transforms.core.progress.steps import ProgressFn, counter_name


def progress_lines(pipeline: beam.Pipeline) -> dict[str, tuple[list[Step], float, bool]]:
    """The progress lines of `pipeline`: for each group, its steps in the order they were made
    (a step made twice once), its interval and whether it prints."""
    lines: dict[str, tuple[list[Step], float, bool]] = {}

    class _Visitor(beam.pipeline.PipelineVisitor):
        def visit_transform(self, node) -> None:
            if not isinstance(node.transform, beam.ParDo):
                return
            fn = node.transform.fn
            if isinstance(fn, ProgressFn):
                # Each step holds the line's steps made up to it: prefixes of one list.
                steps, _, _ = lines.setdefault(fn.group, ([], fn.interval, fn.enabled))
                if len(fn.steps) > len(steps):
                    steps[:] = fn.steps

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

    Starts a `transforms.core.progress.relay.Listener` per line, which takes the counts of the worker
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
