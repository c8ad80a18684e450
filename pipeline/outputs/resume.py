"""Resume: a rerun after a kill reuses the work the killed run finished.

The stages before the first model keep their output under the output's `work/KEY/` once they
are done (`transforms.core.checkpoint`: ReCoRD's curated splits, Cosmos QA's stories read), and
the model steps (ReCoRD's annotation, Cosmos QA's sentences and coherence) store their results
in pieces as they go (`transforms.core.memo`). KEY is a hash of
everything that decides those results: the command, its arguments (not the output), the
validated spec, the input files (path and size), the installed versions of csdata, its libraries
and its models, and csdata's own source files. A rerun of the same command finds them under the same KEY and
skips what they hold; a run under another spec, model or input gets another KEY and never sees
them. A commit removes the work; `--fresh` removes it before the run starts.
"""
from __future__ import annotations

import argparse
import hashlib
import json
from functools import lru_cache
from pathlib import Path
from typing import Any, Optional

from pipeline.outputs.paths import OutputPaths, join, remove_tree

# Arguments that do not change what a run computes.
NOT_KEYED = {"output", "final_output", "argv", "verbose", "quiet", "debug", "fresh", "lease_timeout",
             "work", "command_parser", "writes_output", "beam_writer", "beam_reader"}


def run_key(args: argparse.Namespace) -> str:
    """The hash naming a run's work (see the module doc): 16 hex digits."""
    from transforms.core.provenance import input_files, input_list_sha256, spec_sha256, versions

    arguments = {k: v for k, v in vars(args).items() if k not in NOT_KEYED and _plain(v)}
    spec: Optional[str] = None
    if isinstance(getattr(args, "spec", None), str):
        from data_specs import load_spec

        spec = spec_sha256(load_spec(args.spec, getattr(args, "overrides", [])))
    inputs = getattr(args, "input", None)
    files = input_list_sha256(input_files(inputs)) if isinstance(inputs, list) else None
    text = json.dumps({"arguments": arguments, "spec": spec, "inputs": files, "versions": versions(),
                       "code": code_sha256()}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


PACKAGES = ("data_specs", "filters", "transforms", "pipeline")


@lru_cache(maxsize=1)
def code_sha256() -> str:
    """sha256 of csdata's own source files: a checkout edited between a kill and its rerun
    (same version number, other code) gets another KEY."""
    root = Path(__file__).resolve().parents[2]
    digest = hashlib.sha256()
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*")):
            if path.suffix in (".py", ".yaml") and path.is_file():
                digest.update(str(path.relative_to(root)).encode("utf-8") + b"\0" + path.read_bytes())
    return digest.hexdigest()


def _plain(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float, bool, list, tuple))


def work_folder(output: str, key: str, fresh: bool = False) -> str:
    """The work folder of the run `key` into `output`; `fresh` removes every earlier run's work."""
    paths = OutputPaths(output)
    if fresh:
        remove_tree(paths.work)
    return join(paths.work, key)


def resume_line(work: str) -> Optional[str]:
    """`resuming: ...` when `work` holds results of an interrupted run, else None."""
    from transforms.core.checkpoint import done_checkpoints
    from transforms.core.memo import count_stored

    reused = [f"the {done['stage']} stages' output ({done['elements']['kept']:,} records, "
              f"{done['elements']['rejects']:,} rejects)" for done in done_checkpoints(work)]
    pieces, results = count_stored(work)
    if results:
        reused.append(f"{results:,} model results in {pieces:,} pieces")
    if not reused:
        return None
    return (f"csdata: resuming an interrupted run: {' and '.join(reused)} "
            f"{'is' if len(reused) == 1 and not results else 'are'} reused ({work}; --fresh starts over)")
