"""Reading input files on any Beam filesystem, spread over the workers.

`ReadRawRecords(patterns, splitter)` is Beam's `fileio.MatchAll | Reshuffle | ReadMatches` with
our rules, then (optionally) a rebalance of the records, in one chain:

    Patterns (Create) -> MatchFiles -> PlanReads -> SpreadUnits -> CountLines -> GroupUnits
        -> NumberUnits -> SpreadFiles -> ReadFiles [-> Rebalance]

A *read unit* is a file read whole or a byte range of a big line file; both go through the same
steps, so no Flatten of two branches feeds a grouping. (Beam's in-process runner with several
workers lost records where one did: on the whole Blog Authorship Corpus, 618,307 and 645,781 of
681,288 posts reached the step after the Rebalance; see docs/runners.md.) Only paths, offsets
and counts cross the groupings before `ReadFiles`.

The spreading steps are groupings (`transforms.core.spread.Spread`), not Beam's `Reshuffle`,
which Flink's batch runner turns into a rebalance that it does not always apply.

* **Matching happens inside the pipeline.** The graph holds the patterns as given (a few
  strings), never the files they match: `MatchFiles` emits one `(path, size)` element per file
  and bumps the Beam counters `read.files_matched` and `read.bytes_matched` (namespace
  `transforms.core.accounting.NAMESPACE`), so progress can show how many there are to read.
* **Each file is read by the worker it is dealt to.** `SpreadFiles` deals the matches out by path, so
  the files of one pattern (a folder of 300k stories) are read by every worker, not by the one
  that matched them. `read.files_read` / `read.bytes_read` count what has been read.
* **A local directory stays a pattern.** With `folder_files`, a local directory given as input
  becomes the pattern `DIR/**` (Beam's `**` crosses folders on the local filesystem and on
  object stores: `cnn/stories/x.story` is found under `cnn`), and only the files whose names
  `folder_files` accepts are read: ReCoRD's supported suffixes, or Cosmos QA's visible (not dot)
  files. Without it (ProtoQA) patterns are matched as they are.
* **The match rules are Beam's.** A pattern without `*` that matches nothing is an error naming
  it (what `EmptyMatchTreatment.ALLOW_IF_WILDCARD` allows); a glob may match nothing. Directory
  entries of object stores (paths ending in `/`) are skipped. `*` stays within one folder, `**`
  crosses folders.
* **Records are rebalanced where asked.** One big file (a `.tgz` of stories) is still split by
  one worker; with `rebalance` (the default), `Rebalance` deals its records out to every worker
  for the stages after reading. That grouping carries every record's text, which Beam's
  in-process runner keeps in its driver until the grouping is done: a reader of many small
  files (Cosmos QA's blogs) leaves it off and works on the records where they were read.
* **Big line files are read in byte ranges.** With `line_files`, a matched file it accepts that
  is bigger than `range_bytes` (64 MiB) is read by several workers, each a range of it, as
  Beam's text source splits a file: a range reads the whole lines that *start* inside it (it
  skips the line it starts in the middle of, and finishes the line it ends in the middle of), so
  every line is read once, however long. Records keep their `path:line` origins: a first pass
  (`CountLines`) counts each range's line ends, a `GroupByKey` per file adds them up, and each
  range's splitter is then called with `first_line=N`, the number of its first line. A split file
  is read twice (once to count, once to split); compressed files are never split. A file read
  whole passes these steps without being opened.
"""
from __future__ import annotations

import io
import os
from dataclasses import dataclass
from typing import IO, Any, Callable, Iterable, Iterator, Optional, Sequence

import apache_beam as beam
from apache_beam.io.filesystem import BeamIOError, CompressionTypes
from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics import Metrics

from transforms.core.accounting import NAMESPACE
from transforms.core.progress.steps import ProgressLine
from transforms.core.spread import Spread

