"""csdata's FlinkRunner defaults and the reading of a job's REST reports (`pipeline.engine.flink`),
without a cluster: the end-to-end runs on a real one are in tests/flink."""
from __future__ import annotations

import base64
import json
import socket
from typing import Optional

import apache_beam
import pytest

from pipeline.engine.flink import FALLBACK_BEAM_VERSION, cluster_args, job_server_jar, option_value
from pipeline.engine.flink_jobs import decode_varint, root_cause, user_counters
from pipeline.engine.runner import check_beam_args
from transforms.core.errors import UserError


@pytest.fixture
def cached_jar(tmp_path, monkeypatch):
    monkeypatch.setenv("CSDATA_CACHE_DIR", str(tmp_path))
    jar = job_server_jar()
    jar.parent.mkdir(parents=True)
    jar.write_bytes(b"PK")
    return jar


def rest_server(routes: dict):
    """A loopback HTTP server answering GET and HEAD: `routes` maps a path to (status, JSON body);
    any other path is 404. It stands for a Flink cluster's REST API and for a Maven repository."""
    import http.server
    import threading

    class Handler(http.server.BaseHTTPRequestHandler):
        def answer(self, with_body: bool) -> None:
            status, body = routes.get(self.path, (404, {}))
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if with_body:
                self.wfile.write(data)

        def do_GET(self):
            self.answer(True)

        def do_HEAD(self):
            self.answer(False)

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


OVERVIEW = {"taskmanagers": 2, "slots-total": 4, "slots-available": 4}
BEAM_JAR = "/maven/beam-runners-flink-job-server.jar"


@pytest.fixture
def cluster(monkeypatch):
    """A Flink 1.19 cluster's REST API and a Maven repository that lacks Beam's job server (as
    the registry reached here does); `cluster(flink=..., maven=200)` changes either, and
    `beam=VERSION` makes the cluster name the Beam runner in its class path. Returns the
    FlinkRunner arguments that name the cluster."""
    servers = []

    def start(flink: str = "1.19.3", maven: int = 404, beam: Optional[str] = None,
              restarts: Optional[dict[str, str]] = None) -> list[str]:
        restarts = restarts or {}
        routes = {"/overview": (200, OVERVIEW), "/config": (200, {"flink-version": flink}),
                  BEAM_JAR: (maven, {})}
        if beam is not None:   # the cluster carries this Beam's runner in its class path
            routes["/jobmanager/config"] = (200, [{"key": "parallelism.default", "value": "4"},
                                                  {"key": "csdata.beam-runner-version", "value": beam},
                                                  *({"key": k, "value": v} for k, v in restarts.items())])
        server = rest_server(routes)
        servers.append(server)
        port = server.server_port
        monkeypatch.setattr("pipeline.engine.flink.beam_job_server",
                            lambda version: f"http://127.0.0.1:{port}{BEAM_JAR}")
        return ["--runner=FlinkRunner", f"--flink_master=127.0.0.1:{port}"]

    yield start
    for server in servers:
        server.shutdown()


def test_other_runners_are_left_alone():
    for args in ([], ["--runner=DirectRunner"], ["--runner=FlinkRunner"],
                 ["--runner=FlinkRunner", "--flink_master=[local]"]):
        assert cluster_args(args) == args


def test_offline_a_cluster_run_gets_process_workers_the_fallback_job_server_and_a_job_name(
        cached_jar, cluster):
    args = cluster_args([*cluster(), "--parallelism=3"])
    assert option_value(args, "environment_type") == "PROCESS"
    command = option_value(args, "environment_options")
    assert command is not None and command.startswith("process_command=/")
    assert command.endswith("/csdata-sdk-worker")
    assert option_value(args, "flink_version") == "1.19"      # the cluster's, not Beam's newest
    assert option_value(args, "flink_job_server_jar") == str(cached_jar)
    assert option_value(args, "parallelism") == "3"
    assert (option_value(args, "job_name") or "").startswith("csdata-")
    assert option_value(args, "experiments") == "pre_optimize=all"


