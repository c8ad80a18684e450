"""Finished model results kept in a run's work folder, so that a rerun after a kill reuses them.

A model step (spaCy annotation, sentence splitting, coherence scoring) given a `Memo` writes
each result it computes into its step folder, keyed by what it was computed from, in *pieces*:
files `{folder}/{uuid}-{n}.pieces`, each a pickled list of `n` `(key, result)` pairs. A rerun
with the same folder joins its elements with the stored results (`AttachStored`) and runs the
model only on the elements that have none (`MemoizedModel`); its rows and accounting are those
of a clean run, since a stored result is what the model returned for that key.

* **A piece is whole or absent.** Locally it is written under a temporary name and renamed; on
  an object store it is one object, visible only once closed. A piece that cannot be read
  (damaged by hand, a different Python) is skipped and counted (`memo.damaged_pieces`): its
  elements go through the model again.
* **Work survives a kill mid-stage.** The in-process runner runs a whole stage as one bundle
  per worker, so `PieceWriter` writes a piece every `piece_size` results or `flush_seconds`,
  not only at the bundle's end.
* **Rejects are never stored** (a `model_error` may be transient): a rerun tries them again.
* **Nothing is listed on the driver.** The pieces are matched and read inside the graph, dealt
  out over the workers, and joined with the elements by one `GroupByKey`; a group holds one
  element and its stored results (several when a retried bundle wrote one twice: the first is
  taken).

Which work a folder may serve (spec, inputs, model versions) is the caller's choice of folder;
the pieces are pickles, so a work folder is trusted as the run's own output is.
"""
from __future__ import annotations

import logging
import pickle
import re
import time
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Optional, Sequence, Union

import apache_beam as beam
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics import Metrics

from transforms.core.accounting import NAMESPACE, Reject
from transforms.core.resume.crash import crash_point
from transforms.core.resume.store import write_bytes
from transforms.core.spread import Spread

SUFFIX = ".pieces"
PIECE_SIZE = 100
FLUSH_SECONDS = 30.0
ELEMENT_SIDE, STORED_SIDE = 0, 1    # which input of the join a keyed value comes from
_PIECE_NAME = re.compile(r"^[0-9a-f]{32}-(\d+)" + re.escape(SUFFIX) + r"$")
_LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class Memo:
    """Where one model step keeps its results, and how often it writes them.

    Args:
        folder: the step's folder (any Beam filesystem path), e.g. `{work}/coherence`.
        piece_size: results per piece file.
        flush_seconds: a piece is written at the latest this long after its first result.
    """

    folder: str
    piece_size: int = PIECE_SIZE
    flush_seconds: float = FLUSH_SECONDS


@dataclass(frozen=True)
class Work:
    """A run's work folder (any Beam filesystem path) and the results per piece its steps
    write (the spec's `output.resume_every`)."""

    folder: str
    piece_size: int = PIECE_SIZE


WorkLike = Union[str, Work, None]   # a bare folder has pieces of PIECE_SIZE


def resume_work(folder: Optional[str], piece_size: int) -> Optional[Work]:
    """`Work` in `folder` with pieces of `piece_size` results; None without a folder."""
    return None if folder is None else Work(folder, piece_size)


def step_memo(work: WorkLike, step: str) -> Optional[Memo]:
    """The `Memo` of `step` under the work folder `work`; None without one."""
    if work is None:
        return None
    if isinstance(work, str):
        work = Work(work)
    return Memo(f"{work.folder.rstrip('/')}/{step}", work.piece_size)


def piece_count(path: str) -> int:
    """How many results a piece holds, read from its name (0 for a name not made here)."""
    found = _PIECE_NAME.match(path.rstrip("/").rsplit("/", 1)[-1])
    return int(found.group(1)) if found else 0


def write_piece(folder: str, results: Sequence[tuple[str, Any]]) -> str:
    """Write `results` as one new piece under `folder`, whole or not at all; returns its path."""
    path = f"{folder.rstrip('/')}/{uuid.uuid4().hex}-{len(results)}{SUFFIX}"
    write_bytes(path, pickle.dumps(list(results), protocol=pickle.HIGHEST_PROTOCOL))
    crash_point("memo.piece_written")
    return path


def read_piece(path: str) -> Iterator[tuple[str, tuple[int, Any]]]:
    """`(key, (STORED_SIDE, result))` for each result of one piece; nothing (and the counter
    `memo.damaged_pieces` bumped) for a piece that cannot be read whole."""
    try:
        with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as handle:
            results = pickle.loads(handle.read())
        if (not isinstance(results, list) or len(results) != piece_count(path)
                or not all(isinstance(r, tuple) and len(r) == 2 and isinstance(r[0], str) for r in results)):
            raise ValueError("not a list of (key, result) pairs as its name says")
    except Exception as error:   # any damage: the elements are computed again
        _LOG.warning("skipping the damaged memo piece %s (%s: %s)", path, type(error).__name__, str(error)[:200])
        Metrics.counter(NAMESPACE, "memo.damaged_pieces").inc()
        return
    for key, result in results:
        yield key, (STORED_SIDE, result)


def matched_pieces(pattern: str, suffix: str = SUFFIX) -> Iterator[str]:
    """The files matching `pattern` whose names end with `suffix` (default: pieces); none when
    their folder does not exist yet."""
    for result in FileSystems.match([pattern]):
        for metadata in result.metadata_list:
            if metadata.path.endswith(suffix):
                yield metadata.path


