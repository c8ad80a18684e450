"""Running csdata's pipelines on a Flink cluster: `--runner=FlinkRunner --flink_master=HOST:PORT`
is all a user adds, and csdata fills in what Beam's defaults get wrong without Docker.

- The SDK harness: `--environment_type=PROCESS` with `csdata-sdk-worker` (`pipeline.engine.worker_boot`,
  installed with csdata beside this Python) as the boot command, so each TaskManager starts its
  own Python workers. Beam's default asks for Docker; LOOPBACK would run all Python work in the
  submitting process.
- `--flink_version`: the cluster's own Flink version (REST `/config`), so that the job server
  Beam picks is the one for that cluster (Beam's default is its newest Flink).
- Beam's Flink job server: Beam's own (the jar of its version that it downloads from Maven
  Central, or finds in its jar cache) wherever it can get it. Only where it cannot (offline,
  or a registry that does not serve it) and the cluster runs the Flink that csdata's fallback
  job server is built for: the class path that `make flink-fetch` (services/flink) caches, as
  `--flink_job_server_jar`.
- `--parallelism`: all the cluster's task slots, free or not (Flink's own default is 1 in
  PyPI's config); the job waits for the slots other jobs hold.
- `--experiments=pre_optimize=all`: the graph is fused by Beam's Python SDK, not by the job
  server (whose fuser fails on a Flatten of a Flatten).
- `--job_name`: a unique `csdata-...`, by which the driver finds its job on the cluster.

Whatever the user passes wins. The cluster's REST API (the `--flink_master` address) answers
the slot count before any work starts, and the job's progress and outcome while it runs.
"""
from __future__ import annotations

import json
import logging
import signal
import sys
import urllib.error
import urllib.parse
import urllib.request
import uuid
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from transforms.core.cache import cache_dir
from transforms.core.errors import UserError

FLINK_RUNNER_NAMES = frozenset({"flinkrunner", "apache_beam.runners.portability.flink_runner.flinkrunner"})
EMBEDDED_MASTERS = frozenset({"[local]", "[auto]", "[collection]"})
BOOT_COMMAND = "csdata-sdk-worker"
# The fallback job server of `services/flink/flink.sh fetch`: keep equal to `beam.version` and
# `flink.minor` in services/flink/job-server/pom.xml. It serves current Python SDKs too (the
# Flink suite compares every table with an in-process run: docs/runners.md, "Versions").
FALLBACK_BEAM_VERSION = "2.62.0"
FALLBACK_FLINK_VERSION = "1.19"
REST_TIMEOUT = 5.0
PROBE_TIMEOUT = 5.0   # asking Maven Central whether Beam's own job server is there


def job_server_jar() -> Path:
    """Where `services/flink/flink.sh fetch` puts the fallback job server's launcher jar."""
    return cache_dir() / f"beam-flink-job-server-{FALLBACK_BEAM_VERSION}" / "job-server.jar"


def option_value(args: Sequence[str], name: str) -> Optional[str]:
    """The last value of `--name` in `args` (`--name=V` or `--name V`), else None."""
    value = None
    flag = f"--{name}"
    for i, arg in enumerate(args):
        if arg.startswith(flag + "="):
            value = arg[len(flag) + 1:]
        elif arg == flag and i + 1 < len(args):
            value = args[i + 1]
    return value


def on_cluster(runner: Any, master: Optional[str]) -> Optional[str]:
    """`master` when `runner` is Beam's FlinkRunner and `master` a real cluster (not one of the
    runner's embedded ones), else None."""
    if not isinstance(runner, str) or runner.lower() not in FLINK_RUNNER_NAMES:
        return None
    return None if master is None or master in EMBEDDED_MASTERS else master


def flink_master(args: Sequence[str]) -> Optional[str]:
    """The `--flink_master` of a FlinkRunner run on a real cluster, else None."""
    return on_cluster(option_value(args, "runner"), option_value(args, "flink_master"))


def cluster_master(options: Any) -> Optional[str]:
    """The Flink cluster a pipeline's options run it on (as `flink_master`), else None."""
    from apache_beam.options.pipeline_options import FlinkRunnerOptions, StandardOptions

    return on_cluster(options.view_as(StandardOptions).runner,
                      options.view_as(FlinkRunnerOptions).flink_master)


def rest_url(master: str) -> str:
    """The REST base URL of a `--flink_master` value (`host:port` or `http://host:port`)."""
    return master.rstrip("/") if "://" in master else f"http://{master.rstrip('/')}"


def rest_get(master: str, path: str, timeout: float = REST_TIMEOUT) -> Any:
    """GET a path of the cluster's REST API, as JSON."""
    with urllib.request.urlopen(f"{rest_url(master)}{path}", timeout=timeout) as response:
        return json.load(response)


def total_slots(master: str) -> int:
    """All the cluster's task slots (REST `/overview`'s `slots-total`), busy or free: a job of
    that parallelism waits for the slots other jobs hold, rather than running, at any scale,
    on the few that happened to be free when it was submitted. A one-line UserError when its
    REST API does not answer or it has no slot at all."""
    try:
        overview = rest_get(master, "/overview")
    except (urllib.error.URLError, OSError, ValueError) as error:
        reason = getattr(error, "reason", error)
        raise UserError(f"--flink_master {master}: no Flink REST API answers there ({reason}); "
                        "start a cluster (make flink-up) or fix the address") from None
    slots = int(overview.get("slots-total", 0))
    if slots < 1:
        raise UserError(f"--flink_master {master}: the cluster has no task slot "
                        f"({overview.get('taskmanagers', 0)} TaskManagers)")
    return slots


