"""`csdata`: regenerate ReCoRD, Cosmos QA and ProtoQA with Apache Beam.

Unknown options are passed to Beam, so `--runner`, `--direct_running_mode=multi_processing`,
`--project`, `--temp_location`, `--setup_file` ... work as in any Beam program. Without
`--runner` the pipeline runs in process on Beam's FnApiRunner, which needs no download.
"""
from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import sys
import traceback
from functools import lru_cache
from pathlib import Path
from typing import Optional, Sequence

from pipeline.cli.provenance import describe
from pipeline.cli.run import EXIT_ACCOUNTING, add_output_options, run_command
from pipeline.engine.logs import VERBOSE_ENV, forget_log, log_hint
from pipeline.engine.runner import beam_options, check_beam_args, quiet_beam_noise
from pipeline.outputs.protocol import COMMITTED, committed_now, discard_active
from pipeline.outputs.storage import clean_output, names_remote, resolve_runs, use_store_options
from transforms.core.errors import JobFailed, StorageError, UserError
from transforms.core.progress.lines import ENABLED_ENV as PROGRESS_ENV

QUIET_FLAGS = {"-q", "--quiet"}
EXIT_USER_ERROR = 2        # argparse's code for usage errors, used for every user error
EXIT_JOB_FAILED = 1        # a job failed on a cluster (one line: its id and first worker error)
EXIT_INTERRUPTED = 130     # 128 + SIGINT, as shells report Ctrl-C
EXIT_BROKEN_PIPE = 141     # 128 + SIGPIPE, as shells report a closed pipe
# Dataset entry modules, in the order of `csdata --help` and `csdata demo`. Each defines:
#   add_commands(commands, add_spec_args)  add its `csdata NAME ...` subcommands
#   run(args, extra, beam_options) -> int   run the parsed subcommand (extra: Beam options)
#   is_run(path) -> bool, stats(path) -> str   `csdata stats` for its output directories
#   demo(output_dir, make_options)          its part of `csdata demo`; returning False (a stage
#                                           lost records) makes the demo exit with status 3
DATASET_MODULES = ("pipeline.cli.record", "pipeline.cli.cosmos", "pipeline.cli.protoqa")


@lru_cache(maxsize=1)
def csdata_version() -> str:
    """The installed package's version, read on first use (importlib.metadata is slow to load)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("csdata")
    except PackageNotFoundError:   # a source checkout that was never installed
        return "0+unknown"


def __getattr__(name: str) -> str:
    """`pipeline.cli.main.__version__`, computed when first asked for."""
    if name == "__version__":
        return csdata_version()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class _VersionAction(argparse.Action):
    """`--version`: argparse's version action, with the version looked up only when asked."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS,
                 help="show the version and exit"):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"csdata {csdata_version()}")
        parser.exit()


def quiet_beam_import_warning() -> None:
    """Drop Beam's import-time warning that Google API clients are absent (irrelevant off GCP)."""
    logging.getLogger().addFilter(lambda record: "apitools not found" not in record.getMessage())


def _add_spec_args(parser: argparse.ArgumentParser, default: str) -> None:
    parser.add_argument("--spec", default=default,
                        help=f"spec name in data_specs/ or a YAML path (default: {default})")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="override a spec value, e.g. --set passage.min_tokens=120 (repeatable)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="csdata", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-v", "--verbose", action="store_true", help="log Beam's progress")
    parser.add_argument("--version", action=_VersionAction)
    parser.add_argument("-q", "--quiet", action="store_true",
                        help="no progress lines on stderr (they are on by default for long runs)")
    parser.add_argument("--debug", action="store_true",
                        help="show the traceback of an error, not just its one-line message")
    commands = parser.add_subparsers(dest="command", required=True)

    for module in dataset_modules():
        module.add_commands(commands, _add_spec_args)

    stats = commands.add_parser("stats", help="a run's statistics beside its paper's Table 1")
    stats.add_argument("run_dir", help="output directory of a csdata run (ReCoRD, Cosmos QA, ProtoQA)")

    report = commands.add_parser(
        "report", help="a run as one self-contained HTML page (Table 1, lengths, funnel, samples)",
        description="Write OUTPUT/index.html: Table 1 beside the paper's (the cells of `csdata "
                    "stats`), length distributions, the stage funnel with example rejects, entity "
                    "labels and sample rows. Plots are inline SVG; the page needs no network.")
    report.add_argument("run_dir", help="output directory of a csdata run (ReCoRD, Cosmos QA, ProtoQA)")
    report.add_argument("--output", required=True, help="folder to write index.html into")
    report.add_argument("--sample-rows", type=_count, default=5, metavar="N",
                        help="rows of the dataset shown (default 5; 0 shows no text of the inputs)")
    report.add_argument("--reference", metavar="FILE",
                        help="a published release file of the run's dataset (ReCoRD official JSON/JSONL, "
                             "Cosmos QA CSV/JSONL, ProtoQA protoqa-data JSONL): its Table 1 column and "
                             "distributions beside the run's, computed by the same code")

    diff = commands.add_parser(
        "diff", help="a run against the published release of its dataset: what matches, what differs and why",
        description="ReCoRD: a run's passages, entity spans, queries, answers and query ids against the "
                    "official JSON (or SuperGLUE JSONL) of the same articles; every lost or differing "
                    "query with its cause (the code `make fidelity` reports with). ProtoQA: a `release` "
                    "or `sheets adjudicate` run against protoqa-data JSONL: questions kept and dropped "
                    "by id, cluster counts, BLANC per question. Cosmos QA: a run's paragraphs against "
                    "the published CSV/JSONL: length distributions and the published contexts found "
                    "among the paragraphs. A file of another dataset or format: one line, exit 2.")
    diff.add_argument("run_dir", help="output directory of a csdata run (ReCoRD, Cosmos QA, ProtoQA)")
    diff.add_argument("--release", required=True, metavar="FILE", help="the published file to compare with")
    diff.add_argument("--json", action="store_true", help="print the account as JSON")

    clean = commands.add_parser(
        "clean", help="remove what no run needs at an output (dead attempts, the replaced run, resumable work); "
             "refused while a run holds it",
        description="Remove the attempt folders no commit names (failed or killed runs), the attempt "
                    "the last commit replaced, and the resumable work of interrupted runs, locally "
                    "(in .NAME.csdata beside OUTPUT) and on an object store (under OUTPUT). The "
                    "committed run is never touched. It holds the output's lease while it removes, "
                    "so it is refused in one line while a run writes into OUTPUT.")
    clean.add_argument("output", help="an output directory (local or s3://...)")

    describe = commands.add_parser(
        "describe", help="a Parquet file's metadata, rows and fields (types and descriptions)",
        description="Prints the file metadata (csdata version, spec and input hashes, run date), "
                    "the row count and every field with its type and schema description. FILE may "
                    "be a table folder (all its shards).")
    describe.add_argument("file", help="a Parquet file csdata wrote, or a table folder")

    demo = commands.add_parser("demo", help="run the pipelines on the sample inputs in the repo")
    demo.add_argument("--output", default="out/demo")
    add_output_options(parser)
    return parser