# A splitter turns one file into raw records: `splitter(path, handle)`; for `line_files` also
# `splitter(path, handle, first_line=N)` (a range of the file whose first line is line N).
Splitter = Callable[..., Iterator[Any]]
MatchedFile = tuple[str, int]                 # (path, size in bytes)
FileRange = tuple[str, int, int, int]         # (path, index, start, end): bytes [start, end)
NumberedRange = tuple[str, int, int, int]     # (path, start, end, first line number)

RANGE_BYTES = 64 << 20
WHOLE = -1                                    # the `end` of a read unit that is a whole file
_CHUNK = 1 << 16


@dataclass(frozen=True)
class FolderFiles:
    """Which files of a local directory given as input are read.

    Args:
        suffixes: read the files whose names end with one of these (any case); None: every
            visible file (a name not starting with a dot).
    """

    suffixes: Optional[tuple[str, ...]] = None

    def __call__(self, name: str) -> bool:
        if self.suffixes is not None:
            return name.lower().endswith(self.suffixes)
        return not name.startswith(".")


def folder_pattern(pattern: str, folder_files: Optional[FolderFiles]) -> tuple[str, bool]:
    """`(pattern to match, whether it is a folder)`: a local directory becomes `DIR/**` when
    `folder_files` is given; any other pattern (a file, a glob, `s3://...`) stays as it is."""
    if folder_files is not None and "://" not in pattern and os.path.isdir(pattern):
        return os.path.join(pattern, "**"), True
    return pattern, False


def expand_local_inputs(patterns: Iterable[str], suffixes: Optional[tuple[str, ...]] = None) -> list[str]:
    """Local directories turned into their files that `FolderFiles(suffixes)` accepts, other
    patterns left alone: for in-process tools (the benchmarks). A pipeline never holds such a
    list: `ReadRawRecords` matches folders inside the pipeline."""
    accepts = FolderFiles(suffixes)
    expanded: list[str] = []
    for pattern in patterns:
        if "://" not in pattern and os.path.isdir(pattern):
            for root, _, files in os.walk(pattern):
                expanded.extend(os.path.join(root, f) for f in sorted(files) if accepts(f))
        else:
            expanded.append(pattern)
    return expanded


def _count(name: str, n: int = 1) -> None:
    Metrics.counter(NAMESPACE, f"read.{name}").inc(n)


def match_files(item: tuple[str, bool], folder_files: Optional[FolderFiles] = None) -> Iterator[MatchedFile]:
    """`(path, size)` of every file `item` (`folder_pattern`'s pair) matches; for a folder only
    the files `folder_files` accepts. A pattern without `*` that matches nothing raises
    `BeamIOError` naming it; directory entries are skipped."""
    pattern, is_folder = item
    metadata_list = FileSystems.match([pattern])[0].metadata_list
    if not metadata_list and "*" not in pattern:
        raise BeamIOError(f"Empty match for pattern {pattern}. Disallowed.")
    for metadata in metadata_list:
        path = metadata.path
        if path.endswith(("/", "\\")):
            continue
        if is_folder and folder_files is not None and not folder_files(os.path.basename(path)):
            continue
        _count("files_matched")
        _count("bytes_matched", metadata.size_in_bytes)
        yield path, metadata.size_in_bytes


def open_file(path: str) -> IO[bytes]:
    """A file on any Beam filesystem, as its bytes (never decompressed: the splitters decide)."""
    return FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED)


def _is_split(matched: MatchedFile, line_files: Optional[Callable[[str], bool]], range_bytes: int) -> bool:
    return line_files is not None and matched[1] > range_bytes and line_files(matched[0])


def file_ranges(matched: MatchedFile, line_files: Optional[Callable[[str], bool]] = None,
                range_bytes: int = RANGE_BYTES) -> Iterator[FileRange]:
    """`(path, index, start, end)` of the byte ranges of a line file bigger than `range_bytes`
    (nothing for a file read whole)."""
    if not _is_split(matched, line_files, range_bytes):
        return
    path, size = matched
    for index, start in enumerate(range(0, size, range_bytes)):
        yield path, index, start, min(start + range_bytes, size)