def test_beam_keeps_its_own_job_server_where_it_can_download_it(cached_jar, cluster):
    args = cluster_args(cluster(maven=200))
    assert option_value(args, "flink_version") == "1.19"
    assert option_value(args, "flink_job_server_jar") is None


def test_beam_keeps_its_own_job_server_found_in_its_jar_cache(cached_jar, cluster, tmp_path):
    jars = tmp_path / "beam-jars"
    jars.mkdir()
    (jars / BEAM_JAR.rsplit("/", 1)[1]).write_bytes(b"PK")
    args = cluster_args([*cluster(), f"--jar_cache_dir={jars}"])
    assert option_value(args, "flink_job_server_jar") is None


def test_a_cluster_that_carries_the_fallbacks_runner_gets_the_fallback_even_where_beams_own_is_there(
        cached_jar, cluster):
    args = cluster_args(cluster(maven=200, beam=FALLBACK_BEAM_VERSION))
    assert option_value(args, "flink_job_server_jar") == str(cached_jar)
    assert option_value(args, "environment_cache_millis") == "10000"   # no restart strategy set


def test_the_workers_are_kept_under_half_the_clusters_first_restart_delay(cached_jar, cluster):
    restarts = {"restart-strategy.type": "fixed-delay", "restart-strategy.fixed-delay.delay": "3 s"}
    args = cluster_args(cluster(beam=FALLBACK_BEAM_VERSION, restarts=restarts))
    assert option_value(args, "environment_cache_millis") == "1500"
    mine = cluster_args([*cluster(beam=FALLBACK_BEAM_VERSION, restarts=restarts), "--environment_cache_millis=0"])
    assert option_value(mine, "environment_cache_millis") == "0"


def test_a_cluster_without_beams_runner_gets_no_worker_cache(cached_jar, cluster):
    assert option_value(cluster_args(cluster()), "environment_cache_millis") is None


def test_a_cluster_that_carries_another_assembled_runner_gets_its_job_server(cached_jar, cluster):
    # `CSDATA_BEAM_RUNNER_VERSION=2.70.0 make flink-fetch flink-up`: the job server assembled for
    # that version, not the fallback's.
    other = job_server_jar("2.70.0")
    other.parent.mkdir(parents=True)
    other.write_bytes(b"PK")
    args = cluster_args(cluster(maven=200, beam="2.70.0"))
    assert option_value(args, "flink_job_server_jar") == str(other) != str(cached_jar)


def test_a_cluster_that_carries_this_beams_runner_gets_beams_own_job_server(cached_jar, cluster):
    args = cluster_args(cluster(maven=200, beam=apache_beam.__version__))
    assert option_value(args, "flink_job_server_jar") is None
    assert option_value(args, "flink_version") == "1.19"


@pytest.mark.parametrize("maven", [200, 404])
def test_a_cluster_that_carries_a_runner_no_job_server_here_matches_is_one_line(cached_jar, cluster, maven):
    with pytest.raises(UserError) as error:
        cluster_args(cluster(maven=maven, beam="2.41.0"))
    assert "Beam 2.41.0" in str(error.value) and "--flink_job_server_jar" in str(error.value)
    assert "\n" not in str(error.value)


def test_without_the_fallbacks_jar_a_cluster_carrying_its_runner_is_one_line(tmp_path, monkeypatch, cluster):
    monkeypatch.setenv("CSDATA_CACHE_DIR", str(tmp_path))
    with pytest.raises(UserError, match=f"Beam {FALLBACK_BEAM_VERSION}.*make flink-fetch"):
        cluster_args(cluster(maven=200, beam=FALLBACK_BEAM_VERSION))


