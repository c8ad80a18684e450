"""A finished run of a graph's first stages kept in the run's work folder, so that a rerun after a
kill starts after them.

The stages before the first model (reading, curation, near-duplicate removal) are cheap per
record but are a fixed share of every run, and a global one where a step needs every record
(near duplicates). `Checkpoint` keeps their three outputs (kept, rejects, tallies) in *parts*
while the run goes on, and writes `done.json` once every part is committed. A rerun whose
checkpoint is done reads the parts instead of running those stages; one whose checkpoint is
not done runs them again (and keeps them again). Its rows and accounting are a clean run's,
since the parts hold exactly what the stages emitted.

* **A part counts only once committed.** A part is written by the bundle that made its
  elements; after a shuffle (so only a bundle that succeeded gets there) a `.ok` record is
  written beside it. A retried bundle's parts have no record and are never read.
* **`done.json` is last.** It is written by the one step that has seen every committed part's
  count, so a checkpoint that has it is whole.
* **Nothing is listed on the driver** but `done.json`: parts are matched and read in the graph.
* **A damaged part stops the run** with its path: the work folder's stage folder (or
  `--fresh`) can be removed by hand, which runs the stages again and keeps the model results.

The parts are pickles: a work folder is trusted as the run's own output is.
"""
from __future__ import annotations

import json
import pickle
import shutil
import uuid
from typing import Any, Iterable, Iterator, Optional, Sequence

import apache_beam as beam
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from apache_beam.io.localfilesystem import LocalFileSystem
from apache_beam.transforms.window import GlobalWindows

from transforms.core.memo import matched_pieces, write_bytes
from transforms.core.spread import Spread

DONE = "done.json"
PART_SUFFIX = ".part"
COMMITTED = ".ok"
PART_SIZE = 1000
OUTPUTS = ("kept", "rejects", "tallies")


def done_path(folder: str) -> str:
    return f"{folder.rstrip('/')}/{DONE}"


def read_done(folder: str) -> Optional[dict]:
    """The `done.json` of the checkpoint in `folder`, or None while it is not done."""
    path = done_path(folder)
    if not FileSystems.exists(path):
        return None
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as handle:
        return json.loads(handle.read().decode("utf-8"))


def done_checkpoints(work: str) -> list[dict]:
    """The `done.json` of each done checkpoint under the work folder `work` (one per stage group)."""
    found = []
    for result in FileSystems.match([f"{work.rstrip('/')}/*/{DONE}"]):
        for metadata in result.metadata_list:
            folder = metadata.path.rsplit("/", 1)[0]
            done = read_done(folder)
            if done is not None:
                found.append(done)
    return sorted(found, key=lambda done: done["stage"])


def clear_folder(folder: str) -> None:
    """Remove `folder` and what it holds (nothing when it is not there)."""
    if isinstance(FileSystems.get_filesystem(folder), LocalFileSystem):
        shutil.rmtree(folder, ignore_errors=True)
        return
    stale = list(matched_pieces(f"{folder}/*", "")) + list(matched_pieces(f"{folder}/*/*", ""))
    if stale:
        FileSystems.delete(sorted(set(stale)))


def write_part(folder: str, elements: Sequence[Any]) -> str:
    """One new part of `elements` under `folder`, whole or not at all; returns its path."""
    path = f"{folder.rstrip('/')}/{uuid.uuid4().hex}-{len(elements)}{PART_SUFFIX}"
    write_bytes(path, pickle.dumps(list(elements), protocol=pickle.HIGHEST_PROTOCOL))
    return path


def commit_part(path: str) -> tuple[str, int]:
    """Write the `.ok` record of a part; `(output, elements)` for `done.json`'s counts."""
    count = int(path.rsplit("-", 1)[-1][:-len(PART_SUFFIX)])
    # Not empty: an object store's multipart upload of nothing is refused (S3's NoSuchUpload).
    write_bytes(path + COMMITTED, f"{count}\n".encode("ascii"))
    return path.rstrip("/").rsplit("/", 2)[-2], count


def read_part(committed: str) -> Iterator[Any]:
    """The elements of the part whose `.ok` record is `committed`."""
    return read_part_file(committed[:-len(COMMITTED)])