def cluster_flink_version(master: str) -> Optional[str]:
    """The cluster's Flink version as `major.minor` (REST `/config`), None when it does not say."""
    try:
        version = str(rest_get(master, "/config").get("flink-version", ""))
    except (urllib.error.URLError, OSError, ValueError):
        return None
    parts = version.split(".")
    return ".".join(parts[:2]) if len(parts) >= 2 and all(p.isdigit() for p in parts[:2]) else None


def beam_flink_versions() -> list[str]:
    """The Flink versions this Beam publishes job servers for (its `--flink_version` choices)."""
    from apache_beam.options.pipeline_options import FlinkRunnerOptions

    return list(FlinkRunnerOptions.PUBLISHED_FLINK_VERSIONS)


def beam_job_server(flink_version: str) -> str:
    """The Maven Central URL of this Beam's own job server for `flink_version` (what Beam's
    FlinkRunner downloads when no `--flink_job_server_jar` is given)."""
    from apache_beam.utils.subprocess_server import JavaJarServer

    return JavaJarServer.path_to_beam_jar(f":runners:flink:{flink_version}:job-server:shadowJar")


def beam_can_get(url: str, jar_cache: Optional[str] = None) -> bool:
    """Whether Beam can use its own job server at `url`: already in its jar cache, or served
    there now (a HEAD request answered 200 within `PROBE_TIMEOUT`)."""
    from apache_beam.utils.subprocess_server import JavaJarServer

    cache = Path(jar_cache or JavaJarServer.JAR_CACHE)
    if (cache / Path(urllib.parse.urlparse(url).path).name).is_file() or Path(url).is_file():
        return True
    request = urllib.request.Request(url, method="HEAD")
    try:
        with urllib.request.urlopen(request, timeout=PROBE_TIMEOUT) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError, ValueError):
        return False


def job_server_args(args: Sequence[str], master: str) -> list[str]:
    """`--flink_version` and, where Beam cannot get its own job server, csdata's fallback
    (see the module docstring); nothing where the user names a job server or endpoint."""
    if any(option_value(args, name) is not None
           for name in ("flink_job_server_jar", "job_endpoint")) or "--flink_submit_uber_jar" in args:
        return []
    added = []
    version = option_value(args, "flink_version")
    if version is None:
        version = cluster_flink_version(master)
        if version is not None and version not in beam_flink_versions():
            raise UserError(f"--flink_master {master} runs Flink {version}; this Beam has job servers for "
                            f"Flink {', '.join(beam_flink_versions())}: run a cluster of one of those, "
                            "or pass --flink_job_server_jar")
        if version is not None:
            added.append(f"--flink_version={version}")
    version = version or beam_flink_versions()[-1]
    url = beam_job_server(version)
    if beam_can_get(url, option_value(args, "jar_cache_dir")):
        return added
    jar = job_server_jar()
    if version != FALLBACK_FLINK_VERSION:
        raise UserError(f"Beam's job server for Flink {version} can neither be found in its jar cache nor "
                        f"downloaded ({url}); put it there or pass --flink_job_server_jar (csdata's offline "
                        f"fallback serves Flink {FALLBACK_FLINK_VERSION} only)")
    if not jar.is_file():
        raise UserError(f"Beam's Flink job server cannot be downloaded ({url}), and csdata's fallback is not "
                        f"in {jar.parent}: run `make flink-fetch` once (it needs Maven), or pass "
                        "--flink_job_server_jar")
    return [*added, f"--flink_job_server_jar={jar}"]


def boot_command() -> Path:
    """`csdata-sdk-worker` beside this Python (the same path on every node of a cluster whose
    nodes install csdata alike)."""
    return Path(sys.executable).parent / BOOT_COMMAND


def cluster_args(args: Sequence[str]) -> list[str]:
    """`args` with csdata's FlinkRunner defaults added where the user gave none (see the
    module docstring); unchanged for every other runner."""
    master = flink_master(args)
    if master is None:
        return list(args)
    added = []
    if option_value(args, "environment_type") is None:
        added.append("--environment_type=PROCESS")
        named = option_value(args, "environment_config") is not None or any(
            a.startswith("--environment_options=process_command=") for a in args)
        if not named:
            boot = boot_command()
            if not boot.is_file():
                raise UserError(f"{boot} is missing: install csdata into this Python (pip install "
                                "csdata), or pass --environment_type and its command")
            added.append(f"--environment_options=process_command={boot}")
    if option_value(args, "parallelism") is None:
        added.append(f"--parallelism={total_slots(master)}")
    added.extend(job_server_args(args, master))
    if not any(a.startswith("--experiments=pre_optimize=") for a in args):
        # Fuse on the Python side: the job server's own fuser rejects a Flatten that reads
        # another Flatten's output ("PCollectionNodes ... were consumed but never produced"),
        # which csdata's summaries do (the stage tallies flattened, then with a start marker).
        added.append("--experiments=pre_optimize=all")
    if option_value(args, "job_name") is None:   # how the driver finds its job on the cluster
        added.append(f"--job_name=csdata-{uuid.uuid4().hex[:12]}")
    return [*args, *added]


# ---- a running job: its id, progress and outcome, from the cluster's REST API -----------------

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
            except (OSError, ValueError, KeyError):
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
    from transforms.core.progress_lines import enabled_by_env

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
