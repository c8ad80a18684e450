"""Where a run output's parts live, and the few file operations the protocol needs, on a local
disk and on any store Beam has a filesystem for (s3://, gs://, ...).

    local --output out/record                     object store --output s3://b/out/record
    out/record -> .record.csdata/runs/ID          s3://b/out/record/csdata-run.json   the commit
    out/.record.csdata/                           s3://b/out/record/                  the root
        lease.json     the lease                      lease.json
        runs/ID/       attempts                       runs/ID/
        work/KEY/      resumable work                 work/KEY/
        csdata.log     the latest run's log           (a local file: `OutputPaths.log`)

Locally the output path itself is the commit: a symbolic link to the committed attempt, replaced
in one `rename`, so every tool that opens `out/record/passages/...` reads one whole run. An object
store has no links and no atomic rename: there the commit is the small object `csdata-run.json`,
written last in one PUT, that names the attempt and its files (`pipeline.outputs.protocol`).
"""
from __future__ import annotations

import json
import os
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Optional

RUN_MARKER = "csdata-run.json"   # the commit on an object store, and in every finished attempt
ROOT_SUFFIX = ".csdata"          # a local output's root: `.NAME.csdata` beside it
ATTEMPTS = "runs"
WORK = "work"
LEASE = "lease.json"
LOG = "csdata.log"


def is_remote(path: str) -> bool:
    """Whether `path` names an object store (`scheme://...`)."""
    return "://" in path


def join(folder: str, *names: str) -> str:
    """`folder/name/...` with one slash between parts, for local and remote paths alike."""
    return "/".join([folder.rstrip("/"), *names])


@dataclass(frozen=True)
class OutputPaths:
    """The parts of one `--output` (see the module doc)."""

    output: str

    @property
    def remote(self) -> bool:
        return is_remote(self.output)

    @property
    def root(self) -> str:
        """Where the lease, the attempts and the work live."""
        if self.remote:
            return self.output.rstrip("/")
        path = Path(self.output).absolute()
        return str(path.with_name(f".{path.name}{ROOT_SUFFIX}"))

    @property
    def attempts(self) -> str:
        return join(self.root, ATTEMPTS)

    @property
    def work(self) -> str:
        return join(self.root, WORK)

    @property
    def lease(self) -> str:
        return join(self.root, LEASE)

    @property
    def commit(self) -> str:
        """The commit: the link at the output path locally, the commit object remotely."""
        return join(self.output, RUN_MARKER) if self.remote else str(Path(self.output).absolute())

    @property
    def log(self) -> str:
        """The latest run's log file (`pipeline.engine.logs`): in a local output's root, and for an
        object store in csdata's cache on this machine (a log is appended to as the run goes)."""
        if not self.remote:
            return join(self.root, LOG)
        import hashlib

        from transforms.core.cache import cache_dir

        digest = hashlib.sha256(self.output.rstrip("/").encode("utf-8")).hexdigest()[:16]
        return str(cache_dir() / "logs" / f"{digest}.log")

    def attempt(self, name: str) -> str:
        return join(self.attempts, name)


def new_attempt_name() -> str:
    """`<UTC time>-<random>`: sorts by start time, never reused."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return f"{stamp}-{uuid.uuid4().hex[:8]}"


# ---- file operations (Beam's filesystems, imported on use) -----------------------------------------

def read_json(path: str) -> Optional[dict]:
    """The JSON object at `path`; None when there is none, or it is not a JSON object (a
    half-written local file of a killed process)."""
    if not is_remote(path):
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None
    from apache_beam.io.filesystems import FileSystems

    if not FileSystems.exists(path):
        return None
    with FileSystems.open(path, compression_type="uncompressed") as handle:
        try:
            data = json.loads(handle.read().decode("utf-8"))
        except ValueError:
            return None
    return data if isinstance(data, dict) else None


def write_json(path: str, data: Any) -> None:
    """Write `data` whole: locally to a temporary name renamed over `path`, remotely in one PUT
    (an object appears only once it is complete)."""
    from transforms.core.resume.store import write_bytes

    write_bytes(path, json.dumps(data, indent=1, ensure_ascii=False, sort_keys=True).encode("utf-8") + b"\n")


def files_under(folder: str) -> list[str]:
    """Every file under `folder`, as paths relative to it, sorted."""
    prefix = folder.rstrip("/") + "/"
    if not is_remote(folder):
        base = Path(folder)
        if not base.is_dir():
            return []
        return sorted(str(p.relative_to(base)).replace(os.sep, "/")
                      for p in base.rglob("*") if p.is_file() and not p.is_symlink())
    from apache_beam.io.filesystems import FileSystems

    return sorted(m.path[len(prefix):] for result in FileSystems.match([prefix + "**"])
                  for m in result.metadata_list if not m.path.endswith("/"))


def subfolders(folder: str) -> list[str]:
    """The names of the folders directly under `folder` (on an object store: the first parts of
    the keys below it), sorted."""
    if not is_remote(folder):
        base = Path(folder)
        return sorted(p.name for p in base.iterdir() if p.is_dir()) if base.is_dir() else []
    return sorted({path.split("/", 1)[0] for path in files_under(folder) if "/" in path})


def remove_tree(folder: str) -> None:
    """Delete `folder` and everything under it (nothing when it is not there)."""
    from transforms.core.resume.store import remove_folder

    remove_folder(folder)


def exists(path: str) -> bool:
    if not is_remote(path):
        return os.path.lexists(path)
    from apache_beam.io.filesystems import FileSystems

    return FileSystems.exists(path)


def download(folder: str, local: str) -> int:
    """Copy every file under remote `folder` into local directory `local`; returns how many."""
    from apache_beam.io.filesystems import FileSystems

    names = files_under(folder)
    for name in names:
        target = os.path.join(local, *name.split("/"))
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with FileSystems.open(join(folder, name), compression_type="uncompressed") as source, \
                open(target, "wb") as out:
            while chunk := source.read(1 << 20):
                out.write(chunk)
    return len(names)


def upload(local: str, folder: str) -> int:
    """Copy every file under local directory `local` to remote `folder`; returns how many."""
    from apache_beam.io.filesystems import FileSystems

    count = 0
    for root, _, names in os.walk(local):
        for name in sorted(names):
            source = os.path.join(root, name)
            relative = os.path.relpath(source, local).replace(os.sep, "/")
            with open(source, "rb") as handle, FileSystems.create(
                    join(folder, relative), mime_type="application/octet-stream") as out:
                while chunk := handle.read(1 << 20):
                    out.write(chunk)
            count += 1
    return count