def read_part_file(path: str, remedy: str = "") -> Iterator[Any]:
    """The elements of the part `path` (`write_part`'s), or an error naming it (and `remedy`,
    what to do about it; by default: remove the checkpoint's folder)."""
    try:
        with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as handle:
            elements = pickle.loads(handle.read())
        if not isinstance(elements, list):
            raise ValueError("not a list")
    except Exception as error:
        kind = "part" if remedy else "checkpoint part"
        remedy = remedy or f"remove {path.rsplit('/', 2)[0]} to run its stages again"
        raise RuntimeError(f"the {kind} {path} cannot be read ({type(error).__name__}: "
                           f"{str(error)[:200]}); {remedy}") from None
    yield from elements


def committed_parts(pattern: str) -> Iterator[str]:
    """The commit records matching `pattern`."""
    return matched_pieces(pattern, PART_SUFFIX + COMMITTED)


class WritePartsFn(beam.DoFn):
    """Elements -> the paths of the parts of `PART_SIZE` elements they are written to (the last
    part of a bundle at its end); a subclass emits something else per part with `written`."""

    def __init__(self, folder: str, size: int = PART_SIZE):
        self._folder = folder
        self._size = size
        self._buffer: list = []

    def start_bundle(self) -> None:
        self._buffer = []

    def process(self, element: Any) -> Iterator[Any]:
        self._buffer.append(element)
        if len(self._buffer) >= self._size:
            yield from self._flush()

    def finish_bundle(self) -> Iterator[Any]:
        for output in self._flush():
            yield GlobalWindows.windowed_value(output)

    def written(self, path: str, elements: Sequence[Any]) -> Iterable[Any]:
        """What goes out once `elements` are written to the part `path`: the path."""
        return (path,)

    def _flush(self) -> Iterable[Any]:
        buffered, self._buffer = self._buffer, []
        if not buffered:
            return ()
        return self.written(write_part(self._folder, buffered), buffered)


def write_done(counts: dict[str, int], folder: str, stage: str) -> dict:
    """Write `done.json` (the stage group's name and the elements of each output); returns it."""
    done = {"stage": stage, "elements": {o: counts.get(o, 0) for o in OUTPUTS}}
    write_bytes(done_path(folder), json.dumps(done, sort_keys=True).encode("utf-8"))
    return done


class KeepCheckpoint(beam.PTransform):
    """Write a stage group's `(kept, rejects, tallies)` as committed parts under `folder`, then
    `done.json`; returns the one-element PCollection of what `done.json` says."""

    def __init__(self, folder: str, stage: str, part_size: int = PART_SIZE):
        super().__init__()
        self._folder = folder.rstrip("/")
        self._stage = stage
        self._part_size = part_size
        self.kept_parts: Any = None   # once expanded: the paths of the kept output's parts

    def expand(self, outputs):
        folder, stage = self._folder, self._stage
        committed = []
        for name, pcoll in zip(OUTPUTS, outputs):
            # Only what a successful bundle wrote gets past the shuffle.
            settled = (pcoll
                       | f"Write{name.capitalize()}Parts" >> beam.ParDo(WritePartsFn(f"{folder}/{name}", self._part_size))
                       | f"Settle{name.capitalize()}Parts" >> beam.Reshuffle())
            if name == "kept":
                self.kept_parts = settled
            committed.append(settled | f"Commit{name.capitalize()}Parts" >> beam.Map(commit_part))
        return (committed | "FlattenCommitted" >> beam.Flatten()
                | "SumParts" >> beam.CombinePerKey(sum)
                | "CountsByOutput" >> beam.combiners.ToDict()
                | "WriteDone" >> beam.Map(write_done, folder, stage))


class RestoreCheckpoint(beam.PTransform):
    """`(kept, rejects, tallies)` read back from the committed parts of a done checkpoint (only
    `outputs` of them, in that order, when given). With `hold` (the one-element PCollection of
    `done.json` being written), the parts are matched once it is there."""

    def __init__(self, folder: str, outputs: Sequence[str] = OUTPUTS, hold: Any = None):
        super().__init__()
        self._folder = folder.rstrip("/")
        self._outputs = tuple(outputs)
        self._hold = hold

    def expand(self, pbegin):
        restored = []
        for name in self._outputs:
            title = name.capitalize()
            pattern = pbegin | f"{title}Pattern" >> beam.Create([f"{self._folder}/{name}/*{PART_SUFFIX}{COMMITTED}"])
            if self._hold is not None:
                pattern = after_done(pattern, self._hold, f"{title}AfterDone")
            restored.append(
                pattern
                | f"Match{title}Parts" >> beam.FlatMap(committed_parts)
                | f"Spread{title}Parts" >> Spread(key=lambda path: path)
                | f"Read{title}Parts" >> beam.FlatMap(read_part))
        return tuple(restored)