class LineRange(io.RawIOBase):
    """The bytes of the lines of `handle` that start in `[start, end)`: from the first line start
    at or after `start` (0, or just after a line end) to the end of the line holding byte
    `end - 1`. Consecutive ranges thus read every line of a file exactly once."""

    def __init__(self, handle: IO[bytes], start: int, end: int):
        super().__init__()
        self._handle, self._start, self._end = handle, start, end
        self._pos = -1            # the position in the file; -1 until the range is aligned
        self._done = False
        self.size = 0             # bytes returned so far

    def readable(self) -> bool:
        return True

    def _align(self) -> None:
        self._pos = 0
        if self._start > 0:
            self._handle.seek(self._start - 1)
            self._pos = self._start - 1
            while True:             # skip the line that began before the range
                chunk = self._handle.read(_CHUNK)
                if not chunk:
                    self._done = True
                    return
                newline = chunk.find(b"\n")
                if newline >= 0:
                    self._pos += newline + 1
                    self._handle.seek(self._pos)
                    break
                self._pos += len(chunk)
        if self._pos >= self._end:  # a line that began before the range runs past its end
            self._done = True

    def readinto(self, buffer: Any) -> int:
        if self._pos < 0:
            self._align()
        if self._done:
            return 0
        chunk = self._handle.read(min(len(buffer), _CHUNK))
        if not chunk:
            self._done = True
            return 0
        last = self._end - 1      # the line holding this byte is the range's last
        if self._pos + len(chunk) > last:
            newline = chunk.find(b"\n", max(0, last - self._pos))
            if newline >= 0:
                chunk = chunk[: newline + 1]
                self._done = True
        buffer[: len(chunk)] = chunk
        self._pos += len(chunk)
        self.size += len(chunk)
        return len(chunk)


def plan_reads(matched: MatchedFile, line_files: Optional[Callable[[str], bool]] = None,
               range_bytes: int = RANGE_BYTES) -> Iterator[FileRange]:
    """The read units of a matched file: `(path, 0, 0, WHOLE)` for a file read whole, else its
    byte ranges `(path, index, start, end)` (`file_ranges`)."""
    if _is_split(matched, line_files, range_bytes):
        yield from file_ranges(matched, line_files, range_bytes)
    else:
        yield matched[0], 0, 0, WHOLE


def count_lines(item: FileRange) -> tuple[str, tuple[int, int, int, int]]:
    """`(path, (index, start, end, line ends))` of a read unit: how many lines a range reads (a
    file read whole is not read here: 0)."""
    path, index, start, end = item
    if end == WHOLE:
        return path, (index, start, end, 0)
    with open_file(path) as handle:
        lines = LineRange(handle, start, end)
        newlines = 0
        while chunk := lines.read(_CHUNK):
            newlines += chunk.count(b"\n")
    return path, (index, start, end, newlines)


def number_ranges(item: tuple[str, Iterable[tuple[int, int, int, int]]]) -> Iterator[NumberedRange]:
    """`(path, start, end, first line)` of each range of a file, from the line ends of the
    ranges before it (line numbers start at 1)."""
    path, ranges = item
    first = 1
    for _, start, end, newlines in sorted(ranges):
        yield path, start, end, first
        first += newlines


def read_keyed(item: NumberedRange, splitter: Splitter) -> Iterator[tuple[NumberedRange, Any]]:
    """`(read unit, raw record)` of each record of one read unit (`read_range`): for a step that
    reads a record again later from its unit (`read_range(unit, splitter, count=False)`)."""
    for record in read_range(item, splitter):
        yield item, record


