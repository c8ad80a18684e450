"""Running a command safely: the offline runner default, checks before any work starts, and the
output-staging rule (a run writes beside `--output` and is swapped in only when it finished and
its accounting holds, so a failed or interrupted run leaves the previous output as it was)."""
from __future__ import annotations

import contextlib
import glob
import logging
import os
import shutil
import signal
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Iterator, Optional, Sequence

from transforms.core.errors import UserError
from transforms.core.models import freeze_heap
from transforms.core.runs import RUN_MARKER, retry_store_calls

if TYPE_CHECKING:
    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions

# Beam's in-process runner, by its full name (Beam's own default would first try to download the
# Prism runner, which fails offline).
DEFAULT_RUNNER = "apache_beam.runners.portability.fn_api_runner.FnApiRunner"
# csdata's steps are written for cloudpickle, which pickles functions and lambdas by value. Named
# although it is Beam's default, so that a run's recorded options say which pickler it used.
PICKLE_LIBRARY = "cloudpickle"
STAGING_SUFFIX = ".csdata-staging"
PREVIOUS_SUFFIX = ".csdata-previous"
ACTIVE_STAGING: list[Path] = []   # staging directories of the runs in progress in this process
RUN_MARKERS = (RUN_MARKER, "summary.json", "run.json")   # a finished csdata run has one of these


# Warnings of Beam's own code that say nothing a user can act on: `BatchElements` fits batch
# sizes to its timings with numpy, which warns of a degenerate fit (all batches timed alike).
BEAM_NOISE = (("ignore", r"Polyfit may be poorly conditioned", "apache_beam\\.transforms\\.util"),
              ("ignore", r"divide by zero|invalid value encountered", "apache_beam\\.transforms\\.util"))
# Beam logs the traceback of a failing bundle before it raises the error, which csdata then
# reports (one line for a known failure, the traceback for a bug): the log says it twice.
BEAM_ERROR_ECHO = "apache_beam.runners.common"
STORE_CLIENTS = "apache_beam/io/"   # Beam's filesystems (aws/, gcp/, azure/) log the same way
# Beam's launcher of the Flink job server warns as it starts and stops the Java process and while
# it waits for its port: routine steps of every cluster run, not problems. Its errors still show.
SERVICE_LAUNCHER = "apache_beam/utils/subprocess_server.py"
VERBOSE_ENV = "CSDATA_VERBOSE"   # set by `csdata -v`: everything reaches the terminal


class _StoreErrorEcho(logging.Filter):
    """Beam's object-store clients log each failed call's traceback on the root logger, then
    raise: the error is reported once, by csdata, in one line. Beam's service launcher's routine
    warnings (`SERVICE_LAUNCHER`) are dropped too."""

    def filter(self, record: logging.LogRecord) -> bool:
        path = record.pathname.replace(os.sep, "/")
        if path.endswith(SERVICE_LAUNCHER):
            return record.levelno >= logging.ERROR
        return not (record.levelno >= logging.ERROR and STORE_CLIENTS in path)


def quiet_beam_noise() -> None:
    """Hide `BEAM_NOISE`, `BEAM_ERROR_ECHO` and `_StoreErrorEcho` in this process (the driver,
    and each local SDK worker through `pipeline.worker`), unless `csdata -v` set `VERBOSE_ENV`;
    other warnings and logs still show."""
    import warnings

    if os.environ.get(VERBOSE_ENV):
        return
    logging.getLogger(BEAM_ERROR_ECHO).setLevel(logging.CRITICAL)
    logging.getLogger("apache_beam.utils.subprocess_server").setLevel(logging.ERROR)
    root = logging.getLogger()
    if not any(isinstance(f, _StoreErrorEcho) for f in root.filters):
        root.addFilter(_StoreErrorEcho())
    # numpy, as it is imported, puts an "always" filter for RankWarning before any set earlier.
    import numpy  # noqa: F401
    for action, message, module in BEAM_NOISE:
        warnings.filterwarnings(action, message=message, module=module)