def slow_cluster(monkeypatch, late: dict[str, int], beam: str):
    """A cluster's REST API that answers each path of `late` only after that many requests time
    out (csdata waits 0.2 s here), as a JobManager busy with another job's submission does."""
    import http.server
    import threading
    import time

    monkeypatch.setattr("pipeline.engine.flink.REST_TIMEOUT", 0.2)
    routes = {"/overview": OVERVIEW, "/config": {"flink-version": "1.19.3"},
              "/jobmanager/config": [{"key": "csdata.beam-runner-version", "value": beam}]}
    asked: dict[str, int] = {}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            asked[self.path] = asked.get(self.path, 0) + 1
            if asked[self.path] <= late.get(self.path, 0):
                time.sleep(0.6)
            data = json.dumps(routes.get(self.path, {})).encode()
            self.send_response(200 if self.path in routes else 404)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, asked


def test_a_busy_jobmanager_is_asked_again_before_a_run(cached_jar, monkeypatch):
    server, asked = slow_cluster(monkeypatch, {"/overview": 2, "/jobmanager/config": 2}, FALLBACK_BEAM_VERSION)
    try:
        args = cluster_args(["--runner=FlinkRunner", f"--flink_master=127.0.0.1:{server.server_port}"])
    finally:
        server.shutdown()
    assert option_value(args, "parallelism") == "4"                       # the third answer
    assert option_value(args, "flink_job_server_jar") == str(cached_jar)
    assert asked["/overview"] == 3 and asked["/jobmanager/config"] == 3


@pytest.mark.parametrize("fault", ["three answers too late", "HTTP 503"])
def test_a_configuration_the_cluster_does_not_give_is_one_line_not_a_guess(cached_jar, monkeypatch, fault):
    if fault == "HTTP 503":   # a JobManager electing its leader
        server = rest_server({"/overview": (200, OVERVIEW), "/config": (200, {"flink-version": "1.19.3"}),
                              "/jobmanager/config": (503, {"errors": ["leader not elected"]})})
    else:
        server, _ = slow_cluster(monkeypatch, {"/jobmanager/config": 3}, FALLBACK_BEAM_VERSION)
    try:
        with pytest.raises(UserError, match="did not say its configuration") as error:
            cluster_args(["--runner=FlinkRunner", f"--flink_master=127.0.0.1:{server.server_port}"])
    finally:
        server.shutdown()
    assert "\n" not in str(error.value)


def test_a_users_own_job_server_needs_no_answer_about_the_configuration(cached_jar, monkeypatch):
    server, _ = slow_cluster(monkeypatch, {"/jobmanager/config": 3}, FALLBACK_BEAM_VERSION)
    try:
        args = cluster_args(["--runner=FlinkRunner", f"--flink_master=127.0.0.1:{server.server_port}",
                             "--flink_job_server_jar=/opt/js.jar"])
    finally:
        server.shutdown()
    assert option_value(args, "flink_job_server_jar") == "/opt/js.jar"
    assert option_value(args, "environment_cache_millis") is None   # the carried runner unknown


def test_what_the_user_passes_wins(cached_jar, cluster):
    master = cluster()
    given = [*master, "--environment_type=LOOPBACK", "--flink_job_server_jar=/opt/js.jar",
             "--parallelism", "7", "--job_name=mine", "--experiments=pre_optimize=default",
             "--environment_cache_millis=0"]
    assert cluster_args(given) == given
    endpoint = cluster_args([*master, "--job_endpoint=localhost:8099", "--parallelism=2"])
    assert option_value(endpoint, "flink_job_server_jar") is None
    assert option_value(endpoint, "flink_version") is None


@pytest.mark.parametrize("flink, expected", [
    ("1.17.2", "runs Flink 1.17"),                  # no job server of this Beam fits it
    ("2.2.0", "--flink_job_server_jar"),             # Beam's fits, but offline; the fallback does not
])
def test_a_cluster_no_job_server_serves_is_one_line(cached_jar, cluster, flink, expected):
    with pytest.raises(UserError) as error:
        cluster_args([*cluster(flink=flink), "--parallelism=2"])
    assert expected in str(error.value) and "\n" not in str(error.value)


