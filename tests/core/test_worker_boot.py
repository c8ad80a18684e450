"""`csdata-sdk-worker` (pipeline.engine.worker_boot): the arguments Beam's Java runner starts it with,
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

from pipeline.engine.worker_boot import STAGING_ROLE, descriptor, parse_args, staged_name
from tests.wheels import write_wheel


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
    from pipeline.engine.worker_boot import run_worker

    assert run_worker([sys.executable, "-c", "raise SystemExit(3)"], dict(os.environ)) == 3
    assert run_worker([sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"],
                      dict(os.environ)) == 128 + signal.SIGKILL


def test_a_boot_killed_with_sigkill_takes_its_worker_with_it(tmp_path):
    pid_file = tmp_path / "worker.pid"
    worker = f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(120)"
    boot = subprocess.Popen([sys.executable, "-c",
                             "import os, sys\nfrom pipeline.engine.worker_boot import run_worker\n"
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
    from pipeline.engine.worker_boot import TEMP_PREFIX, remove_orphans

    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True).stdout.strip()
    orphan = tmp_path / f"{TEMP_PREFIX}{gone}-abc123"
    live = tmp_path / f"{TEMP_PREFIX}{os.getpid()}-def456"
    other = tmp_path / "csdata-sdk-worker-notapid"
    for folder in (orphan, live, other):
        (folder / "staged").mkdir(parents=True)
    assert remove_orphans(tmp_path) == [orphan]
    assert live.exists() and other.exists() and not orphan.exists()


def imports(module: str, pythonpath: str = "") -> str:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    done = subprocess.run([sys.executable, "-c", f"import {module}; print({module}.VALUE)"],
                          env=env, capture_output=True, text=True, cwd="/")
    return done.stdout.strip() if done.returncode == 0 else "not importable"


def test_staged_packages_go_into_the_workers_own_folder_never_into_the_nodes_python(tmp_path):
    from pipeline.engine.worker_boot import install_staged

    staged = tmp_path / "staged"
    staged.mkdir()
    wheel = write_wheel(staged, "csdata_staged_probe", "1.0", "VALUE = 'staged'\n")
    (staged / "extra_packages.txt").write_text(wheel.name + "\n")
    first = [install_staged(staged, tmp_path / f"worker{i}" / "site-packages") for i in (1, 2)]
    assert first == [[str(tmp_path / "worker1" / "site-packages")], [str(tmp_path / "worker2" / "site-packages")]]
    assert imports("csdata_staged_probe", first[0][0]) == "staged"
    assert imports("csdata_staged_probe") == "not importable"      # the node's Python is as it was


def test_the_worker_imports_its_own_install_before_what_the_node_has(tmp_path):
    from pipeline.engine.worker_boot import first_on_path_of, install_staged, run_worker

    node = tmp_path / "node"        # stands for a version the node's Python already has
    node.mkdir()
    (node / "csdata_staged_probe.py").write_text("VALUE = 'node'\n")
    staged = tmp_path / "staged"
    staged.mkdir()
    wheel = write_wheel(staged, "csdata_staged_probe", "2.0", "VALUE = 'staged'\n")
    (staged / "extra_packages.txt").write_text(wheel.name + "\n")
    env = first_on_path_of({**os.environ, "PYTHONPATH": str(node)},
                           install_staged(staged, tmp_path / "worker" / "site-packages"))
    assert env["PYTHONPATH"].split(os.pathsep) == [str(tmp_path / "worker" / "site-packages"), str(node)]
    seen = tmp_path / "seen"
    code = f"import csdata_staged_probe as p; open({str(seen)!r}, 'w').write(p.VALUE)"
    assert run_worker([sys.executable, "-c", code], env) == 0
    assert seen.read_text() == "staged"


def test_a_job_staging_nothing_installs_nothing(tmp_path):
    from pipeline.engine.worker_boot import install_staged

    (tmp_path / "staged").mkdir()
    assert install_staged(tmp_path / "staged", tmp_path / "site-packages") == []
    assert not (tmp_path / "site-packages").exists()


def test_a_staged_package_that_cannot_be_installed_is_one_line(tmp_path):
    from pipeline.engine.worker_boot import MissingOnNode, install_staged

    staged = tmp_path / "staged"
    staged.mkdir()
    (staged / "requirements.txt").write_text("csdata-not-staged-anywhere==1.0\n")
    try:
        install_staged(staged, tmp_path / "site-packages")
    except MissingOnNode as error:
        message = str(error)
    else:
        raise AssertionError("a requirement that was not staged installed")
    assert "csdata-not-staged-anywhere" in message and "\n" not in message
