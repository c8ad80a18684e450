"""The output protocol every command that writes an output follows, on a local disk and on an
object store alike (where things live: `pipeline.outputs.paths`; the lease:
`pipeline.outputs.lease`).

1. **Lease.** The run takes the output's lease before any work; a live holder makes it stop in
   one line (exit 2). A dead holder's Flink jobs are cancelled.
2. **Attempt.** The run writes into a fresh attempt folder, `runs/<UTC time>-<random>`, that no
   reader looks at. Attempts left by dead runs are removed now (the lease says none is live).
3. **Commit.** Once the run finished and its accounting holds, its attempt gets `csdata-run.json`
   (what ran, and its files), then the commit points at the attempt: locally the output path, a
   symbolic link, is replaced in one rename; on an object store `csdata-run.json` at the output
   is written in one PUT. A reader sees the old run or the new one, never a mixture.
   Right before the commit point the lease is renewed with a conditional write: a run that lost
   it to a run that took over does not commit. On S3 the commit object itself is written with a
   precondition on the one it replaces, so of two commits racing one fails.
4. **Cleanup.** The attempt the commit replaced stays until the next commit (a reader may be in
   the middle of it); older attempts and the resumable work go. Once the commit point is passed
   nothing removes the committed attempt: cleanup is best effort, and what it could not remove
   is named in one line for `csdata clean`. A failed or interrupted run that did not reach the
   commit point removes its attempt and keeps the work (`pipeline.outputs.resume`) for the next run.

Each step has a named crash point (`transforms.core.resume.crash`), so a test can end the process there.

The marker `csdata-run.json` says what a finished run is: csdata's version, the dataset, the
command words (`protoqa sheets import`) and when it finished (`run_info`), then the attempt, its
files and the attempt it replaced. A folder written outside the protocol (the demo's,
`reproduce`'s) gets the same marker from `write_marker`; `read_marker` reads it back.

The words of this protocol are attempt, commit, lease and resume; an output is never "staged".
"Staged" in csdata means one thing only: the files a Beam job stages for its workers
(`pipeline.engine.worker_boot`). `.NAME.csdata-staging` is the name of a folder older csdata
versions left beside a local output, which `clean` removes.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Optional

from pipeline.outputs.holder import cancel_jobs
from pipeline.outputs.lease import DEFAULT_TIMEOUT, Lease, make_lease
from pipeline.outputs.paths import (
    ATTEMPTS,
    RUN_MARKER,
    OutputPaths,
    files_under,
    join,
    new_attempt_name,
    read_json,
    remove_tree,
    subfolders,
    upload,
    write_json,
)
from transforms.core.errors import UserError
from transforms.core.resume.crash import crash_point

LEGACY = ("summary.json",)   # a local run written by a library call, with no protocol around it


@dataclass
class Run:
    """One run writing one output: its attempt, the folder its command writes (the attempt, or
    a local temporary folder for a plain command on an object store) and its lease."""

    paths: OutputPaths
    name: str
    folder: str
    lease: Lease
    keep: bool = False                 # leave the attempt for inspection (a stage lost records)
    work: Optional[str] = None         # its resumable work (`pipeline.outputs.resume`)
    notes: list[str] = field(default_factory=list)
    committed: bool = False            # past the commit point: nothing may remove the attempt now
    left: list[str] = field(default_factory=list)   # what the cleanup after the commit left

    @property
    def attempt(self) -> str:
        return self.paths.attempt(self.name)


ACTIVE: list[Run] = []   # this process's runs in progress (for the signal handlers)
COMMITTED: list[str] = []   # the outputs this process's latest run committed (for the last line)


def committed_now() -> Optional[str]:
    """The output the latest run of this process committed, if it did: an interrupt or an
    error after the commit point leaves that output committed, not the previous one."""
    return COMMITTED[-1] if COMMITTED else None


def committed_name(paths: OutputPaths) -> Optional[str]:
    """The attempt the output's commit names, None when there is none (or a local output is a
    plain directory)."""
    if paths.remote:
        record = read_json(paths.commit)
        run = (record or {}).get("run")
        return run.rsplit("/", 1)[-1] if isinstance(run, str) and run.startswith(f"{ATTEMPTS}/") else None
    link = Path(paths.commit)
    if not link.is_symlink():
        return None
    target = Path(os.readlink(link))
    return target.name if target.parent.name == ATTEMPTS else None


def is_finished(folder: str) -> bool:
    """Whether a folder holds a finished run (its marker, or a library call's summary)."""
    if "://" in folder:
        return read_json(join(folder, RUN_MARKER)) is not None
    return any(os.path.isfile(os.path.join(folder, name)) for name in (RUN_MARKER, *LEGACY))


def resolve_run(path: str, what: str = "") -> str:
    """The folder of the finished run at `path`: locally the attempt its link points at (so a
    long read stays on one run while newer ones commit), on an object store the attempt its
    commit names, or `path` itself for a copied run; a one-line UserError when there is none."""
    from pipeline.engine.stores import describe_storage_error

    if "://" not in path:
        if not os.path.isdir(path):
            raise UserError(f"{what}{path}: no such directory")
        real = os.path.realpath(path)
        if not is_finished(real):
            raise UserError(f"{what}{path} is not the output of a finished csdata run (no {RUN_MARKER})")
        return real
    try:
        name = committed_name(OutputPaths(path))
        found = OutputPaths(path).attempt(name) if name else (path.rstrip("/") if is_finished(path) else None)
    except Exception as error:   # Beam wraps every store error: report what the store said
        raise UserError(f"{what}{path}: {describe_storage_error(error)}") from None
    if found is None:
        raise UserError(f"{what}{path} is not the output of a finished csdata run "
                        f"(no {RUN_MARKER}: a run that failed or is still running)")
    return found


def check_output(output: str) -> None:
    """A local `--output` must be new, empty, a csdata output or a finished run; a remote one
    must be writable (a probe object, so that a wrong bucket or key fails before any work)."""
    if "://" in output:
        probe_writable(OutputPaths(output))
        return
    path = Path(output)
    if path.exists() and not path.is_dir():
        raise UserError(f"--output {output} is a file, not a directory")
    if path.is_dir() and not path.is_symlink() and any(path.iterdir()) and not is_finished(output):
        raise UserError(f"--output {output} is a non-empty directory that is not a csdata run; "
                        "choose a new or empty directory")
    parent = path.absolute().parent
    while not parent.exists():
        parent = parent.parent
    try:   # a probe beside the output: permissions, read-only file systems, root or not
        tempfile.TemporaryDirectory(dir=parent, prefix=".csdata-probe-").cleanup()
    except OSError:
        raise UserError(f"--output {output}: cannot write there") from None


def probe_writable(paths: OutputPaths) -> None:
    """Write and delete one small object in the output's root."""
    from apache_beam.io.filesystems import FileSystems

    from pipeline.engine.stores import describe_storage_error

    probe = join(paths.root, f".csdata-probe-{new_attempt_name()}")
    try:
        with FileSystems.create(probe) as handle:
            handle.write(b"csdata")
        FileSystems.delete([probe])
    except Exception as error:
        raise UserError(f"--output {paths.output}: cannot write there ({describe_storage_error(error)})") from None


@contextlib.contextmanager
def begin(output: str, local_files: bool = False, timeout: float = DEFAULT_TIMEOUT,
          options: Any = None) -> Iterator[Run]:
    """Take the lease, remove dead attempts, and yield the new `Run`. On any exception (Ctrl-C
    and SIGTERM included) the attempt is removed, unless `keep` was set; the lease is released
    either way. `local_files`: the command writes local files, uploaded into the attempt at
    commit (a plain command with a remote output)."""
    paths = OutputPaths(output)
    name = new_attempt_name()
    COMMITTED.clear()
    lease = make_lease(paths, name, timeout, options)
    dead = lease.acquire()
    run = Run(paths, name, paths.attempt(name), lease)
    ACTIVE.append(run)
    failed = False
    try:
        if dead is not None:
            run.notes.extend(f"Flink job {job} of a dead run into this output cancelled"
                             for job in cancel_jobs(dead))
        crash_point("begin.leased")
        remove_attempts(paths, keep=live_attempts(paths))
        crash_point("begin.attempts_removed")
        if local_files and paths.remote:
            run.folder = tempfile.mkdtemp(prefix="csdata-local-")
        elif not paths.remote:
            os.makedirs(run.folder)
        yield run
    except BaseException:
        failed = not run.committed
        if failed and not run.keep:
            discard(run)
        raise
    finally:
        if run.folder != run.attempt:
            shutil.rmtree(run.folder, ignore_errors=True)
        lease.release(remove_root=failed and _empty_root(paths))
        ACTIVE.remove(run)


def run_info(dataset: str, command: str) -> dict[str, str]:
    """The marker's fields that say what ran: csdata's version, the dataset, the command words
    (`protoqa sheets import`) and when it finished."""
    from transforms.core.reporting.provenance import csdata_version, utc_now

    return {"csdata": csdata_version(), "dataset": dataset, "command": command, "finished": utc_now()}


def write_marker(folder: str, info: dict) -> None:
    """Mark a folder written outside the protocol (the demo's, `reproduce`'s) as a finished run;
    `info` is `run_info`'s, with anything the caller adds."""
    write_json(join(folder, RUN_MARKER), info)


def read_marker(folder: str) -> dict:
    """The marker of a finished run's folder (`{}` when it has none, or a damaged one)."""
    return read_json(join(folder, RUN_MARKER)) or {}


def _empty_root(paths: OutputPaths) -> bool:
    """Whether a local output's root holds no run, no attempt and no work (only its lease)."""
    if paths.remote or os.path.lexists(paths.commit):
        return False
    return not subfolders(paths.attempts) and not os.path.isdir(paths.work)


def discard(run: Run) -> None:
    """Remove what `run` wrote (its attempt; its local folder), unless the output's commit names
    its attempt (a commit whose answer was lost). The store may be what failed: then what is
    left goes with the next run into the output."""
    with contextlib.suppress(Exception):
        if committed_name(run.paths) == run.name:
            run.committed = True
            return
        remove_tree(run.attempt)
    if run.folder != run.attempt:
        shutil.rmtree(run.folder, ignore_errors=True)


def discard_active() -> None:
    """`discard` every run in progress and drop its lease (a signal handler calls this)."""
    for run in list(ACTIVE):
        if not run.keep and not run.committed:
            discard(run)
        with contextlib.suppress(Exception):
            run.lease.release()


def remove_attempts(paths: OutputPaths, keep: set[Optional[str]]) -> list[str]:
    """Remove the attempt folders of `paths` except those named in `keep`; returns their paths.
    Call only while holding the lease: then no other attempt is live."""
    gone = [paths.attempt(name) for name in subfolders(paths.attempts) if name not in keep]
    for folder in gone:
        remove_tree(folder)
    return gone


def live_attempts(paths: OutputPaths) -> set[Optional[str]]:
    """The attempts no run may remove: the committed one and the one its commit replaced (a
    reader may still be in the middle of it)."""
    name = committed_name(paths)
    if name is None:
        return {None}
    replaced = read_json(join(paths.attempt(name), RUN_MARKER)) or {}
    previous = replaced.get("replaces")
    return {name, previous.rsplit("/", 1)[-1] if isinstance(previous, str) else None}


def commit(run: Run, info: dict) -> None:
    """Make `run`'s attempt the output (see the module doc). A run that lost its lease (another
    run took over) does not commit. Once committed, the cleanup that follows never fails the
    run: what it left is in `run.left`."""
    paths = run.paths
    run.lease.check()
    if run.folder != run.attempt:   # a plain command's local files go up first
        upload(run.folder, run.attempt)
        crash_point("commit.uploaded")
    replaced = committed_name(paths)
    record = {**info, "run": f"{ATTEMPTS}/{run.name}",
              "files": [f for f in files_under(run.attempt) if f != RUN_MARKER],
              "replaces": f"{ATTEMPTS}/{replaced}" if replaced else None}
    write_json(join(run.attempt, RUN_MARKER), record)
    crash_point("commit.marked")
    run.lease.check()   # renewed with a conditional write right before the commit point
    if paths.remote:
        _write_commit(run, record)
    else:
        replaced = _swap_link(paths, run) or replaced
    crash_point("commit.committed")
    cleanup(run, keep={run.name, replaced})


def _write_commit(run: Run, record: dict) -> None:
    """PUT the commit object (the commit point on a store): `run` is committed from there on.
    A PUT that landed but whose answer was lost (the retry refused, a timeout) is found by
    reading the commit back; no interrupt falls between the PUT and `committed`."""
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        try:
            run.lease.write_commit(record)
        except Exception:
            with contextlib.suppress(Exception):
                run.committed = committed_name(run.paths) == run.name
            if not run.committed:
                raise
        run.committed = True
        COMMITTED.append(run.paths.output)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)


