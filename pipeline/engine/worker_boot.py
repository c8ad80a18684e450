"""`csdata-sdk-worker`: the boot command of a Python SDK worker that a Flink TaskManager starts.

With `--environment_type=PROCESS`, Beam's Java runner starts one command per worker with
`--id`, `--provision_endpoint`, `--artifact_endpoint`, `--logging_endpoint` and
`--control_endpoint`. Beam's own such command is the Go `boot` program of its SDK container
image, which the PyPI wheel lacks; this module does what it does for an installed SDK: asks the
provision service for the job's pipeline options and endpoints, fetches the job's staged files
(the pickled main session, extra packages), installs the staged packages into a folder of this
worker's own (first on its `PYTHONPATH`; the node's Python is never changed), and starts Beam's
`sdk_worker_main` in the same Python with them. `csdata`'s installation on every node provides
the rest (Beam, spaCy and its model, the `pipeline.engine.worker` plugin the options name).

The worker runs as a child of this process, which removes the staging directory it made once the
worker exits (an exec would leave one directory in /tmp per worker ever started); the worker dies
with this process (Linux's parent-death signal), so a killed boot leaves no orphan behind.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Sequence

LOG = logging.getLogger("csdata.worker_boot")
STAGING_ROLE = "beam:artifact:role:staging_to:v1"
TEMP_PREFIX = "csdata-sdk-worker-"   # + the boot's pid + "-" + random: whose directory it is


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="csdata-sdk-worker", description=__doc__.splitlines()[0])
    parser.add_argument("--id", default="", help="the worker id the runner gave")
    parser.add_argument("--provision_endpoint", required=True)
    parser.add_argument("--artifact_endpoint", default="")
    parser.add_argument("--logging_endpoint", default="")
    parser.add_argument("--control_endpoint", default="")
    parser.add_argument("--semi_persist_dir", default="",
                        help="where staged files go (default: a new temporary directory)")
    args, _ = parser.parse_known_args(list(argv))
    return args


def staged_name(artifact) -> str:
    """The file name a staged artifact is to have (its staging-role payload), or ''."""
    from apache_beam.portability.api import beam_runner_api_pb2

    if artifact.role_urn != STAGING_ROLE:
        return ""
    payload = beam_runner_api_pb2.ArtifactStagingToRolePayload.FromString(artifact.role_payload)
    return os.path.basename(payload.staged_name)


def fetch_artifacts(endpoint: str, worker_id: str, dependencies, target: Path) -> list[Path]:
    """Write the job's staged files into `target`; returns their paths."""
    import grpc
    from apache_beam.portability.api import beam_artifact_api_pb2, beam_artifact_api_pb2_grpc

    target.mkdir(parents=True, exist_ok=True)
    written = []
    with grpc.insecure_channel(endpoint) as channel:
        stub = beam_artifact_api_pb2_grpc.ArtifactRetrievalServiceStub(channel)
        for artifact in dependencies:
            name = staged_name(artifact)
            if not name:
                continue
            request = beam_artifact_api_pb2.GetArtifactRequest(artifact=artifact)
            path = target / name
            with open(path, "wb") as out:
                for chunk in stub.GetArtifact(request, metadata=[("worker_id", worker_id)]):
                    out.write(chunk.data)
            written.append(path)
    return written


class MissingOnNode(Exception):
    """What the job staged cannot be installed from its staged files (one line, for the log)."""


def install_staged(staged: Path, target: Path) -> list[str]:
    """pip-install what the job staged for its workers (`--requirements_file`, `--extra_package`)
    into `target`, a folder of this worker's own, from the staged files alone; returns the
    `sys.path` entries to put first. Never into this Python's own site-packages: the node's
    workers of other jobs share it, and concurrent installs into it race.

    Without dependencies (`--no-deps`, as the first round of Beam's container boot): what a
    staged package needs must be on the node or staged too. A failure is `MissingOnNode`."""
    extra = staged / "extra_packages.txt"
    packages = [str(staged / line.strip()) for line in extra.read_text().splitlines()
                if line.strip()] if extra.is_file() else []
    requirements = staged / "requirements.txt"
    if not packages and not requirements.is_file():
        return []
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
           "--no-index", "--no-deps", "--no-build-isolation", f"--find-links={staged}",
           f"--target={target}"]
    if requirements.is_file():
        pip += ["-r", str(requirements)]
    done = subprocess.run([*pip, *packages], capture_output=True, text=True)
    if done.returncode != 0:
        lines = [line.strip() for line in done.stderr.splitlines() if line.strip()]
        raise MissingOnNode(f"the job's staged packages cannot be installed on this node: "
                            f"{lines[-1] if lines else f'pip exited {done.returncode}'}")
    return [str(target)]


