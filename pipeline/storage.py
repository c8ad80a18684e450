"""Object stores on the command line: which arguments name a path there, the Beam options that
say where the store is (`--s3_endpoint_url` ...), the finished runs a command reads from there
(resolved to their committed attempt, `transforms.core.runs`), and `csdata clean`."""
from __future__ import annotations

import argparse
import contextlib
import shutil
import tempfile
from typing import Sequence

from pipeline.runner import beam_options, check_run_dir, previous_path, staging_path
from transforms.core.errors import UserError
from transforms.core.runs import (
    describe_storage_error,
    download,
    remove_attempts,
    resolve_run,
    retry_store_calls,
)

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
    """`csdata clean OUTPUT`: remove the leftovers of failed runs there; returns them."""
    if "://" not in output:
        gone = [str(p) for p in (staging_path(output), previous_path(output)) if p.exists()]
        for path in gone:
            shutil.rmtree(path)
        return gone
    use_store_options(extra)
    try:
        return remove_attempts(output)
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
    """Local runs are checked; a run on an object store is resolved to its committed attempt
    (one line when there is none) and, for a reader in this process, copied into a temporary
    directory that goes when the command ends."""
    for name in RUN_ARGS:
        value = getattr(args, name, None)
        if not isinstance(value, str):
            continue
        if "://" not in value:
            if name == "run_dir":
                check_run_dir(value)
            continue
        run = resolve_run(value, what=f"{name.replace('_', ' ')} " if name != "run_dir" else "")
        if name in BEAM_READ_ARGS or getattr(args, "beam_reader", False):
            setattr(args, name, run)
            continue
        local = stack.enter_context(tempfile.TemporaryDirectory(prefix="csdata-run-"))
        download(run, local)
        setattr(args, name, local)