def beam_options(extra: Sequence[str]) -> PipelineOptions:
    """PipelineOptions from the arguments csdata did not consume, with the offline runner default
    and, for a Flink cluster, csdata's defaults for it (`pipeline.flink`)."""
    from apache_beam.options.pipeline_options import PipelineOptions

    from pipeline.flink import cluster_args

    args = [f"--runner={DEFAULT_RUNNER}" if a == "--runner=FnApiRunner" else a for a in extra]
    if not any(a == "--runner" or a.startswith("--runner=") for a in args):
        args.append(f"--runner={DEFAULT_RUNNER}")
    if not any(a.startswith("--pickle_library") for a in args):
        args.append(f"--pickle_library={PICKLE_LIBRARY}")
    return PipelineOptions(cluster_args(args))


def default_options() -> PipelineOptions:
    """Options of a library call without CLI flags: the in-process runner, which needs no download."""
    return beam_options([])


# glibc's malloc serves a block above its mmap threshold (128 KiB at start) by mmap and returns it
# to the system when freed, but raises the threshold to the size of each such block freed (up to
# 32 MiB). The local runner moves a fused stage's whole input and output as single messages of
# several MiB (5.6 MiB of articles at 1,200 of them, 9 MiB of rejects), so after the first one
# they come from the heap, whose freed space stays in the process: a `multi_processing` worker
# at 1,200 articles ended with 178 MiB free in its heap and 72 MiB in use (80 and 67 at 120).
# A fixed threshold (which also stops the raising) keeps such blocks out of the heap. 8 MiB: the
# workers' data messages are at most 1 MiB now (`pipeline.worker`), and a lower threshold costs
# spaCy's per-batch arrays an mmap and its page faults each (128 KiB: +19% worker CPU; 1 MiB: 2
# workers 1.59-1.61x one worker at 360 articles against 1.71-1.74x at 8 MiB, medians of two
# alternating rounds in each order; a worker's peak at 10x the input 1.13x against 1.15x).
MALLOC_MMAP_THRESHOLD = 8 * 1024 * 1024
MALLOC_ENV = "MALLOC_MMAP_THRESHOLD_"


def bound_worker_heap() -> None:
    """Fix glibc's mmap threshold for the worker processes the local runner starts from here
    (`--direct_running_mode=multi_processing`; they inherit this environment), unless the user
    set one. No effect on this process, on other allocators or on remote runners' workers."""
    os.environ.setdefault(MALLOC_ENV, str(MALLOC_MMAP_THRESHOLD))


WORKER_PLUGIN = "pipeline.worker"   # imported by each SDK worker as it starts (by name: see there)


def name_worker_plugin(options: PipelineOptions) -> None:
    """Add `WORKER_PLUGIN` to the `--beam_plugins` of `options` (after any the user named)."""
    from apache_beam.options.pipeline_options import SetupOptions

    setup = options.view_as(SetupOptions)
    plugins = list(setup.beam_plugins or [])
    if WORKER_PLUGIN not in plugins:
        setup.beam_plugins = [*plugins, WORKER_PLUGIN]


def new_pipeline(options: Optional[PipelineOptions] = None) -> beam.Pipeline:
    """A Beam pipeline on `options` (else `default_options()`), whose SDK workers import
    `WORKER_PLUGIN` as they start.

    Beam's FnApiRunner, unlike its DirectRunner, hands the worker processes it starts
    (`multi_processing`) none of the pipeline's options, so they would not see the plugin, nor a
    user's `--experiments` or `--pickle_library`: for it, the runner is made as the DirectRunner
    makes it, with the options in the provision info that its workers read."""
    import apache_beam as beam
    from apache_beam.portability.api import beam_provision_api_pb2
    from apache_beam.runners.portability.fn_api_runner.fn_runner import ExtendedProvisionInfo, FnApiRunner
    from apache_beam.runners.portability.portable_runner import JobServiceHandle

    options = options or default_options()
    name_worker_plugin(options)
    retry_store_calls()
    pipeline = beam.Pipeline(options=options)
    if type(pipeline.runner) is FnApiRunner:
        encoded = JobServiceHandle.encode_pipeline_options(options.get_all_options())
        provision = ExtendedProvisionInfo(beam_provision_api_pb2.ProvisionInfo(pipeline_options=encoded))
        shutil.rmtree(pipeline.local_tempdir, ignore_errors=True)   # Beam removes it only in run()
        pipeline = beam.Pipeline(runner=FnApiRunner(provision_info=provision), options=options)
    return pipeline