def dataset_modules() -> list:
    """The importable dataset entry modules of `DATASET_MODULES`, in order."""
    import importlib

    return [importlib.import_module(name) for name in DATASET_MODULES
            if importlib.util.find_spec(name) is not None]


def cmd_stats(args) -> Optional[int]:
    """Print the statistics of the dataset run in `args.run_dir`; None when no dataset claims it."""
    for module in dataset_modules():
        if module.is_run(args.run_dir):
            print(module.stats(args.run_dir))
            return 0
    return None


def _count(text: str) -> int:
    """A non-negative integer option value."""
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {text!r}")
    return int(text)


def cmd_report(args) -> Optional[int]:
    """Write the HTML report of the run in `args.run_dir`; None when no dataset claims it."""
    import importlib

    from transforms.core.reporting.report import write_report

    if Path(args.output).is_file():
        raise UserError(f"--output {args.output} is a file, not a directory")
    for module in dataset_modules():
        if module.is_run(args.run_dir):
            dataset = module.__name__.rsplit(".", 1)[-1]
            builder = importlib.import_module(f"transforms.{dataset}.report")
            report = builder.build(args.run_dir, args.sample_rows, args.reference)
            print(write_report(report, args.output))
            return 0
    return None


def cmd_diff(args) -> Optional[int]:
    """Print the run's account against a published file; None when no dataset claims the run."""
    import importlib
    import json

    for module in dataset_modules():
        if module.is_run(args.run_dir):
            dataset = module.__name__.rsplit(".", 1)[-1]
            differ = importlib.import_module(f"transforms.{dataset}.diff")
            report = differ.diff(args.run_dir, args.release)
            print(json.dumps(report, indent=1, ensure_ascii=False) if args.json else differ.format_diff(report))
            return 0
    return None


