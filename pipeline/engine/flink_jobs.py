"""A Flink job csdata submitted, while it runs: its id (found by job name), its progress (the
Beam counters in the cluster's accumulators, into the run's progress line), its outcome and first
worker error in one line, and its cancellation when the driver is interrupted or dies. Read from
the cluster's REST API (`pipeline.engine.flink.rest_get`)."""
from __future__ import annotations

import http.client
import json
import logging
import signal
import sys
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Callable, Optional

from pipeline.engine.flink import REST_TIMEOUT, rest_get, rest_url

USER_COUNTER_URN = "beam:metric:user:sum_int64:v1"
POLL_SECONDS = 1.0


def decode_varint(data: bytes) -> int:
    """A protobuf varint (Beam's encoding of a sum_int64 metric payload)."""
    value = shift = 0
    for byte in data:
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            break
        shift += 7
    return value


def user_counters(accumulators: Any, namespace: str) -> dict[str, int]:
    """The job's Beam counters in `namespace` (summed over steps) from `/jobs/ID/accumulators`:
    Beam's Flink runner reports them as the MonitoringInfos of its `__metricscontainers`
    accumulator. A task adds to it only as it closes (`FlinkMetricContainer.
    registerMetricsForPipelineResult`), and a batch task runs its whole partition as one bundle:
    so these are the counts of finished tasks, still at 0 for the steps of a running stage."""
    import base64

    totals: dict[str, int] = {}
    for accumulator in accumulators.get("user-task-accumulators", []):
        if accumulator.get("name") != "__metricscontainers":
            continue
        for info in json.loads(accumulator["value"]).get("metrics", {}).get("attempted", []):
            labels = info.get("labels", {})
            if info.get("urn") != USER_COUNTER_URN or labels.get("NAMESPACE") != namespace:
                continue
            name = labels["NAME"]
            totals[name] = totals.get(name, 0) + decode_varint(base64.b64decode(info.get("payload", "")))
    return totals


def find_job(master: str, job_name: str) -> Optional[str]:
    """The id of the newest Flink job named `job_name`, if the cluster has one."""
    jobs = [j for j in rest_get(master, "/jobs/overview").get("jobs", []) if j.get("name") == job_name]
    return max(jobs, key=lambda j: j.get("start-time", 0))["jid"] if jobs else None


def web_ui_link(master: str, job_id: str, running: bool = True) -> str:
    """The job's page in Flink's web UI (running and completed jobs have different routes)."""
    return f"{rest_url(master)}/#/job/{'running' if running else 'completed'}/{job_id}/overview"


def job_exception(master: str, job_id: str, tries: int = 5) -> str:
    """The text of a failed job's first exception, '' when the cluster reports none (it may take
    a moment to, so it is asked `tries` times a second apart)."""
    import time

    for attempt in range(tries):
        try:
            report = rest_get(master, f"/jobs/{job_id}/exceptions")
        except (OSError, ValueError):
            report = {}
        texts = [report.get("root-exception") or ""]
        texts += [e.get("exception", "") for e in report.get("exceptionHistory", {}).get("entries", [])]
        for text in texts:
            if text.strip():
                return text
        if attempt + 1 < tries:
            time.sleep(1.0)
    return ""


def root_cause(text: str) -> str:
    """The line of a Java exception's text that says what went wrong: the last line of a Python
    traceback inside it, else its innermost `Caused by:`, else its first line."""
    python_error = python_error_line(text)
    if python_error:
        return python_error
    causes = [line[len("Caused by: "):] for line in text.splitlines() if line.startswith("Caused by: ")]
    return (causes[-1] if causes else text.strip().splitlines()[0]).strip()


def python_error_line(text: str) -> str:
    """`ValueError: ...`: the last line of the first Python traceback in a Java exception's text."""
    marker = "Traceback (most recent call last):"
    if marker not in text:
        return ""
    lines = text.split(marker, 1)[1].splitlines()
    for line in lines[1:]:
        if line and not line.startswith((" ", "\t")):
            return line.strip()
    return ""