def test_a_missing_fallback_job_server_names_the_make_target(tmp_path, monkeypatch, cluster):
    monkeypatch.setenv("CSDATA_CACHE_DIR", str(tmp_path))
    with pytest.raises(UserError, match="make flink-fetch"):
        cluster_args([*cluster(), "--parallelism=2"])


def test_an_unreachable_cluster_is_one_line_before_any_work(cached_jar):
    with socket.socket() as probe:     # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(UserError) as error:
        cluster_args(["--runner=FlinkRunner", f"--flink_master=localhost:{port}"])
    message = str(error.value)
    assert f"localhost:{port}" in message and "make flink-up" in message and "\n" not in message


def test_varints_decode_as_protobuf_writes_them():
    assert decode_varint(b"\x00") == 0
    assert decode_varint(b"\x0b") == 11
    assert decode_varint(b"\xe8\x07") == 1000      # 1000 = 0b111_1101000: 0x68|0x80, 0x07
    assert decode_varint(b"\xac\x02") == 300       # protobuf's documented example


def counter(name: str, value_b64: str, namespace: str = "csdata") -> dict:
    return {"urn": "beam:metric:user:sum_int64:v1", "type": "beam:metrics:sum_int64:v1",
            "payload": value_b64, "labels": {"NAMESPACE": namespace, "NAME": name, "PTRANSFORM": "s"}}


def test_user_counters_sum_the_steps_of_the_namespace():
    b64 = {n: base64.b64encode(bytes([n])).decode() for n in (3, 4, 9)}
    metrics = {"metrics": {"attempted": [
        counter("progress.articles.read", b64[3]), counter("progress.articles.read", b64[4]),
        counter("progress.articles.read", b64[9], namespace="other"),
        {"urn": "beam:metric:element_count:v1", "payload": b64[9], "labels": {"PCOLLECTION": "p"}},
    ]}}
    report = {"user-task-accumulators": [{"name": "__metricscontainers", "type": "MetricsAccumulator",
                                          "value": json.dumps(metrics)}]}
    assert user_counters(report, "csdata") == {"progress.articles.read": 7}


def test_the_root_cause_of_a_failed_job():
    java = ("org.apache.flink.runtime.JobException: Recovery is suppressed\n\tat a.b(C.java:1)\n"
            "Caused by: java.lang.Exception: wrapper\n"
            "Caused by: java.lang.IllegalStateException: Process died with exit code 1\n\t... 19 more")
    assert root_cause(java) == "java.lang.IllegalStateException: Process died with exit code 1"
    python = ("java.lang.RuntimeException: Error received from SDK harness for instruction 4: "
              "Traceback (most recent call last):\n  File \"x.py\", line 1, in f\n    raise ValueError('bad row')\n"
              "ValueError: bad row\n\nCaused by: java.lang.Exception: outer")
    assert root_cause(python) == "ValueError: bad row"
    assert root_cause("java.io.IOException: disk full") == "java.io.IOException: disk full"


@pytest.mark.parametrize("available", [4, 3, 0])   # all free, one held by another job, all held
def test_parallelism_is_all_the_slots_of_the_cluster_free_or_not(cached_jar, available):
    server = rest_server({"/overview": (200, {"taskmanagers": 2, "slots-total": 4,
                                              "slots-available": available})})
    try:
        args = cluster_args(["--runner=FlinkRunner", f"--flink_master=127.0.0.1:{server.server_port}",
                             "--flink_job_server_jar=/opt/js.jar"])
    finally:
        server.shutdown()
    assert option_value(args, "parallelism") == "4"    # the job waits for the slots others hold


