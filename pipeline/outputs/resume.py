"""Resume: a rerun after a kill reuses the work the killed run finished.

The stages before the first model keep their output under the output's `work/KEY/` once they
are done (`transforms.core.resume.checkpoint`: ReCoRD's curated splits, Cosmos QA's stories read), and
the model steps (ReCoRD's annotation, Cosmos QA's sentences and coherence) store their results
in pieces as they go (`transforms.core.resume.memo`). KEY is a hash of everything that decides those
results (`run_key`):

- the command and its arguments (not the output, nor options that change only what is shown);
- the spec by its validated, resolved values (defaults, file and `--set` overrides applied);
- the input files by path, size and modification time, or by their content (sha256) with
  `--verify-inputs` (for a copy tool that keeps times, or a store whose times cannot be trusted);
- the other arguments that name files (`NAMED_FILES`: `--url-list`, `--annotations`, a spec
  file ...) by the content of their files (size and modification time for a file over
  `CONTENT_LIMIT`, or on an object store);
- the installed versions of csdata, its libraries and its models, and csdata's own source files.

A rerun of the same command finds them under the same KEY and skips what they hold; a run under
another spec, model or input (an input edited in place, even at the same size, included) gets
another KEY and never sees them. A commit removes the work; `--fresh` removes it before the run
starts.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
from functools import lru_cache
from pathlib import Path
from typing import Any, Optional

from pipeline.outputs.paths import OutputPaths, join, remove_tree

# Arguments that do not change what a run computes.
NOT_KEYED = {"output", "final_output", "argv", "verbose", "quiet", "debug", "fresh", "lease_timeout",
             "work", "command_parser", "writes_output", "beam_writer", "beam_reader", "verify_inputs"}
CONTENT_LIMIT = 64 << 20   # a named file up to this size is keyed by its content


def file_sha256(path: str) -> str:
    """sha256 of a file's bytes, local or on a store (Beam is imported for a store only)."""
    digest = hashlib.sha256()
    if "://" in path:
        from apache_beam.io.filesystems import FileSystems

        handle = FileSystems.open(path, compression_type="uncompressed")
    else:
        handle = open(path, "rb")
    with handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def input_fingerprints(patterns: list[str], contents: bool = False) -> list[list[str]]:
    """`[path, size, modification time]` of every file the input patterns name (see the module
    doc), or `[path, sha256]` with `contents`, sorted by path. A store's files come with their
    times from the one listing that matches them."""
    from transforms.core.reporting.provenance import input_files_with_times

    found = []
    for pattern in patterns:
        if "://" in pattern:
            found.extend(store_fingerprints(pattern, contents))
            continue
        for path, (size, mtime) in input_files_with_times([pattern]):
            found.append([path, file_sha256(path)] if contents else [path, str(size), str(mtime)])
    return sorted(found)


def store_fingerprints(pattern: str, contents: bool = False) -> list[list[str]]:
    """`input_fingerprints` of one pattern on an object store (a folder is every file under it)."""
    from apache_beam.io.filesystems import FileSystems

    matched = [m for result in FileSystems.match([pattern]) for m in result.metadata_list]
    if not matched:   # a folder given without a pattern
        matched = [m for result in FileSystems.match([pattern.rstrip("/") + "/**"]) for m in result.metadata_list]
    return [[m.path, file_sha256(m.path)] if contents
            else [m.path, str(m.size_in_bytes), str(m.last_updated_in_seconds)] for m in matched]


# The arguments of the resumable commands that name files whose content decides the results
# (besides `--input`, keyed as inputs are).
NAMED_FILES = ("url_list", "annotations", "omitted", "flagged", "a", "b", "spec")


def named_files(value: object) -> list[list[str]]:
    """What an argument of `NAMED_FILES` names: a local file or folder's files by content (by
    size and modification time over `CONTENT_LIMIT`), a store's by size and time; nothing for
    a value that names no file (a built-in spec's name)."""
    values = value if isinstance(value, (list, tuple)) else [value]
    found = []
    for item in values:
        if not isinstance(item, str):
            continue
        if "://" in item:
            found.extend(store_fingerprints(item))
            continue
        if not os.path.exists(item):
            continue
        files = [item] if os.path.isfile(item) else sorted(
            os.path.join(root, name) for root, _, names in os.walk(item) for name in names)
        for path in files:
            stat = os.stat(path)
            found.append([path, file_sha256(path)] if stat.st_size <= CONTENT_LIMIT
                         else [path, str(stat.st_size), str(stat.st_mtime_ns)])
    return found


def run_key(args: argparse.Namespace) -> str:
    """The hash naming a run's work (see the module doc): 16 hex digits."""
    from transforms.core.reporting.provenance import spec_sha256, versions

    arguments = {k: v for k, v in vars(args).items() if k not in NOT_KEYED and _plain(v)}
    spec: Optional[str] = None
    if isinstance(getattr(args, "spec", None), str):
        from data_specs import load_spec

        spec = spec_sha256(load_spec(args.spec, getattr(args, "overrides", [])))
    inputs = getattr(args, "input", None)
    files = (input_fingerprints(inputs, contents=bool(getattr(args, "verify_inputs", False)))
             if isinstance(inputs, list) else None)
    named = {k: named_files(arguments[k]) for k in NAMED_FILES if k in arguments}
    text = json.dumps({"arguments": arguments, "spec": spec, "inputs": files, "named": named,
                       "versions": versions(), "code": code_sha256()}, sort_keys=True, default=str)
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
    from transforms.core.resume.checkpoint import done_checkpoints
    from transforms.core.resume.memo import count_stored

    reused = [f"the {done['stage']} stages' output ({done['elements']['kept']:,} records, "
              f"{done['elements']['rejects']:,} rejects)" for done in done_checkpoints(work)]
    pieces, results = count_stored(work)
    if results:
        reused.append(f"{results:,} model results in {pieces:,} pieces")
    if not reused:
        return None
    return (f"csdata: resuming an interrupted run: {' and '.join(reused)} "
            f"{'is' if len(reused) == 1 and not results else 'are'} reused ({work}; --fresh starts over)")
