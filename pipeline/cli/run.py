"""Running one dataset command: the checks before any work, and for a command that writes
`--output`, the output protocol around it (`pipeline.outputs`: lease, attempt, resumable work,
commit), then the lines a finished run prints.

A command writes through the protocol when its parser sets `writes_output=True`; `beam_writer`
says Beam's workers write the attempt themselves (on an object store too), `beam_reader` that
they read the inputs. `add_output_options` gives every such command `--fresh` and
`--lease-timeout`.
"""
from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path
from typing import Mapping, Sequence

from pipeline.cli.provenance import record_provenance
from pipeline.engine.runner import beam_options, check_beam_args, check_inputs
from pipeline.engine.stores import is_no_space, storage_reason
from pipeline.outputs.storage import names_remote, resolve_runs, store_options_removed, use_store_options
from transforms.core.errors import StorageError

EXIT_ACCOUNTING = 3        # a stage's in != kept + rejected


def balanced(summary: Mapping) -> bool:
    """Whether every stage of a run's summary keeps its accounting (in = kept + rejected)."""
    return all(stage["balanced"] for stage in summary["stages"].values())


def summary_exit(summary: Mapping, units: Mapping[str, str]) -> int:
    """Print the stage table of `summary` and return the command's exit code: 0, or
    `EXIT_ACCOUNTING` when a stage lost records."""
    from transforms.core.accounting import format_summary

    print(format_summary({"stages": summary["stages"]}, units))
    return 0 if balanced(summary) else EXIT_ACCOUNTING


def run_command(module, args: argparse.Namespace, extra: Sequence[str]) -> int:
    """Check what can be checked before any work starts, then run a dataset command; a command
    that writes `--output` runs through the output protocol (`run_into_output`)."""
    if extra and getattr(args, "command_parser", None) is None:
        check_beam_args(extra)
    store_args = list(extra)   # for the lease on an object store
    with contextlib.ExitStack() as stack:
        if names_remote(args):
            use_store_options(extra)
            if not getattr(args, "beam_writer", False):   # used up here: the command runs no Beam
                extra = store_options_removed(extra)
        if isinstance(getattr(args, "input", None), list):
            check_inputs(args.input)
        resolve_runs(args, stack)
        if not getattr(args, "writes_output", False):
            return module.run(args, extra, beam_options)
        return run_into_output(module, args, extra, store_args)
    return 0   # mypy: ExitStack may swallow exceptions


def run_into_output(module, args: argparse.Namespace, extra: Sequence[str], store_args: Sequence[str]) -> int:
    """Run a command that writes `--output` through the output protocol; a full disk or a store
    error while writing is one `StorageError` line."""
    from pipeline.outputs import protocol, resume

    output = args.output
    protocol.check_output(output)
    key = resume.run_key(args)   # checks the spec too: a bad value ends here, before the lease
    options = beam_options(store_args) if output.startswith("s3://") else None
    try:
        return run_attempt(module, args, extra, key, options)
    except Exception as error:
        if is_no_space(error):
            raise StorageError(f"no space left writing {output} (the disk or bucket is full)") from error
        reason = storage_reason(error) if "://" in output else None
        if reason:
            raise StorageError(f"writing {output}: {reason}") from error
        raise


def run_attempt(module, args: argparse.Namespace, extra: Sequence[str], key: str, options) -> int:
    """One attempt: the command writes into it (`args.output` becomes the attempt folder,
    `args.final_output` the output), then it is committed, kept for inspection (a stage lost
    records) or discarded."""
    from pipeline.engine.logs import run_log
    from pipeline.outputs import protocol, resume
    from pipeline.outputs.paths import OutputPaths

    output = args.output
    beam_writer = getattr(args, "beam_writer", False)
    # The log starts once the lease is held: a run refused for a live one leaves its log alone.
    with protocol.begin(output, local_files=not beam_writer, timeout=args.lease_timeout,
                        options=options) as run, run_log(OutputPaths(output).log):
        for note in run.notes:
            print(f"csdata: {note}", file=sys.stderr)
        if beam_writer:
            args.work = resume.work_folder(output, key, fresh=args.fresh)
            line = resume.resume_line(args.work)
            if line:
                print(line, file=sys.stderr)
        args.output, args.final_output = run.folder, output
        code = module.run(args, extra, beam_options)
        if code == 0:
            record_provenance(run.folder, args)   # provenance.json: inputs, spec, versions
            protocol.commit(run, protocol.run_info(args.command, " ".join(command_words(args))))
            print(f"\noutput: {output}" + written_tables(output))
            left = protocol.left_line(run)
            if left:
                print(left, file=sys.stderr)
        elif code == EXIT_ACCOUNTING:
            run.keep = True
            print(f"csdata: a stage lost records; previous output at {output} kept, this run's "
                  f"output left in {run.attempt}", file=sys.stderr)
        else:
            protocol.discard(run)
    return code


def add_output_options(parser: argparse.ArgumentParser) -> None:
    """`--fresh` and `--lease-timeout` on every command that writes an output (`writes_output`),
    and `--verify-inputs` on those that resume (`beam_writer`), at any depth of subcommands."""
    from pipeline.outputs.lease import DEFAULT_TIMEOUT

    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        for sub in dict.fromkeys(action.choices.values()):
            if sub.get_default("writes_output"):
                sub.add_argument("--fresh", action="store_true",
                                 help="start over: do not reuse the work of an interrupted run into this output")
                sub.add_argument("--lease-timeout", type=float, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                                 help="a run into the same output whose heartbeat is older than this is "
                                      f"taken for dead and its lease taken over (default {DEFAULT_TIMEOUT:g})")
            if sub.get_default("writes_output") and sub.get_default("beam_writer"):   # resumable
                sub.add_argument("--verify-inputs", action="store_true",
                                 help="key the resumable work by the input files' content (sha256) rather "
                                      "than their size and modification time")
            add_output_options(sub)


def written_tables(output: str) -> str:
    """The rows and path of each Parquet table a run wrote ("" when it wrote none)."""
    if "://" in output:
        return ""
    tables = sorted(p.name for p in Path(output).iterdir() if p.is_dir() and any(p.glob("*.parquet")))
    if not tables:
        return ""
    from transforms.core.io.written import format_written  # pyarrow: only for runs that wrote Parquet

    return f"\n{format_written(output, tables)}"


def command_words(args: argparse.Namespace) -> list[str]:
    """`record generate`, `protoqa sheets import` ...: the subcommand names of a parsed line."""
    return [v for k, v in vars(args).items() if k == "command" or k.endswith("_command") and isinstance(v, str)]