def test_a_given_parallelism_wins_over_the_slot_count(cached_jar):
    server = rest_server({"/overview": (200, {"taskmanagers": 2, "slots-total": 4, "slots-available": 4})})
    try:
        args = cluster_args(["--runner=FlinkRunner", f"--flink_master=127.0.0.1:{server.server_port}",
                             "--flink_job_server_jar=/opt/js.jar", "--parallelism=16"])
    finally:
        server.shutdown()
    assert option_value(args, "parallelism") == "16" and args.count("--parallelism=16") == 1


def test_a_cluster_without_slots_is_one_line(cached_jar):
    server = rest_server({"/overview": (200, {"taskmanagers": 0, "slots-total": 0,
                                                 "slots-available": 0})})
    try:
        with pytest.raises(UserError, match="has no task slot"):
            cluster_args(["--runner=FlinkRunner", f"--flink_master=127.0.0.1:{server.server_port}"])
    finally:
        server.shutdown()


def test_the_monitor_hands_the_jobs_counters_to_the_progress_line():
    from pipeline.engine.flink_jobs import JobMonitor

    class Progress:
        def __init__(self):
            self.committed = []

        def commit(self, counters):
            self.committed.append(counters)

    seven = base64.b64encode(bytes([7])).decode()
    metrics = {"metrics": {"attempted": [counter("progress.articles.read", seven)]}}
    accumulators = {"user-task-accumulators": [{"name": "__metricscontainers", "value": json.dumps(metrics)}]}
    server = rest_server({"/jobs/j1/accumulators": (200, accumulators),
                          "/jobs/j1/exceptions": (200, {"exceptionHistory": {"entries": []}})})
    progress = Progress()
    try:
        monitor = JobMonitor(f"127.0.0.1:{server.server_port}", "csdata-x", progress)
        monitor.job_id = "j1"
        monitor._update()
    finally:
        server.shutdown()
    assert progress.committed == [{"progress.articles.read": 7}]


def test_the_flink_job_servers_own_options_are_accepted_for_a_cluster_only():
    # Options Beam's Python SDK learns from the job server once it runs (Flink's restarts,
    # object reuse as a bare flag): known before any work on a cluster, refused elsewhere.
    cluster = ["--runner=FlinkRunner", "--flink_master=localhost:8081"]
    check_beam_args([*cluster, "--number_of_execution_retries=0", "--object_reuse",
                     "--execution_retry_delay", "5000"])
    for args in (["--number_of_execution_retries=0"], ["--runner=FlinkRunner", "--object_reuse"]):
        with pytest.raises(UserError, match=r"^unrecognized option --(number_of_execution_retries=0|object_reuse) "):
            check_beam_args(args)
    with pytest.raises(UserError, match="unrecognized option --numbr_of_execution_retries"):
        check_beam_args([*cluster, "--numbr_of_execution_retries=0"])


def test_the_monitor_finds_the_job_after_an_answer_cut_short(monkeypatch, capsys):
    # A JobManager that restarts mid-answer cuts its reply short (http.client.IncompleteRead, no
    # OSError): the monitor asks again at its next poll rather than stop for the rest of the run.
    import http.server
    import threading
    import time

    from pipeline.engine.flink_jobs import JobMonitor

    monkeypatch.setattr("pipeline.engine.flink_jobs.POLL_SECONDS", 0.05)
    asked = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            asked.append(self.path)
            data = json.dumps({"jobs": [{"jid": "f" * 32, "name": "csdata-x", "start-time": 1}]}).encode()
            self.send_response(200 if self.path == "/jobs/overview" else 404)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data[:5] if asked.count("/jobs/overview") == 1 else data)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with JobMonitor(f"127.0.0.1:{server.server_port}", "csdata-x") as monitor:
            deadline = time.monotonic() + 10
            while monitor.job_id is None and time.monotonic() < deadline:
                time.sleep(0.05)
    finally:
        server.shutdown()
    assert asked.count("/jobs/overview") >= 2
    assert monitor.job_id == "f" * 32
    assert f"csdata: Flink job {'f' * 32} · " in capsys.readouterr().err
