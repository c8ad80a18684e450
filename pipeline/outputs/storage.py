"""Object stores on the command line: which arguments name a path there, the Beam options that
say where the store is (`--s3_endpoint_url` ...), the finished runs a command reads (resolved to
their committed attempt, `pipeline.outputs.protocol`), and `csdata clean`."""
from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Sequence

from pipeline.engine.runner import beam_options
from pipeline.engine.stores import describe_storage_error, retry_store_calls
from pipeline.outputs.holder import cancel_jobs
from pipeline.outputs.lease import DEFAULT_TIMEOUT, make_lease
from pipeline.outputs.paths import OutputPaths, download, new_attempt_name, remove_tree, subfolders
from pipeline.outputs.protocol import committed_name, remove_attempts, resolve_run
from transforms.core.errors import UserError

# Arguments that name the finished run a command reads; `annotations` and the run of a command
# marked `beam_reader` are read by Beam's workers (on a cluster too), the others by this process.
RUN_ARGS = ("run_dir", "qa_dir", "prep", "annotations")
BEAM_READ_ARGS = ("annotations",)
# Beam's options that say where an object store is and how to sign in (S3Options, Azure, HDFS).
STORE_OPTION_PREFIXES = ("--s3_", "--azure_", "--blob_service_endpoint", "--hdfs_")
STORE_SWITCHES = ("--s3_disable_ssl", "--hdfs_full_urls")


def names_remote(args: argparse.Namespace) -> bool:
    """Whether a command line names a path on an object store (its input, output or run)."""
    values: list = [getattr(args, name, None) for name in ("output", "input", *RUN_ARGS)]
    flat = [v for value in values for v in (value if isinstance(value, list) else [value])]
    return any(isinstance(v, str) and "://" in v for v in flat)


def use_store_options(extra: Sequence[str]) -> None:
    """Give Beam's filesystems, in this process, the object-store options of the command line
    (`--s3_endpoint_url` ...): a pipeline does it when it is built, but the checks before it,
    the commit and the plain-Python readers come first or without one."""
    from apache_beam.io.filesystems import FileSystems

    retry_store_calls()
    FileSystems.set_options(beam_options(extra))


def clean_output(output: str, extra: Sequence[str]) -> list[str]:
    """`csdata clean OUTPUT`: remove what no run needs there (refused while one is live);
    returns what went."""
    if "://" in output:
        use_store_options(extra)
    try:
        return clean(output, options=beam_options(extra) if output.startswith("s3://") else None)
    except UserError:
        raise
    except Exception as error:   # Beam wraps every store error: report what the store said
        raise UserError(f"{output}: {describe_storage_error(error)}") from None


def store_options_removed(extra: Sequence[str]) -> list[str]:
    """`extra` without Beam's object-store options (`--s3_endpoint_url=URL`, `--s3_region_name
    NAME` ...)."""
    kept: list[str] = []
    skip_value = False
    for arg in extra:
        if skip_value:
            skip_value = False
            continue
        if arg.startswith(STORE_OPTION_PREFIXES):
            skip_value = "=" not in arg and arg not in STORE_SWITCHES
            continue
        kept.append(arg)
    return kept


def resolve_runs(args: argparse.Namespace, stack: contextlib.ExitStack) -> None:
    """Local runs are checked and pinned to the attempt their link names; a run on an object
    store is resolved to its committed attempt (one line when there is none) and, for a reader
    in this process, copied into a temporary directory that goes when the command ends."""
    for name in RUN_ARGS:
        value = getattr(args, name, None)
        if not isinstance(value, str):
            continue
        if "://" not in value:
            if name == "run_dir":
                resolve_run(value)   # one line when it is not a finished run
            if os.path.islink(value):
                # An output's link: the attempt it names now is read, so that a run committed
                # meanwhile does not change what this command reads half-way.
                setattr(args, name, os.path.realpath(value))
            continue
        run = resolve_run(value, what=f"{name.replace('_', ' ')} " if name != "run_dir" else "")
        if name in BEAM_READ_ARGS or getattr(args, "beam_reader", False):
            setattr(args, name, run)
            continue
        local = stack.enter_context(tempfile.TemporaryDirectory(prefix="csdata-run-"))
        download(run, local)
        setattr(args, name, local)


def clean(output: str, timeout: float = DEFAULT_TIMEOUT, options: Any = None) -> list[str]:
    """`csdata clean OUTPUT`: remove what no run needs (dead attempts, the attempt the last
    commit replaced, resumable work, and the folders older csdata versions left beside a local
    output); returns what was removed. It holds the output's lease while it removes, so a run in
    progress makes it stop in one line (`OutputBusy`); the committed run is never touched."""
    paths = OutputPaths(output)
    if not paths.remote and not Path(paths.root).exists() and not _legacy_leftovers(paths):
        return []
    lease = make_lease(paths, new_attempt_name(), timeout, options)
    dead = lease.acquire()
    try:
        if dead is not None:   # its jobs would write on into what is removed here
            cancel_jobs(dead)
        gone = remove_attempts(paths, keep={committed_name(paths)})
        if subfolders(paths.work):
            remove_tree(paths.work)
            gone.append(paths.work)
        for leftover in _legacy_leftovers(paths):
            shutil.rmtree(leftover, ignore_errors=True)
            gone.append(leftover)
        return gone
    finally:
        lease.release()


def _legacy_leftovers(paths: OutputPaths) -> list[str]:
    if paths.remote:
        return []
    output = Path(paths.output).absolute()
    return [str(p) for p in (output.with_name(f".{output.name}.csdata-staging"),
                             output.with_name(f".{output.name}.csdata-previous")) if p.is_dir()]