class Checkpoint:
    """The checkpoint of a graph's first stages, `stage`, in `{work}/{stage}` (no work folder:
    no checkpoint, and the calls below do nothing).

    Use: `restored = checkpoint.restored(pbegin)`; when it is None, build the stages and go on
    with `kept = checkpoint.keep(kept, rejects, tallies)`.
    """

    def __init__(self, work: Optional[str], stage: str, part_size: int = PART_SIZE):
        self.folder = None if work is None else f"{work.rstrip('/')}/{stage}"
        self.stage = stage
        self.part_size = part_size
        self.done = read_done(self.folder) if self.folder else None

    def restored(self, pbegin) -> Optional[tuple]:
        """The stages' `(kept, rejects, tallies)` read back when the checkpoint is done, else None."""
        if self.folder is None or self.done is None:
            return None
        return pbegin | f"Restore{_camel(self.stage)}" >> RestoreCheckpoint(self.folder)

    def keep(self, kept, rejects: Sequence, tallies: Sequence):
        """Keep the stages' outputs (`kept` and their lists of rejects and tallies PCollections);
        returns `kept` to go on with, released once the checkpoint is done, so that a run
        killed in a later stage always leaves it done. Without a work folder: `kept` itself.

        What a run killed before `done.json` left here is removed first: its committed parts
        must never be read with this run's (the output's lease keeps any other run away)."""
        done = self.keep_parts(kept, rejects, tallies)
        return kept if done is None else after_done(kept, done, f"After{_camel(self.stage)}Kept")

    def keep_then_read(self, kept, rejects: Sequence, tallies: Sequence):
        """`keep`, but what goes on is `kept` read back from its committed parts once the
        checkpoint is done, not `kept` held back: only the parts' pattern waits for `done.json`,
        so a run whose `kept` carries texts holds none of them (Beam's in-process runner keeps
        whatever waits for a side input in its driver). The parts are spread over the workers
        as a rerun's are. Without a work folder: `kept` itself."""
        keep = self._keeper()
        done = self.keep_parts(kept, rejects, tallies, keep)
        if done is None or keep is None:
            return kept
        # The parts this run committed, not a match of the folder: a part written again by a
        # re-run region of a cluster job is never read beside the first one.
        title = _camel(self.stage)
        return (after_done(keep.kept_parts, done, f"ReadKept{title}AfterDone")
                | f"SpreadKept{title}Parts" >> Spread(key=lambda path: path)
                | f"ReadKept{title}Parts" >> beam.FlatMap(read_part_file))

    def _keeper(self) -> Optional[KeepCheckpoint]:
        return None if self.folder is None else KeepCheckpoint(self.folder, self.stage, self.part_size)

    def keep_parts(self, kept, rejects: Sequence, tallies: Sequence, keep: Optional[KeepCheckpoint] = None):
        """`keep` without holding `kept` back: returns the one-element PCollection of `done.json`
        (None without a work folder), for the caller to hold back (`after_done`) what the later
        stages start from. Hold back something small: whatever waits for the side input waits
        whole (Beam's in-process runner keeps it in its driver), so waiting ids cost little and
        waiting texts follow the corpus."""
        if self.folder is None:
            return None
        clear_folder(self.folder)
        title = _camel(self.stage)
        outputs = (kept, rejects | f"Flatten{title}Rejects" >> beam.Flatten(),
                   tallies | f"Flatten{title}Tallies" >> beam.Flatten())
        return outputs | f"Keep{title}" >> (keep or KeepCheckpoint(self.folder, self.stage, self.part_size))


def after_done(pcoll, done, label: str):
    """`pcoll` released once `done` (a one-element PCollection) is there: a side input is ready
    before any element of its consumer is processed, on every runner."""
    return pcoll | label >> beam.Map(lambda element, _: element, beam.pvalue.AsSingleton(done))


def _camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.replace("_", "-").split("-"))
