"""Running a pipeline: the offline runner default, Beam's options, the worker plugin, the tuning
of runs on this machine (the heap bound of local workers, the state sampler of bundles in
process), and the checks of a command line before any work starts (the output protocol is
`pipeline.outputs`)."""
from __future__ import annotations

import contextlib
import glob
import logging
import os
import re
import shutil
from typing import TYPE_CHECKING, Any, Iterator, Optional, Sequence

from pipeline.engine.logs import VERBOSE_ENV
from pipeline.engine.stores import retry_store_calls
from transforms.core.errors import JobFailed, StorageError, UserError
from transforms.core.models.heap import freeze_heap

if TYPE_CHECKING:
    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions

# Beam's in-process runner, by its full name (Beam's own default would first try to download the
# Prism runner, which fails offline).
DEFAULT_RUNNER = "apache_beam.runners.portability.fn_api_runner.FnApiRunner"
# csdata's steps are written for cloudpickle, which pickles functions and lambdas by value. Named
# although it is Beam's default, so that a run's recorded options say which pickler it used.
PICKLE_LIBRARY = "cloudpickle"


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
# What Beam's in-process runner raises when one of its worker processes died (killed, out of
# memory, a crash in native code): the worker's own output is in the run's log.
WORKER_LOST = ("Channel closed prematurely", "Worker subprocess exited")
# A work folder's one-line error (`transforms.core.resume.checkpoint.DamagedWork`) as a worker
# process of the local runner reports it: the driver gets its text.
DAMAGED_WORK = re.compile(r"DamagedWork: (.+?)(?: \[while running [^\]]*\])?$", re.M)


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
    and each local SDK worker through `pipeline.engine.worker`), unless `csdata -v` set `VERBOSE_ENV`;
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
    and, for a Flink cluster, csdata's defaults for it (`pipeline.engine.flink`)."""
    from apache_beam.options.pipeline_options import PipelineOptions

    from pipeline.engine.flink import cluster_args

    args = [f"--runner={DEFAULT_RUNNER}" if a == "--runner=FnApiRunner" else a for a in extra]
    if not any(a == "--runner" or a.startswith("--runner=") for a in args):
        args.append(f"--runner={DEFAULT_RUNNER}")
    if not any(a.startswith("--pickle_library") for a in args):
        args.append(f"--pickle_library={PICKLE_LIBRARY}")
    return PipelineOptions(cluster_args(args))


def default_options() -> PipelineOptions:
    """Options of a library call without CLI flags: the in-process runner, which needs no download."""
    return beam_options([])


# glibc's malloc serves a block above its mmap threshold by mmap and returns it to the system
# when freed, but raises the threshold to the size of each such block freed (up to 32 MiB). The
# local runner moves a fused stage's whole input and output as single messages of several MiB, so
# after the first one they would come from the heap, whose freed space stays in the process. A
# fixed threshold (which also stops the raising) keeps such blocks out of the heap. It sits above
# the workers' data messages (`pipeline.engine.worker`), since a lower one costs spaCy's per-batch
# arrays an mmap and its page faults each (figures: docs/benchmarks.md).
MALLOC_MMAP_THRESHOLD = 8 * 1024 * 1024
MALLOC_ENV = "MALLOC_MMAP_THRESHOLD_"


def bound_worker_heap() -> None:
    """Fix glibc's mmap threshold for the worker processes the local runner starts from here
    (`--direct_running_mode=multi_processing`; they inherit this environment), unless the user
    set one. No effect on this process, on other allocators or on remote runners' workers."""
    os.environ.setdefault(MALLOC_ENV, str(MALLOC_MMAP_THRESHOLD))


WORKER_PLUGIN = "pipeline.engine.worker"   # imported by each SDK worker as it starts (by name: see there)


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
        # The options that differ from Beam's defaults: a worker's parser knows every one (a
        # default flag such as `pipeline_type_check` has no `--` form it could parse).
        encoded = JobServiceHandle.encode_pipeline_options(options.get_all_options(drop_default=True))
        provision = ExtendedProvisionInfo(beam_provision_api_pb2.ProvisionInfo(pipeline_options=encoded))
        shutil.rmtree(pipeline.local_tempdir, ignore_errors=True)   # Beam removes it only in run()
        pipeline = beam.Pipeline(runner=local_runner(provision), options=options)
    return pipeline


def local_runner(provision: Any) -> Any:
    """Beam's in-process runner with `provision`, whose `multi_processing` workers are
    `pipeline.engine.local_worker` (their stderr in the run's log) rather than Beam's own
    command; everything else as Beam runs it."""
    from apache_beam.portability import python_urns
    from apache_beam.runners.portability.fn_api_runner.fn_runner import FnApiRunner

    from pipeline.engine.local_worker import COMMAND

    class LocalRunner(FnApiRunner):
        def run_via_runner_api(self, pipeline_proto, options):
            for environment in pipeline_proto.components.environments.values():
                if (environment.urn == python_urns.SUBPROCESS_SDK
                        and environment.payload.endswith(b"-m apache_beam.runners.worker.sdk_worker_main")):
                    environment.payload = COMMAND.encode("utf-8")
            return super().run_via_runner_api(pipeline_proto, options)

    return LocalRunner(provision_info=provision)