def failure_line(job_id: str, entry: dict) -> str:
    """One line for a task failure in a job's exception history, which Flink's restart strategy
    answers by restarting the job: what failed, where, and its root cause."""
    cause = " ".join(root_cause(entry.get("stacktrace") or entry.get("exceptionName") or "").split())
    where = entry.get("location") or entry.get("endpoint") or ""
    task = (entry.get("taskName") or "").split(" (", 1)[0]
    return (f"csdata: Flink job {job_id}: task {task or '?'}" + (f" on {where}" if where else "")
            + f" failed: {cause[:200]}; Flink restarts the job")


class JobMonitor:
    """While a job runs on the cluster: prints its id and web UI link once, hands the job's
    counters to the run's progress line (`pipeline.engine.progress.RunProgress.commit`: the
    counters of the tasks that finished; the Python workers on the driver's machine send their
    live counts to it themselves), and prints a line for each task failure that Flink's restart
    strategy answers."""

    def __init__(self, master: str, job_name: str, progress: Optional[Any] = None, enabled: bool = True):
        import threading

        self.master, self.job_name = master, job_name
        self.job_id: Optional[str] = None
        self.stop_job_server: Optional[Callable[[], Any]] = None   # set by `run_on_cluster`
        self._progress = progress
        self._enabled = enabled
        self._failures_seen = 0
        self.fatal: Optional[str] = None   # the cause of a failure no restart can mend
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="csdata-flink-monitor", daemon=True)

    def __enter__(self) -> JobMonitor:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=2 * REST_TIMEOUT)
        if exc[0] is None and self.job_id is not None:
            try:
                self._update()
            except (OSError, ValueError, KeyError):
                pass   # the finished pipeline's metrics give the last counts

    def _run(self) -> None:
        while not self._stop.wait(POLL_SECONDS):
            try:
                if self.job_id is None:
                    self.job_id = find_job(self.master, self.job_name)
                    if self.job_id is not None:
                        print(f"csdata: Flink job {self.job_id} · {web_ui_link(self.master, self.job_id)}",
                              file=sys.stderr, flush=True)
                    continue
                self._update()
            except (OSError, ValueError, KeyError, http.client.HTTPException):
                continue   # the REST API is busy or restarting: the next poll tries again

    def _update(self) -> None:
        from transforms.core.accounting import NAMESPACE

        if self.job_id is None:
            return
        if self._progress is not None:
            accumulators = rest_get(self.master, f"/jobs/{self.job_id}/accumulators")
            self._progress.commit(user_counters(accumulators, NAMESPACE))
        self._report_failures()

    def _report_failures(self) -> None:
        """Print the task failures the job's exception history gained since the last poll (a
        job that then fails for good is reported by `run_on_cluster`). A failure that a restart
        cannot mend (a full disk, a bucket that refuses writes) cancels the job at once instead
        of letting the restart strategy rerun it to the same end."""
        from pipeline.engine.stores import permanent_storage_failure

        if self.job_id is None or self.fatal is not None:
            return
        history = rest_get(self.master, f"/jobs/{self.job_id}/exceptions").get("exceptionHistory", {})
        entries = list(reversed(history.get("entries", [])))   # Flink lists the newest first
        for entry in entries[self._failures_seen:]:
            reason = permanent_storage_failure(entry.get("stacktrace") or "")
            if reason is not None:
                self.fatal = f"{reason}: {root_cause(entry.get('stacktrace') or '')}"
                cancel_job(self.master, self.job_id)
                return
            if self._enabled:
                print(failure_line(self.job_id, entry), file=sys.stderr, flush=True)
        self._failures_seen = max(self._failures_seen, len(entries))


RUNNING: list[JobMonitor] = []   # the monitors of this process's jobs on a cluster, while they run
CANCEL_WAIT = 10.0


