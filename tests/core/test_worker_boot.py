"""`csdata-sdk-worker` (pipeline.worker_boot): the arguments Beam's Java runner starts it with,
the names and descriptors it hands Beam's SDK worker, and the worker's life under it. Its whole run, on real TaskManagers,
is tested in tests/flink."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from apache_beam.portability.api import beam_runner_api_pb2

from pipeline.worker_boot import STAGING_ROLE, descriptor, parse_args, staged_name


def test_the_process_environment_arguments_are_read_and_unknown_ones_ignored():
    # The flags of Beam's Java ProcessEnvironmentFactory, plus one a later Beam may add.
    args = parse_args(["--id=1-1", "--provision_endpoint=localhost:40001",
                       "--artifact_endpoint=localhost:40002", "--logging_endpoint=localhost:40003",
                       "--control_endpoint=localhost:40004", "--runner_capabilities=x"])
    assert (args.id, args.provision_endpoint, args.artifact_endpoint, args.logging_endpoint,
            args.control_endpoint, args.semi_persist_dir) == (
        "1-1", "localhost:40001", "localhost:40002", "localhost:40003", "localhost:40004", "")


def test_a_staged_file_keeps_its_staged_name_and_other_roles_are_skipped():
    payload = beam_runner_api_pb2.ArtifactStagingToRolePayload(staged_name="pickled_main_session")
    staged = beam_runner_api_pb2.ArtifactInformation(role_urn=STAGING_ROLE,
                                                     role_payload=payload.SerializeToString())
    assert staged_name(staged) == "pickled_main_session"
    other = beam_runner_api_pb2.ArtifactInformation(role_urn="beam:artifact:role:pip_requirements_file:v1")
    assert staged_name(other) == ""


def test_an_endpoint_is_written_as_the_text_proto_beams_worker_parses():
    from apache_beam.portability.api import endpoints_pb2
    from google.protobuf import text_format

    parsed = text_format.Parse(descriptor("localhost:40004"), endpoints_pb2.ApiServiceDescriptor())
    assert parsed.url == "localhost:40004"


def test_the_worker_exit_status_is_passed_on_as_a_shell_reports_it():
    from pipeline.worker_boot import run_worker

    assert run_worker([sys.executable, "-c", "raise SystemExit(3)"], dict(os.environ)) == 3
    assert run_worker([sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"],
                      dict(os.environ)) == 128 + signal.SIGKILL


def test_a_boot_killed_with_sigkill_takes_its_worker_with_it(tmp_path):
    pid_file = tmp_path / "worker.pid"
    worker = f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(120)"
    boot = subprocess.Popen([sys.executable, "-c",
                             "import os, sys\nfrom pipeline.worker_boot import run_worker\n"
                             f"run_worker([sys.executable, '-c', {worker!r}], dict(os.environ))"],
                            cwd=Path(__file__).resolve().parents[2])
    deadline = time.monotonic() + 30
    while not pid_file.exists() or not pid_file.read_text():
        assert time.monotonic() < deadline, "the worker did not start"
        time.sleep(0.1)
    child = int(pid_file.read_text())
    boot.kill()
    boot.wait()
    deadline = time.monotonic() + 10
    while Path(f"/proc/{child}").exists() and "Z" not in Path(f"/proc/{child}/stat").read_text().split()[2]:
        assert time.monotonic() < deadline, "the worker outlived its boot"
        time.sleep(0.1)


def test_staging_directories_of_boots_that_are_gone_are_removed(tmp_path):
    from pipeline.worker_boot import TEMP_PREFIX, remove_orphans

    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True).stdout.strip()
    orphan = tmp_path / f"{TEMP_PREFIX}{gone}-abc123"
    live = tmp_path / f"{TEMP_PREFIX}{os.getpid()}-def456"
    other = tmp_path / "csdata-sdk-worker-notapid"
    for folder in (orphan, live, other):
        (folder / "staged").mkdir(parents=True)
    assert remove_orphans(tmp_path) == [orphan]
    assert live.exists() and other.exists() and not orphan.exists()