# Beam's state sampler (a thread per bundle that times the steps for the execution-time
# metrics) sleeps in periods that grow from 2 ms up to 200 ms, and a bundle's end waits for its
# current sleep. Runs in process are chains of short fused stages, one bundle each, so every
# stage would wait; the sampler sleeps without the GIL, so waking often costs the steps nothing.
SAMPLING_PERIOD_MS = 1


@contextlib.contextmanager
def short_state_sampling(period_ms: int = SAMPLING_PERIOD_MS) -> Iterator[None]:
    """Within this block, the bundles that Beam's SDK harness starts in this process (the local
    runner in process) sample at most every `period_ms` (Beam's default: 200 ms), so a bundle's
    end waits at most that long for the sampler thread. No effect on other processes' workers."""
    from apache_beam.runners.worker import statesampler

    init = statesampler.StateSampler.__init__
    defaults = init.__defaults__
    if defaults is None or len(defaults) != 1:   # another Beam's signature: leave it alone
        yield
        return
    init.__defaults__ = (period_ms,)
    try:
        yield
    finally:
        init.__defaults__ = defaults


@contextlib.contextmanager
def whole_data_sends() -> Iterator[None]:
    """Within this block, Beam's in-process runner (FnApiRunner) sends a stage's input to its
    workers with no timed flush: each stream is flushed by size and when it is closed.

    Why: with several workers (`multi_processing`, `multi_threading`) the runner writes a
    materialized collection (a Flatten of several steps' outputs, so any CoGroupByKey too) to a
    worker in ~10 MB chunks, into a stream whose flush thread runs every
    `DATA_BUFFER_TIME_LIMIT_MS` (1000 ms). `flush()` holds a lock that `write()` does not take,
    and clears the buffer after sending it: chunks written during a flush are lost, and the
    worker decodes a shorter, valid stream. On the whole Blog Authorship Corpus 6 of 8 runs of
    the reader's old Flatten lost 14,000-171,000 of 681,288 posts; with no flush thread, none
    (docs/runners.md). The setting is the module's, read when the runner starts its data server,
    so it is set only around a run in this process."""
    from apache_beam.runners.portability.fn_api_runner import worker_handlers

    before = getattr(worker_handlers, "DATA_BUFFER_TIME_LIMIT_MS", None)
    if before is None:   # another Beam's runner: leave it alone
        yield
        return
    worker_handlers.DATA_BUFFER_TIME_LIMIT_MS = 0
    try:
        yield
    finally:
        worker_handlers.DATA_BUFFER_TIME_LIMIT_MS = before


def run_pipeline(pipeline: beam.Pipeline):
    """Run `pipeline` (best made by `new_pipeline`) to the end, its local workers with
    `bound_worker_heap` and its progress on one line of this process's stderr
    (`pipeline.engine.progress.RunProgress`); returns its result.

    The first run in a process first freezes what the process holds (`freeze_heap`): its
    modules, the spec and the graph stay for the run, and full collections skip them."""
    from pipeline.engine.flink import cluster_master
    from pipeline.engine.flink_jobs import run_on_cluster
    from pipeline.engine.progress import RunProgress

    bound_worker_heap()
    freeze_heap("run")
    master = cluster_master(pipeline.options)
    with RunProgress(pipeline) as progress:   # the run's one progress line, in this process
        if master is not None:
            result = run_on_cluster(pipeline, master, progress)
        else:
            with short_state_sampling(), whole_data_sends():
                try:
                    result = pipeline.run()
                    result.wait_until_finish()
                except RuntimeError as error:
                    damaged = DAMAGED_WORK.search(str(error))
                    if damaged:   # a worker process's DamagedWork reaches here as text
                        raise StorageError(damaged.group(1)) from error
                    lost = next((m for m in WORKER_LOST if m in str(error)), None)
                    if lost is None:
                        raise
                    raise JobFailed(f"a worker process of the local runner ended mid-run ({lost}); its "
                                    f"last words are in the run's log") from error
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
    """Refuse options that neither csdata nor Beam knows (`--spce`), instead of Beam's warning.
    On a Flink cluster, the options of Beam's Flink job server count as Beam's."""
    import argparse

    from apache_beam.options.pipeline_options import PipelineOptions

    from pipeline.engine.flink import JOB_SERVER_OPTIONS, flink_master

    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    if flink_master(extra) is not None:
        for name in JOB_SERVER_OPTIONS:
            parser.add_argument(f"--{name}", nargs="?")   # a flag alone, or with its value
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
    (`transforms.core.io.files`), so no list of the files is built here."""
    from pipeline.engine.stores import check_patterns

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