def cancel_running_jobs(wait: float = CANCEL_WAIT) -> list[str]:
    """Cancel this process's jobs on their clusters (Ctrl-C, SIGTERM) and wait up to `wait`
    seconds for each to stop writing; returns the ids of the jobs cancelled. Errors are
    swallowed: the caller is on its way out."""
    import time

    cancelled = []
    for monitor in list(RUNNING):
        try:
            job_id = monitor.job_id or find_job(monitor.master, monitor.job_name)
            if job_id is None:
                continue
            cancel_job(monitor.master, job_id)
            cancelled.append(job_id)
            deadline = time.monotonic() + wait
            while time.monotonic() < deadline:
                if rest_get(monitor.master, f"/jobs/{job_id}").get("state") in TERMINAL_STATES:
                    break
                time.sleep(0.2)
        except (OSError, ValueError):
            pass
        if monitor.stop_job_server is not None:
            try:
                monitor.stop_job_server()   # Beam's JobServer.stop: the job server's Java process
            except Exception:  # noqa: BLE001 - on the way out; the process is ending anyway
                pass
    return cancelled


TERMINAL_STATES = frozenset({"CANCELED", "FAILED", "FINISHED"})


def cancel_job(master: str, job_id: str) -> None:
    """Ask the cluster to cancel job `job_id` (it stops its tasks shortly after)."""
    request = urllib.request.Request(f"{rest_url(master)}/jobs/{job_id}?mode=cancel", method="PATCH")
    urllib.request.urlopen(request, timeout=REST_TIMEOUT).close()


def run_on_cluster(pipeline: Any, master: str, progress: Optional[Any] = None) -> Any:
    """Run `pipeline` on the Flink cluster at `master` to the end, with `JobMonitor` showing it
    (its counters into `progress`, a `pipeline.engine.progress.RunProgress`); a failed job
    raises `JobFailed` with its id and first worker error."""
    from apache_beam.options.pipeline_options import GoogleCloudOptions

    from transforms.core.errors import JobFailed
    from transforms.core.progress.lines import enabled_by_env

    job_name = pipeline.options.view_as(GoogleCloudOptions).job_name
    job_errors = JobErrors()
    root = logging.getLogger()
    root.addFilter(job_errors)
    try:
        with JobMonitor(master, job_name, progress, enabled=enabled_by_env()) as monitor:
            RUNNING.append(monitor)
            ours = signal.getsignal(signal.SIGINT)
            result = pipeline.run()
            # Beam's job service handle takes SIGINT for its own `stop` (the job server dies and
            # the driver ends in a gRPC traceback, the job running on): csdata's handler comes
            # back, and cancelling the job stops that job server after it, through the `stop`
            # of the object whose method Beam's handler is (its handler itself would call ours).
            beam_handler = signal.getsignal(signal.SIGINT)
            if beam_handler is not ours and callable(beam_handler):
                monitor.stop_job_server = getattr(getattr(beam_handler, "__self__", None), "stop", None)
                signal.signal(signal.SIGINT, ours)
            try:
                result.wait_until_finish()
            except RuntimeError as error:
                job_id = monitor.job_id or find_job(master, job_name)
                if job_id is None:
                    raise
                cause = monitor.fatal or root_cause(
                    job_exception(master, job_id) or (job_errors.messages or [str(error)])[0])
                raise JobFailed(f"Flink job {job_id} failed: {cause} "
                                f"(logs: {web_ui_link(master, job_id, running=False)})") from None
            if monitor.fatal is not None:   # cancelled by the monitor as the job was finishing
                raise JobFailed(f"Flink job {monitor.job_id} failed: {monitor.fatal}")
    finally:
        root.removeFilter(job_errors)
        RUNNING[:] = [m for m in RUNNING if m.job_name != job_name]
    return result


class JobErrors(logging.Filter):
    """Holds back the error messages Beam's portable runner logs (on the root logger) as a job
    fails, so that the failure is the one line `run_on_cluster` prints; keeps them."""

    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.ERROR and record.pathname.endswith("portable_runner.py"):
            self.messages.append(record.getMessage())
            return False
        return True