def read_range(item: NumberedRange, splitter: Splitter, count: bool = True) -> Iterator[Any]:
    """The raw records of one read unit: a file read whole (`end` is `WHOLE`) with
    `splitter(path, handle)`, or a range of a line file with `splitter(path, lines, first_line=N)`.
    `count=False` reads a unit again without counting it as read (`read.files_read`, `bytes_read`)."""
    path, start, end, first_line = item
    with open_file(path) as handle:
        if end == WHOLE:
            yield from splitter(path, handle)
            # The file's size, read or not to its end (a tar reader may stop before the padding).
            size = handle.seek(0, io.SEEK_END)
        else:
            lines = LineRange(handle, start, end)
            yield from splitter(path, io.BufferedReader(lines, buffer_size=_CHUNK), first_line=first_line)
            size = lines.size
    if not count:
        return
    if start == 0:
        _count("files_read")
    _count("bytes_read", size)


class ReadRawRecords(beam.PTransform):
    """Match file patterns inside the pipeline, read each file on the worker it is dealt to,
    split it into raw records with `splitter(path, handle)` and rebalance them (see the module
    docstring).

    Args:
        patterns: files, globs and (with `folder_files`) local directories, on any Beam filesystem.
        splitter: `splitter(path, binary handle)` -> raw records; for `line_files` it also takes
            `first_line=N`, the number of the handle's first line.
        folder_files: which files of a local directory are read; None: directories are not
            turned into patterns.
        line_files: which files (by path) are read line by line and may be split into byte
            ranges when bigger than `range_bytes`; None: every file is read whole.
        range_bytes: the size of a range of a line file.
        rebalance: deal the records out over the workers after reading (a grouping that
            carries every record: leave it off where the files are many and small).
        keyed: emit `(read unit, record)` pairs (`read_keyed`), never rebalanced: for a graph
            that decides on small entries and reads the records it keeps again from their units.
        progress: a run's progress line, for the files matched and read (the total of the
            second is the first).
    """

    def __init__(self, patterns: Sequence[str], splitter: Splitter, *,
                 folder_files: Optional[FolderFiles] = None,
                 line_files: Optional[Callable[[str], bool]] = None,
                 range_bytes: int = RANGE_BYTES, progress: Optional[ProgressLine] = None,
                 rebalance: bool = True, keyed: bool = False):
        super().__init__()
        self._rebalance = rebalance and not keyed
        self._keyed = keyed
        self._progress = progress
        if range_bytes < 1:
            raise ValueError(f"range_bytes must be positive, got {range_bytes}")
        self._patterns = [folder_pattern(p, folder_files) for p in patterns]
        self._splitter = splitter
        self._folder_files = folder_files
        self._line_files = line_files
        self._range_bytes = range_bytes

    def expand(self, pbegin):
        splitter, line_files, size = self._splitter, self._line_files, self._range_bytes
        files = (
            pbegin
            | "Patterns" >> beam.Create(self._patterns)
            | "MatchFiles" >> beam.FlatMap(match_files, self._folder_files)
        )
        if self._progress is not None:
            files = files | "ProgressMatched" >> self._progress.step("matched", "files")
        # One chain from the matches to the records: whole files and ranges are read units of
        # the same steps, so no Flatten of two branches feeds a grouping (Beam's in-process
        # runner with several workers lost records at such a Flatten: docs/runners.md).
        units = (
            files
            | "PlanReads" >> beam.FlatMap(plan_reads, line_files, size)
            | "SpreadUnits" >> Spread(key=lambda unit: unit[:2])
            | "CountLines" >> beam.Map(count_lines)
            | "GroupUnits" >> beam.GroupByKey()
            | "NumberUnits" >> beam.FlatMap(number_ranges)
            | "SpreadFiles" >> Spread(key=lambda unit: unit[:2])
        )
        if self._progress is not None:
            # Counted as each file is dealt to the step that reads it (fused with it).
            units = units | "ProgressFiles" >> self._progress.step(
                "read", "files", count=lambda unit: 1 if unit[1] == 0 else 0)
        records = units | "ReadFiles" >> beam.FlatMap(read_keyed if self._keyed else read_range, splitter)
        if not self._rebalance:
            return records
        return records | "Rebalance" >> Spread()
