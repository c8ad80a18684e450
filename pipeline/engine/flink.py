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
- `--environment_cache_millis`, where the cluster carries Beam's runner in its own class path
  (csdata's cluster does; its configuration names the version, `csdata.beam-runner-version`,
  and the job goes to a job server of that version): a job's Python workers serve all its
  stages, kept 10 s for the next one, or at most half the cluster's first restart delay
  (`pipeline.engine.flink_config`). Elsewhere Beam boots new workers for each stage.

Whatever the user passes wins. The cluster's REST API (the `--flink_master` address) answers
the slot count before any work starts, and the job's progress and outcome while it runs.
"""
from __future__ import annotations

import http.client
import json
import sys
import urllib.error
import urllib.parse
import urllib.request
import uuid
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

from pipeline.engine.flink_config import beam_runner_version, environment_cache_millis
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
PREFLIGHT_TRIES = 3   # REST reads before a run, each up to REST_TIMEOUT
PROBE_TIMEOUT = 5.0   # asking Maven Central whether Beam's own job server is there
# The options that Beam's Flink job server describes (its `DescribePipelineOptions`, 2.62) for
# the Flink runner and that Beam's Python SDK does not define: the SDK learns them from the job
# server only once that runs, so csdata's check of the command line (which refuses options nobody
# knows, before any work) takes them for a run on a cluster.
JOB_SERVER_OPTIONS = frozenset({
    "allow_non_restored_state", "attached_mode", "auto_watermark_interval",
    "checkpoint_timeout_millis", "checkpointing_interval", "checkpointing_mode", "disable_metrics",
    "enable_stable_input_drain", "environment_expiration_millis", "execution_mode_for_batch",
    "execution_retry_delay", "externalized_checkpoints_enabled", "fail_on_checkpointing_errors",
    "faster_copy", "file_input_split_max_size_m_b", "finish_bundle_before_checkpointing",
    "flink_conf_dir", "force_unaligned_checkpoint_enabled", "job_check_interval_in_secs",
    "latency_tracking_interval", "load_balance_bundles", "max_bundle_size", "max_bundle_time_mills",
    "min_pause_between_checkpoints", "num_concurrent_checkpoints", "number_of_execution_retries",
    "object_reuse", "operator_chaining", "re_iterable_group_by_key_result",
    "report_checkpoint_duration", "retain_externalized_checkpoints_on_cancellation", "savepoint_path",
    "shutdown_sources_after_idle_ms", "state_backend", "state_backend_factory",
    "state_backend_storage_path", "unaligned_checkpoint_enabled", "use_data_stream_for_batch",
})


def job_server_jar(beam_version: str = FALLBACK_BEAM_VERSION) -> Path:
    """Where `services/flink/flink.sh fetch` puts the launcher jar of the job server it assembles
    for Flink 1.19 (the fallback's Beam version, or `CSDATA_BEAM_RUNNER_VERSION`)."""
    return cache_dir() / f"beam-flink-job-server-{beam_version}" / "job-server.jar"


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


def rest_get(master: str, path: str, timeout: Optional[float] = None) -> Any:
    """GET a path of the cluster's REST API, as JSON (waiting up to `REST_TIMEOUT` by default)."""
    with urllib.request.urlopen(f"{rest_url(master)}{path}", timeout=timeout or REST_TIMEOUT) as response:
        return json.load(response)


def passing_trouble(error: BaseException) -> bool:
    """Whether a REST call failed by timing out or by an answer cut short (a busy or restarting
    JobManager), not by an answer or a refusal."""
    reason = getattr(error, "reason", error)
    return (isinstance(reason, (TimeoutError, http.client.HTTPException))
            or "timed out" in str(reason))


def rest_get_patiently(master: str, path: str, tries: int = PREFLIGHT_TRIES) -> Any:
    """`rest_get`, asked again when it times out or its answer is cut short: before a run, a
    JobManager busy with other jobs (a submission, a collection) may answer late, and a late
    answer is still the answer."""
    attempt = 1
    while True:
        try:
            return rest_get(master, path)
        except (urllib.error.URLError, OSError, http.client.HTTPException) as error:
            if attempt >= tries or isinstance(error, urllib.error.HTTPError) or not passing_trouble(error):
                raise
            attempt += 1


def total_slots(master: str) -> int:
    """All the cluster's task slots (REST `/overview`'s `slots-total`), busy or free: a job of
    that parallelism waits for the slots other jobs hold, rather than running, at any scale,
    on the few that happened to be free when it was submitted. A one-line UserError when its
    REST API does not answer or it has no slot at all."""
    try:
        overview = rest_get_patiently(master, "/overview")
    except (urllib.error.URLError, OSError, ValueError, http.client.HTTPException) as error:
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
        version = str(rest_get_patiently(master, "/config").get("flink-version", ""))
    except (urllib.error.URLError, OSError, ValueError, http.client.HTTPException):
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


def cluster_config(master: str, needed: bool = True) -> dict[str, str]:
    """The cluster's configuration (REST `/jobmanager/config`) as key -> value; {} where the
    REST API has no such report (404). Where it does not answer, a one-line UserError if the
    job server depends on it (`needed`: guessing could pick one whose classes clash with the
    cluster's), else {}."""
    try:
        entries = rest_get_patiently(master, "/jobmanager/config")
    except (urllib.error.URLError, OSError, ValueError, http.client.HTTPException) as error:
        if not needed or (isinstance(error, urllib.error.HTTPError) and error.code == 404):
            return {}
        raise UserError(f"--flink_master {master}: its REST API did not say its configuration "
                        f"({getattr(error, 'reason', error)}); try again, or pass --flink_job_server_jar") from None
    return {str(e["key"]): str(e.get("value", "")) for e in entries if isinstance(e, dict) and "key" in e} \
        if isinstance(entries, list) else {}


def names_job_server(args: Sequence[str]) -> bool:
    """Whether the user names the job server (a jar, an endpoint, or Beam's uber-jar submission)."""
    return any(option_value(args, name) is not None
               for name in ("flink_job_server_jar", "job_endpoint")) or "--flink_submit_uber_jar" in args


def job_server_args(args: Sequence[str], master: str, config: Mapping[str, str]) -> list[str]:
    """`--flink_version` and, where Beam cannot get its own job server or the cluster carries
    the runner of csdata's fallback, that fallback (see the module docstring); nothing where the
    user names a job server or endpoint."""
    if names_job_server(args):
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
    carried = beam_runner_version(config)
    if carried is not None:
        # The cluster's own Beam classes run the job: its job server must be of that version.
        assembled = job_server_jar(carried)
        if version == FALLBACK_FLINK_VERSION and assembled.is_file():
            return [*added, f"--flink_job_server_jar={assembled}"]
        if carried == installed_beam_version() and beam_can_get(url, option_value(args, "jar_cache_dir")):
            return added
        raise UserError(f"--flink_master {master} runs Beam {carried}'s Flink runner from its own class "
                        f"path, and no job server of Beam {carried} for Flink {version} is here: pass "
                        f"--flink_job_server_jar (or run `CSDATA_BEAM_RUNNER_VERSION={carried} make "
                        "flink-fetch` for csdata's cluster)")
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


def installed_beam_version() -> str:
    """The version of the Beam Python SDK this process runs."""
    import apache_beam

    return str(apache_beam.__version__)


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
    config = cluster_config(master, needed=not names_job_server(args))
    added.extend(job_server_args(args, master, config))
    if not any(a.startswith("--experiments=pre_optimize=") for a in args):
        # Fuse on the Python side: the job server's own fuser rejects a Flatten that reads
        # another Flatten's output ("PCollectionNodes ... were consumed but never produced"),
        # which csdata's summaries do (the stage tallies flattened, then with a start marker).
        added.append("--experiments=pre_optimize=all")
    if option_value(args, "environment_cache_millis") is None and beam_runner_version(config) is not None:
        added.append(f"--environment_cache_millis={environment_cache_millis(config)}")
    if option_value(args, "job_name") is None:   # how the driver finds its job on the cluster
        added.append(f"--job_name=csdata-{uuid.uuid4().hex[:12]}")
    return [*args, *added]