def count_stored(work: str) -> tuple[int, int]:
    """`(pieces, results)` stored under the work folder `work`, every step's, from the file
    names only."""
    paths = list(matched_pieces(f"{work.rstrip('/')}/**{SUFFIX}"))
    return len(paths), sum(piece_count(p) for p in paths)


def pair_stored(grouped: tuple[str, Iterable[tuple[int, Any]]]) -> Iterator[tuple[Any, Any]]:
    """`(element, stored result or None)` for each element of one key's group."""
    elements: list[Any] = []
    stored, found = None, False
    for side, value in grouped[1]:
        if side == ELEMENT_SIDE:
            elements.append(value)
        elif not found:       # a retried bundle may have stored the same result twice
            stored, found = value, True
    for element in elements:
        yield element, stored


class AttachStored(beam.PTransform):
    """Elements -> `(element, stored result or None)`, from the pieces under `memo.folder`
    keyed by `key_of(element)`.

    The pieces are matched and read inside the graph and dealt out over the workers; the join
    is one `GroupByKey` over both sides. When the folder holds no piece as the graph is built (a
    clean run), there is no join: every element is paired with None.
    """

    def __init__(self, memo: Memo, key_of: Callable[[Any], str]):
        super().__init__()
        self._memo = memo
        self._key_of = key_of

    def expand(self, elements):
        key_of, pattern = self._key_of, f"{self._memo.folder.rstrip('/')}/*{SUFFIX}"
        if next(matched_pieces(pattern), None) is None:
            # Nothing stored when the graph is built (a clean run): no join, and no grouping
            # that would carry every element. Pieces this run writes serve only a rerun.
            return elements | "NothingStored" >> beam.Map(lambda element: (element, None))
        stored = (elements.pipeline
                  | "PiecePattern" >> beam.Create([pattern])
                  | "MatchPieces" >> beam.FlatMap(matched_pieces)
                  | "SpreadPieces" >> Spread(key=lambda path: path)
                  | "ReadPieces" >> beam.FlatMap(read_piece))
        keyed = elements | "KeyElements" >> beam.Map(lambda element: (key_of(element), (ELEMENT_SIDE, element)))
        return ((keyed, stored) | "FlattenStored" >> beam.Flatten()
                | "JoinStored" >> beam.GroupByKey()
                | "PairStored" >> beam.FlatMap(pair_stored))


class PieceWriter:
    """Buffer `(key, result)` pairs and write them as pieces of `memo.piece_size` results, or
    after `memo.flush_seconds`; `flush()` writes what is left (a DoFn calls it at the end of
    each bundle and in teardown)."""

    def __init__(self, memo: Memo, clock: Callable[[], float] = time.monotonic):
        self._memo = memo
        self._clock = clock
        self._buffer: list[tuple[str, Any]] = []
        self._since = 0.0
        self.written: list[str] = []

    def add(self, key: str, result: Any) -> None:
        """Keep one result; write a piece when enough are buffered or the oldest waited long enough."""
        if not self._buffer:
            self._since = self._clock()
        self._buffer.append((key, result))
        if (len(self._buffer) >= self._memo.piece_size
                or self._clock() - self._since >= self._memo.flush_seconds):
            self.flush()

    def flush(self) -> None:
        """Write the buffered results as one piece (nothing when none are buffered)."""
        buffered, self._buffer = self._buffer, []
        if buffered:
            self.written.append(write_piece(self._memo.folder, buffered))


def keep_whole(result: Any) -> Any:
    """The default `pack`: a result is stored as it is."""
    return result


def take_stored(element: Any, stored: Any) -> Any:
    """The default `unpack`: the stored value is the result."""
    return stored


class MemoizedModel:
    """What a model DoFn does with a memo: given `(element, stored)` pairs, run the model only
    on the elements without a stored result and merge the results back in order.

    Args:
        memo: where the results are kept.
        key_of: an element's key (what its result depends on).
        pack: what of a computed result is stored (must not be None); default the whole result.
        unpack: `(element, stored)` -> the result the model gave; default the stored value.
    """

    def __init__(self, memo: Memo, key_of: Callable[[Any], str],
                 pack: Callable[[Any], Any] = keep_whole, unpack: Callable[[Any, Any], Any] = take_stored):
        self.memo = memo
        self.key_of = key_of
        self._pack, self._unpack = pack, unpack
        self._writer: Optional[PieceWriter] = None

    def attach(self) -> AttachStored:
        """The transform that pairs the elements with their stored results."""
        return AttachStored(self.memo, self.key_of)

    def results(self, pairs: Sequence[tuple[Any, Any]], compute: Callable[[list], list]) -> list:
        """One result per pair, in order: the stored one unpacked, or `compute`'s (called once,
        on the elements without one, and only if there are any). Computed results that are
        not `Reject`s are stored."""
        todo = [element for element, stored in pairs if stored is None]
        fresh = compute(todo) if todo else []
        if len(fresh) != len(todo):
            raise ValueError(f"the model returned {len(fresh)} results for {len(todo)} elements")
        if self._writer is None:
            self._writer = PieceWriter(self.memo)
        computed = iter(fresh)
        results = []
        for element, stored in pairs:
            if stored is None:
                result = next(computed)
                if not isinstance(result, Reject):
                    self._writer.add(self.key_of(element), self._pack(result))
            else:
                result = self._unpack(element, stored)
            results.append(result)
        Metrics.counter(NAMESPACE, "memo.reused").inc(len(pairs) - len(todo))
        Metrics.counter(NAMESPACE, "memo.computed").inc(len(todo))
        return results

    def flush(self) -> None:
        """Write the results still buffered."""
        if self._writer is not None:
            self._writer.flush()