def cleanup(run: Run, keep: set[Optional[str]]) -> None:
    """After the commit: remove the attempts but `keep` and the resumable work, as far as the
    store lets; what could not be removed goes to `run.left` (`csdata clean` removes it)."""
    paths = run.paths
    for name in subfolders_or_none(paths.attempts):
        if name in keep:
            continue
        try:
            crash_point("cleanup.remove_attempt")
            remove_tree(paths.attempt(name))
        except Exception:   # noqa: BLE001 - committed: a store error here is left for `clean`
            run.left.append(paths.attempt(name))
    try:
        crash_point("cleanup.remove_work")
        remove_tree(paths.work)
    except Exception:   # noqa: BLE001 - as above
        run.left.append(paths.work)


def subfolders_or_none(folder: str) -> list[str]:
    """`subfolders`, or none when the store cannot list them now."""
    try:
        return subfolders(folder)
    except Exception:   # noqa: BLE001 - the cleanup after a commit is best effort
        return []


def left_line(run: Run) -> Optional[str]:
    """The line naming what the cleanup after a commit left, or None."""
    if not run.left:
        return None
    return (f"csdata: the output is committed; the cleanup left {len(run.left)} folder(s) "
            f"({', '.join(run.left)}): `csdata clean {run.paths.output}` removes them")


def _swap_link(paths: OutputPaths, run: Run) -> Optional[str]:
    """Point the local output at `run`'s attempt in one rename (the commit point: `run` is
    committed from there on); an output that is a plain directory (a run of an older csdata, or
    an empty folder) moves into the attempts first. Returns the name the moved directory got,
    if any."""
    name = run.name
    output = Path(paths.commit)
    moved = None
    if output.is_dir() and not output.is_symlink():
        if any(output.iterdir()):
            moved = f"{new_attempt_name()}-moved"
            output.rename(Path(paths.attempts) / moved)
        else:
            output.rmdir()
    target = os.path.relpath(paths.attempt(name), output.parent)
    temp = output.with_name(f".{output.name}.{name}.link")
    temp.unlink(missing_ok=True)
    os.symlink(target, temp)
    crash_point("commit.linked")
    # No interrupt between the rename and `committed`: an interrupt held back by the mask is
    # raised as it lifts, when the run already counts as committed.
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        os.replace(temp, output)
        run.committed = True
        COMMITTED.append(paths.output)
        crash_point("commit.swapped")
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
    return moved