def run_pipeline(pipeline: beam.Pipeline):
    """Run `pipeline` (best made by `new_pipeline`) to the end, its local workers with
    `bound_worker_heap` and its progress on one line of this process's stderr
    (`transforms.core.progress.RunProgress`); returns its result.

    The first run in a process first freezes what the process holds (`freeze_heap`): its
    modules, the spec and the graph stay for the run, and full collections skip them."""
    from pipeline.flink import cluster_master, run_on_cluster
    from transforms.core.progress import RunProgress

    bound_worker_heap()
    freeze_heap("run")
    master = cluster_master(pipeline.options)
    with RunProgress(pipeline) as progress:   # the run's one progress line, in this process
        if master is not None:
            result = run_on_cluster(pipeline, master, progress)
        else:
            result = pipeline.run()
            result.wait_until_finish()
        progress.finish(result)
    return result


def clear_output(output: str, tables: Sequence[str],
                 files: Sequence[str] = ("summary.json",)) -> None:
    """Remove the tables and summaries of an earlier run in a local output directory."""
    if "://" in output:
        return
    for table in tables:
        shutil.rmtree(os.path.join(output, table), ignore_errors=True)
    for name in files:
        if os.path.exists(os.path.join(output, name)):
            os.remove(os.path.join(output, name))


# ---- checks before any work starts ---------------------------------------------------------------

def check_beam_args(extra: Sequence[str]) -> None:
    """Refuse options that neither csdata nor Beam knows (`--spce`), instead of Beam's warning."""
    import argparse

    from apache_beam.options.pipeline_options import PipelineOptions

    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    pending = [PipelineOptions]
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        with contextlib.suppress(argparse.ArgumentError):
            # Beam's own hook (how PipelineOptions parses argv); a plain parser takes its calls.
            cls._add_argparse_args(parser)  # type: ignore[arg-type]
    _, unknown = parser.parse_known_args(list(extra))
    flags = [a for a in unknown if a.startswith("-")]
    if flags:
        raise UserError(f"unrecognized option {flags[0]} (not a csdata or Beam option; see --help)")


def check_inputs(patterns: Sequence[str]) -> None:
    """Every input pattern (file, directory or glob; local or on an object store) must match at
    least one file. Only a first match is looked for: the pipeline matches the patterns itself
    (`transforms.core.files`), so no list of the files is built here."""
    from transforms.core.runs import check_patterns

    remote = [p for p in patterns if "://" in p]
    if remote:
        check_patterns(remote)
    for pattern in patterns:
        if "://" in pattern:
            continue
        if os.path.isdir(pattern):
            if not any(files for _, _, files in os.walk(pattern)):
                raise UserError(f"--input {pattern}: the directory holds no file")
        elif next((p for p in glob.iglob(pattern, recursive=True) if not os.path.isdir(p)), None) is None:
            raise UserError(f"--input {pattern} matches no file")


def check_run_dir(run_dir: str) -> None:
    """A local directory given as a finished run must hold a run's summary (a failed run leaves
    none); a run on an object store is resolved by `transforms.core.runs.resolve_run`."""
    path = Path(run_dir)
    if not path.is_dir():
        raise UserError(f"{run_dir}: no such directory")
    if not any((path / marker).is_file() for marker in RUN_MARKERS):
        raise UserError(f"{run_dir} is not the output of a finished csdata run (no summary.json)")


def check_output(output: str) -> None:
    """`--output` must be creatable and writable, and must not be a directory of something else."""
    if "://" in output:
        from transforms.core.runs import probe_writable

        probe_writable(output)
        return
    path = Path(output)
    if path.exists() and not path.is_dir():
        raise UserError(f"--output {output} is a file, not a directory")
    if path.is_dir() and any(path.iterdir()) and not any((path / m).is_file() for m in RUN_MARKERS):
        raise UserError(f"--output {output} is a non-empty directory that is not a csdata run; "
                        "choose a new or empty directory")
    parent = path.resolve().parent
    while not parent.exists():
        parent = parent.parent
    try:   # a probe beside the output: permissions, read-only file systems, root or not
        tempfile.TemporaryDirectory(dir=parent, prefix=".csdata-probe-").cleanup()
        if path.is_dir() and not os.access(path, os.W_OK):
            raise PermissionError(path)
    except OSError:
        raise UserError(f"--output {output}: cannot write there") from None