def first_on_path_of(env: dict[str, str], entries: Sequence[str]) -> dict[str, str]:
    """`env` with `entries` put first on its PYTHONPATH (the worker's own installs win)."""
    if not entries:
        return env
    return {**env, "PYTHONPATH": os.pathsep.join([*entries, *filter(None, [env.get("PYTHONPATH")])])}


def remove_orphans(temp: Path) -> list[Path]:
    """Remove the staging directories of boots that are gone (a boot killed with SIGKILL cannot
    clean up after itself); returns them."""
    removed = []
    for folder in temp.glob(f"{TEMP_PREFIX}*-*"):
        pid = folder.name[len(TEMP_PREFIX):].split("-", 1)[0]
        if not pid.isdigit() or _alive(int(pid)):
            continue
        shutil.rmtree(folder, ignore_errors=True)
        removed.append(folder)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:   # another user's process
        return True
    return True


def descriptor(url: str) -> str:
    """An ApiServiceDescriptor in the text form Beam's worker reads from its environment."""
    return f'url: "{url}"'


def main(argv: Sequence[str] | None = None) -> None:
    """Boot one SDK worker (see the module docstring); replaces this process with it."""
    import grpc
    from apache_beam.portability.api import beam_provision_api_pb2, beam_provision_api_pb2_grpc
    from google.protobuf import json_format

    # force: importing Beam may already have given the root logger a WARNING-level handler.
    logging.basicConfig(level=logging.INFO, format="csdata-sdk-worker %(levelname)s %(message)s", force=True)
    args = parse_args(sys.argv[1:] if argv is None else argv)
    with grpc.insecure_channel(args.provision_endpoint) as channel:
        stub = beam_provision_api_pb2_grpc.ProvisionServiceStub(channel)
        info = stub.GetProvisionInfo(beam_provision_api_pb2.GetProvisionInfoRequest(),
                                     metadata=[("worker_id", args.id)]).info
    if not args.semi_persist_dir:
        remove_orphans(Path(tempfile.gettempdir()))
    semi = Path(args.semi_persist_dir or tempfile.mkdtemp(prefix=f"{TEMP_PREFIX}{os.getpid()}-"))
    staged = semi / "staged"
    first_on_path: list[str] = []
    # Beam's Java runner names the artifact service in the provision info, not on the command line.
    artifact_url = args.artifact_endpoint or info.artifact_endpoint.url
    if artifact_url and info.dependencies:
        files = fetch_artifacts(artifact_url, args.id, info.dependencies, staged)
        LOG.info("worker %s: %d staged files in %s", args.id, len(files), staged)
        try:
            first_on_path = install_staged(staged, semi / "site-packages")
        except MissingOnNode as error:
            LOG.error("worker %s: %s", args.id, error)
            if not args.semi_persist_dir:
                shutil.rmtree(semi, ignore_errors=True)
            sys.exit(1)
    logging_url = info.logging_endpoint.url or args.logging_endpoint
    control_url = info.control_endpoint.url or args.control_endpoint
    env = dict(os.environ)
    env.update({
        "WORKER_ID": args.id,
        "PIPELINE_OPTIONS": json_format.MessageToJson(info.pipeline_options),
        "SEMI_PERSISTENT_DIRECTORY": str(semi),
        "CONTROL_API_SERVICE_DESCRIPTOR": descriptor(control_url),
        "RUNNER_CAPABILITIES": " ".join(info.runner_capabilities),
    })
    env = first_on_path_of(env, first_on_path)
    if logging_url:
        env["LOGGING_API_SERVICE_DESCRIPTOR"] = descriptor(logging_url)
    if info.status_endpoint.url:
        env["STATUS_API_SERVICE_DESCRIPTOR"] = descriptor(info.status_endpoint.url)
    LOG.info("worker %s: starting Beam's SDK worker (%s)", args.id,
             json.dumps({"control": control_url, "python": sys.executable}))
    try:
        code = run_worker([sys.executable, "-m", "apache_beam.runners.worker.sdk_worker_main"], env)
    finally:
        if not args.semi_persist_dir:
            shutil.rmtree(semi, ignore_errors=True)
    sys.exit(code)


def _die_with_parent() -> None:
    """In the child, before exec: SIGKILL when the parent dies (Linux prctl PR_SET_PDEATHSIG)."""
    import ctypes

    with_errno = ctypes.CDLL(None, use_errno=True)
    with_errno.prctl(1, signal.SIGKILL)   # 1: PR_SET_PDEATHSIG


def run_worker(command: Sequence[str], env: dict[str, str]) -> int:
    """Run `command` as a child that dies with this process, pass SIGTERM and SIGINT on to it,
    and return its exit status as a shell reports it (128 + N for a signal N)."""
    child = subprocess.Popen(list(command), env=env, preexec_fn=_die_with_parent)

    def forward(signum: int, _frame) -> None:
        child.send_signal(signum)

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, forward)
    code = child.wait()
    return 128 - code if code < 0 else code

if __name__ == "__main__":
    main()
