"""`csdata`: regenerate ReCoRD, Cosmos QA and ProtoQA with Apache Beam.

Unknown options are passed to Beam, so `--runner`, `--direct_running_mode=multi_processing`,
`--project`, `--temp_location`, `--setup_file` ... work as in any Beam program. Without
`--runner` the pipeline runs in process on Beam's FnApiRunner, which needs no download.
"""
from __future__ import annotations

import argparse
import logging
import os
import sys
import traceback
from pathlib import Path
from typing import Optional, Sequence

from data_specs import SpecError
from transforms.core.errors import UserError

DEFAULT_RUNNER = "FnApiRunner"
EXIT_USER_ERROR = 2        # argparse's code for usage errors, used for every user error
EXIT_ACCOUNTING = 3        # a stage's in != kept + rejected
EXIT_INTERRUPTED = 130     # 128 + SIGINT, as shells report Ctrl-C
EXIT_BROKEN_PIPE = 141     # 128 + SIGPIPE, as shells report a closed pipe
# Dataset entry modules, in the order of `csdata --help` and `csdata demo`. Each defines:
#   add_commands(commands, add_spec_args)  add its `csdata NAME ...` subcommands
#   run(args, extra, beam_options) -> int   run the parsed subcommand (extra: Beam options)
#   is_run(path) -> bool, stats(path) -> str   `csdata stats` for its output directories
#   demo(output_dir, make_options)          its part of `csdata demo`; returning False (a stage
#                                           lost records) makes the demo exit with status 3
DATASET_MODULES = ("pipeline.record", "pipeline.cosmos", "pipeline.protoqa")


def quiet_beam_import_warning() -> None:
    """Drop Beam's import-time warning that Google API clients are absent (irrelevant off GCP)."""
    logging.getLogger().addFilter(lambda record: "apitools not found" not in record.getMessage())


def beam_options(extra: Sequence[str]):
    """PipelineOptions from the arguments csdata did not consume, with the offline runner default."""
    from apache_beam.options.pipeline_options import PipelineOptions

    args = list(extra)
    if not any(a == "--runner" or a.startswith("--runner=") for a in args):
        args.append(f"--runner={DEFAULT_RUNNER}")
    return PipelineOptions(args)


def _add_spec_args(parser: argparse.ArgumentParser, default: str) -> None:
    parser.add_argument("--spec", default=default,
                        help=f"spec name in data_specs/ or a YAML path (default: {default})")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="override a spec value, e.g. --set passage.min_tokens=120 (repeatable)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="csdata", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-v", "--verbose", action="store_true", help="log Beam's progress")
    parser.add_argument("--debug", action="store_true",
                        help="show the traceback of an error, not just its one-line message")
    commands = parser.add_subparsers(dest="command", required=True)

    for module in dataset_modules():
        module.add_commands(commands, _add_spec_args)

    stats = commands.add_parser("stats", help="a run's statistics beside its paper's Table 1")
    stats.add_argument("run_dir", help="output directory of a csdata run (ReCoRD, Cosmos QA, ProtoQA)")

    demo = commands.add_parser("demo", help="run the pipelines on the sample inputs in the repo")
    demo.add_argument("--output", default="out/demo")
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


def cmd_demo(args, extra: Sequence[str]) -> int:
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
    debug = "--debug" in argv          # accepted anywhere on the line, not only before the command
    argv = [a for a in argv if a != "--debug"]
    try:
        return _main(argv)
    except (SpecError, UserError) as error:
        return _user_error(str(error), debug)
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError) as error:
        return _user_error(f"{error.strerror}: {error.filename}" if error.filename else str(error), debug)
    except BrokenPipeError:
        # The reader went away: point stdout at /dev/null so the interpreter's final flush is quiet.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except KeyboardInterrupt:
        print("csdata: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def _user_error(message: str, debug: bool) -> int:
    if debug:
        traceback.print_exc()
    print(f"csdata: error: {message}", file=sys.stderr)
    return EXIT_USER_ERROR


def _main(argv: Optional[Sequence[str]] = None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING)
    for module in dataset_modules():
        if args.command == module.__name__.rsplit(".", 1)[-1]:
            return module.run(args, extra, beam_options)
    if extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    if args.command == "stats":
        code = cmd_stats(args)
        if code is None:
            parser.error(f"{args.run_dir} is not the output directory of a ReCoRD, Cosmos QA or "
                         "ProtoQA run")
        return code
    if args.command == "demo":
        return cmd_demo(args, extra)
    parser.error("unknown command")
    return 2


if __name__ == "__main__":
    sys.exit(main())
