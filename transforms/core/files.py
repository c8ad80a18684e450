"""Reading input files on any Beam filesystem: local directory expansion and raw-record splitting."""
from __future__ import annotations

import os
from typing import IO, Any, Callable, Iterable, Iterator, Optional, Sequence

import apache_beam as beam
from apache_beam.io import fileio


def expand_local_inputs(patterns: Iterable[str],
                        suffixes: Optional[tuple[str, ...]] = None) -> list[str]:
    """Turn local directories into their files with `suffixes` (None: every visible file);
    leave other patterns (globs, files, gs://...) alone."""
    expanded: list[str] = []
    for pattern in patterns:
        if "://" not in pattern and os.path.isdir(pattern):
            for root, _, files in os.walk(pattern):
                expanded.extend(os.path.join(root, f) for f in sorted(files)
                                if (f.lower().endswith(suffixes) if suffixes else not f.startswith(".")))
        else:
            expanded.append(pattern)
    return expanded

Splitter = Callable[[str, IO[bytes]], Iterator[Any]]

def read_file(readable: fileio.ReadableFile, splitter: Splitter) -> Iterator[Any]:
    path = readable.metadata.path
    with readable.open(compression_type="uncompressed") as handle:
        yield from splitter(path, handle)

class ReadRawRecords(beam.PTransform):
    """Match file patterns, split each file into raw records with `splitter(path, handle)`, and
    rebalance them, so one big file (an archive, a JSONL dump) does not pin its records to one
    worker."""

    def __init__(self, patterns: Sequence[str], splitter: Splitter):
        super().__init__()
        self._patterns = list(patterns)
        self._splitter = splitter

    def expand(self, pbegin):
        return (
            pbegin
            # No reshuffle of the few patterns: the records are rebalanced below anyway.
            | "Patterns" >> beam.Create(self._patterns, reshuffle=False)
            | "MatchFiles" >> fileio.MatchAll()
            | "ReadMatches" >> fileio.ReadMatches()
            | "SplitFiles" >> beam.FlatMap(read_file, self._splitter)
            | "Rebalance" >> beam.Reshuffle()
        )