# ---- output staging --------------------------------------------------------------------------

def staging_path(output: str) -> Path:
    """Where a run into `output` writes until it is swapped in: beside it, hidden."""
    path = Path(output).resolve()
    return path.with_name(f".{path.name}{STAGING_SUFFIX}")


def previous_path(output: str) -> Path:
    """Where the previous output of `output` waits, during a commit, to be removed: beside it."""
    path = Path(output).resolve()
    return path.with_name(f".{path.name}{PREVIOUS_SUFFIX}")


@contextlib.contextmanager
def staged(output: str, remote_writer: bool = False) -> Iterator[str]:
    """Yield the directory a run writes into; `commit(staging, output)` swaps it in.

    On any exception (Ctrl-C and SIGTERM included) the staging directory is removed and the
    previous output is untouched. A remote `output` (s3://, gs://) gets a new attempt folder under
    it (`transforms.core.runs`) when the command's writers are Beam's (`remote_writer`: workers on
    a cluster write there), else a local temporary directory that `commit` uploads; either way
    the leftovers of earlier failed attempts are removed first.
    """
    if "://" in output:
        with _remote_staging(output, remote_writer) as staging:
            yield staging
        return
    staging = staging_path(output)
    shutil.rmtree(staging, ignore_errors=True)   # a stale one from a killed run
    staging.mkdir(parents=True)
    ACTIVE_STAGING.append(staging)
    try:
        yield str(staging)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    finally:
        ACTIVE_STAGING.remove(staging)


@contextlib.contextmanager
def _remote_staging(output: str, remote_writer: bool) -> Iterator[str]:
    from transforms.core.runs import new_attempt, remove_attempts, remove_tree

    remove_attempts(output)
    if not remote_writer:
        with tempfile.TemporaryDirectory(prefix="csdata-staging-") as local:
            ACTIVE_STAGING.append(Path(local))
            try:
                yield local
            finally:
                ACTIVE_STAGING.remove(Path(local))
        return
    attempt = new_attempt(output)
    try:
        yield attempt
    except BaseException:
        with contextlib.suppress(Exception):   # the store may be what failed: the next run retries
            remove_tree(attempt)
        raise


def discard_staging() -> None:
    """Remove the staging directories of the runs in progress (a signal handler calls this)."""
    for staging in list(ACTIVE_STAGING):
        shutil.rmtree(staging, ignore_errors=True)


def mark_finished(staging: str, info: dict) -> None:
    """Write the marker of a finished run (what ran, with which csdata, when) into `staging`."""
    from transforms.core.io import write_json

    write_json(f"{staging.rstrip('/')}/{RUN_MARKER}", info)


def commit(staging: str, output: str, info: Optional[dict] = None) -> None:
    """Replace `output` by the finished run in `staging`: locally two renames in the same
    directory, on an object store one commit object written last (`transforms.core.runs`),
    which also carries `info` (what `mark_finished` wrote)."""
    if staging == output:
        return
    if "://" in output:
        _commit_remote(staging, output, info or {})
        return
    target, previous = Path(output).resolve(), previous_path(output)
    shutil.rmtree(previous, ignore_errors=True)
    # No interrupt between the two renames: the output is always either the old or the new run.
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        if target.exists():
            target.rename(previous)
        Path(staging).rename(target)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
    shutil.rmtree(previous, ignore_errors=True)


def _commit_remote(staging: str, output: str, info: dict) -> None:
    from transforms.core.runs import commit_attempt, new_attempt, remove_attempts, upload

    attempt = staging
    if "://" not in staging:   # a plain command's local staging: its files go up first
        attempt = new_attempt(output)
        upload(staging, attempt)
    commit_attempt(attempt, output, info)
    remove_attempts(output, keep=attempt)