def cmd_demo(args, extra: Sequence[str]) -> int:
    """Every dataset's demo on the sample inputs; `EXIT_ACCOUNTING` when a stage lost records."""
    balanced = True
    for index, module in enumerate(dataset_modules()):
        if index:
            print()
        balanced &= module.demo(Path(args.output), lambda: beam_options(extra)) is not False
    return 0 if balanced else EXIT_ACCOUNTING


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run `csdata` with the one error policy.

    A user error (a bad spec value, a missing model or input file, a malformed results file or
    sheet) is one line on stderr and exit 2, with the traceback only under `--debug`; a closed
    stdout (`csdata record export RUN | head`) ends quietly; Ctrl-C ends with exit 130.
    """
    quiet_beam_import_warning()   # before anything imports Beam
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv          # --debug and --quiet are accepted anywhere on the line
    quiet, progress_before = bool(QUIET_FLAGS & set(argv)), os.environ.get(PROGRESS_ENV)
    if quiet:
        os.environ[PROGRESS_ENV] = "0"   # read where each pipeline is built, then pickled along
    argv = [a for a in argv if a != "--debug" and a not in QUIET_FLAGS]
    # SIGTERM (a scheduler, `kill`) ends a run like Ctrl-C: its attempt removed, previous output kept.
    signal.signal(signal.SIGTERM, _interrupt)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:   # not a job started with `&`
        signal.signal(signal.SIGINT, _interrupt)
    forget_log()
    COMMITTED.clear()
    try:
        return _main(argv)
    except BaseException as error:
        return _fail(error, debug)
    finally:
        forget_log()   # a later command in this process (a test, a notebook) names no stale log
        if quiet:
            os.environ.pop(PROGRESS_ENV, None)
            if progress_before is not None:
                os.environ[PROGRESS_ENV] = progress_before
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        if signal.getsignal(signal.SIGINT) is _interrupt:
            signal.signal(signal.SIGINT, signal.default_int_handler)


def _fail(error: BaseException, debug: bool) -> int:
    """The exit code (and the one line) for an exception that ended a command."""
    # A SpecError can only come from a loaded data_specs; importing it here (pydantic) would slow
    # every exit, `--help` (a SystemExit) included.
    spec_error = getattr(sys.modules.get("data_specs"), "SpecError", UserError)
    try:
        raise error
    except (spec_error, UserError) as error:
        return _user_error(str(error), debug)
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError) as error:
        return _user_error(f"{error.strerror}: {error.filename}" if error.filename else str(error), debug)
    except (JobFailed, StorageError) as error:
        return _user_error(str(error), debug, EXIT_JOB_FAILED, f"; {outcome()}{log_hint()}")
    except BrokenPipeError:
        # The reader went away: point stdout at /dev/null so the interpreter's final flush is quiet.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except KeyboardInterrupt:
        print(f"csdata: interrupted; {outcome()}{log_hint()}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as error:
        # A full disk wherever it struck (taking the lease, writing the commit): one line, not
        # a traceback; any other exception is a bug, shown with its traceback.
        from pipeline.engine.stores import is_no_space

        if not is_no_space(error):
            raise
        return _user_error("no space left (the disk or bucket is full)", debug, EXIT_JOB_FAILED,
                           f"; {outcome()}")


def outcome() -> str:
    """What a run that ended in an error or an interrupt left at its output: the previous
    output, or, past its commit point, the new one."""
    output = committed_now()
    return f"the new output at {output} is committed" if output else "previous output kept"


def _interrupt(signum: int, frame) -> None:
    """End the run now: cancel its jobs on a cluster, then remove its attempt (the previous
    output was never touched).

    No exception is raised: the signal can land inside native code (a model loading in C++),
    where a Python exception aborts the process instead of unwinding it.
    """
    # First, as a job left running would write on into the attempt. Only a run that set up a cluster
    # run has imported pipeline.engine.flink_jobs (its urllib would slow every start).
    flink = sys.modules.get("pipeline.engine.flink_jobs")
    cancelled = flink.cancel_running_jobs() if flink is not None else []
    discard_active()
    jobs = "".join(f"; Flink job {job_id} cancelled" for job_id in cancelled)
    sys.stderr.write(f"csdata: interrupted ({signal.Signals(signum).name}){jobs}; {outcome()}{log_hint()}\n")
    sys.stderr.flush()
    os._exit(EXIT_INTERRUPTED)


def _user_error(message: str, debug: bool, code: int = EXIT_USER_ERROR, suffix: str = "") -> int:
    """Print the one line of an error (the first line of `message`, bounded, then `suffix`) and
    return `code`; under `--debug` the traceback comes first."""
    if debug:
        traceback.print_exc()
    limit = 2000   # a spec's eight problems fit; a message that renders a whole value does not
    first = next((line for line in message.splitlines() if line.strip()), "").rstrip()
    if len(first) > limit:
        first = first[:limit - 3] + "..."
    print(f"csdata: error: {first}{suffix}", file=sys.stderr)
    return code


def _main(argv: Optional[Sequence[str]] = None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    args.argv = list(argv or [])   # recorded in provenance.json, rerun by `reproduce`
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING)
    if args.verbose:
        os.environ[VERBOSE_ENV] = "1"   # read by quiet_beam_noise, here and in local workers
    quiet_beam_noise()
    for module in dataset_modules():
        if args.command == module.__name__.rsplit(".", 1)[-1]:
            return run_command(module, args, extra)
    if args.command in ("stats", "report", "diff"):
        if extra:   # Beam's options for an object store (--s3_endpoint_url ...)
            check_beam_args(extra)
        with contextlib.ExitStack() as stack:
            if names_remote(args):
                use_store_options(extra)
            resolve_runs(args, stack)
            code = {"stats": cmd_stats, "report": cmd_report, "diff": cmd_diff}[args.command](args)
        if code is None:
            parser.error(f"{args.run_dir} is not the output directory of a ReCoRD, Cosmos QA or "
                         "ProtoQA run")
        return code
    if args.command == "clean":
        check_beam_args(extra)
        for leftover in clean_output(args.output, extra):
            print(f"removed {leftover}")
        return 0
    if extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    if args.command == "describe":
        print(describe(args.file))
        return 0
    if args.command == "demo":
        return cmd_demo(args, extra)
    parser.error("unknown command")
    return 2


if __name__ == "__main__":
    sys.exit(main())
