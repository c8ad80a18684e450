"""csdata's FlinkRunner defaults and the reading of a job's REST reports (`pipeline.flink`),
without a cluster: the end-to-end runs on a real one are in tests/flink."""
from __future__ import annotations

import base64
import json
import socket

import pytest

from pipeline.flink import (
    cluster_args,
    decode_varint,
    job_server_jar,
    option_value,
    root_cause,
    user_counters,
)
from transforms.core.errors import UserError

FLINK = ["--runner=FlinkRunner", "--flink_master=localhost:8081"]


@pytest.fixture
def cached_jar(tmp_path, monkeypatch):
    monkeypatch.setenv("CSDATA_CACHE_DIR", str(tmp_path))
    jar = job_server_jar()
    jar.parent.mkdir(parents=True)
    jar.write_bytes(b"PK")
    return jar


def test_other_runners_are_left_alone():
    for args in ([], ["--runner=DirectRunner"], ["--runner=FlinkRunner"],
                 ["--runner=FlinkRunner", "--flink_master=[local]"]):
        assert cluster_args(args) == args


def test_a_cluster_run_gets_process_workers_the_cached_job_server_and_a_job_name(cached_jar):
    args = cluster_args([*FLINK, "--parallelism=3"])
    assert option_value(args, "environment_type") == "PROCESS"
    command = option_value(args, "environment_options")
    assert command is not None and command.startswith("process_command=/")
    assert command.endswith("/csdata-sdk-worker")
    assert option_value(args, "flink_job_server_jar") == str(cached_jar)
    assert option_value(args, "parallelism") == "3"
    assert (option_value(args, "job_name") or "").startswith("csdata-")
    assert option_value(args, "experiments") == "pre_optimize=all"


def test_what_the_user_passes_wins(cached_jar):
    given = [*FLINK, "--environment_type=LOOPBACK", "--flink_job_server_jar=/opt/js.jar",
             "--parallelism", "7", "--job_name=mine", "--experiments=pre_optimize=default"]
    assert cluster_args(given) == given


def test_a_missing_job_server_names_the_make_target(tmp_path, monkeypatch):
    monkeypatch.setenv("CSDATA_CACHE_DIR", str(tmp_path))
    with pytest.raises(UserError, match="make flink-fetch"):
        cluster_args([*FLINK, "--parallelism=2"])


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


def overview_server(overview: dict):
    """A loopback HTTP server that answers Flink's `/overview` with `overview`."""
    import http.server
    import threading

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = json.dumps(overview).encode()
            self.send_response(200 if self.path == "/overview" else 404)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.mark.parametrize("overview, parallelism", [
    ({"taskmanagers": 2, "slots-total": 4, "slots-available": 3}, "3"),   # the free slots
    ({"taskmanagers": 2, "slots-total": 4, "slots-available": 0}, "4"),   # busy: the job waits for all
])
def test_parallelism_is_the_free_slots_else_all_of_them(cached_jar, overview, parallelism):
    server = overview_server(overview)
    try:
        args = cluster_args(["--runner=FlinkRunner", f"--flink_master=127.0.0.1:{server.server_port}"])
    finally:
        server.shutdown()
    assert option_value(args, "parallelism") == parallelism


def test_a_cluster_without_slots_is_one_line(cached_jar):
    server = overview_server({"taskmanagers": 0, "slots-total": 0, "slots-available": 0})
    try:
        with pytest.raises(UserError, match="has no task slot"):
            cluster_args(["--runner=FlinkRunner", f"--flink_master=127.0.0.1:{server.server_port}"])
    finally:
        server.shutdown()
