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
* **`done.json` is last.** It is written by the one step that has seen every committed part,
  so a checkpoint that has it is whole. It names the committed parts of each output by their
  number, their elements and a digest of their names.
* **A restore reads exactly what was committed.** The `.ok` records it finds are checked against
  `done.json` before any part is read, and each part against the count its name gives: an extra
  record (a bundle of a cancelled job that wrote on), a missing one or a short part stops the
  run in one line naming the folder.
* **Nothing is listed on the driver** but `done.json`: parts are matched and read in the graph.
* **A damaged part stops the run** with its path: the work folder's stage folder (or
  `--fresh`) can be removed by hand, which runs the stages again and keeps the model results.

The parts are pickles: a work folder is trusted as the run's own output is.
"""
from __future__ import annotations

import hashlib
import json
import pickle
import uuid
from typing import Any, Iterable, Iterator, Optional, Sequence

import apache_beam as beam
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from apache_beam.transforms.window import GlobalWindows

from transforms.core.errors import StorageError
from transforms.core.resume.crash import crash_point
from transforms.core.resume.memo import matched_pieces
from transforms.core.resume.store import remove_folder, write_bytes
from transforms.core.spread import Spread


class DamagedWork(StorageError):
    """A work folder that does not hold what it committed (a part damaged or added by hand, or
    written by a job that should have stopped): the run stops in one line naming what to remove."""


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




def write_part(folder: str, elements: Sequence[Any]) -> str:
    """One new part of `elements` under `folder`, whole or not at all; returns its path."""
    path = f"{folder.rstrip('/')}/{uuid.uuid4().hex}-{len(elements)}{PART_SUFFIX}"
    write_bytes(path, pickle.dumps(list(elements), protocol=pickle.HIGHEST_PROTOCOL))
    return path


def part_count(path: str) -> int:
    """The elements a part holds, from its name (`write_part`'s; its `.ok` record's too)."""
    name = path[:-len(COMMITTED)] if path.endswith(COMMITTED) else path
    return int(name.rsplit("-", 1)[-1][:-len(PART_SUFFIX)])


def commit_part(path: str) -> tuple[str, str]:
    """Write the `.ok` record of a part; `(output, path)` for `done.json`."""
    count = part_count(path)
    # Not empty: an object store's multipart upload of nothing is refused (S3's NoSuchUpload).
    write_bytes(path + COMMITTED, f"{count}\n".encode("ascii"))
    crash_point("checkpoint.part_committed")
    return path.rstrip("/").rsplit("/", 2)[-2], path


class PartsFn(beam.CombineFn):
    """Part paths (or their `.ok` records) to what `done.json` says of them: `{"parts": N,
    "elements": M, "digest": HEX}`, the digest an XOR of the hashes of their names, so that
    it does not depend on the order they come in."""

    def create_accumulator(self) -> tuple[int, int, int]:
        return 0, 0, 0

    def add_input(self, accumulator: tuple[int, int, int], path: str) -> tuple[int, int, int]:
        parts, elements, digest = accumulator
        name = path.rsplit("/", 1)[-1]
        name = name[:-len(COMMITTED)] if name.endswith(COMMITTED) else name
        value = int.from_bytes(hashlib.sha256(name.encode("utf-8")).digest()[:16], "big")
        return parts + 1, elements + part_count(name), digest ^ value

    def merge_accumulators(self, accumulators: Iterable[tuple[int, int, int]]) -> tuple[int, int, int]:
        parts, elements, digest = 0, 0, 0
        for more, counted, value in accumulators:
            parts, elements, digest = parts + more, elements + counted, digest ^ value
        return parts, elements, digest

    def extract_output(self, accumulator: tuple[int, int, int]) -> dict[str, Any]:
        parts, elements, digest = accumulator
        return {"parts": parts, "elements": elements, "digest": f"{digest:032x}"}


def read_part(committed: str) -> Iterator[Any]:
    """The elements of the part whose `.ok` record is `committed`, as many as its name says."""
    path = committed[:-len(COMMITTED)]
    elements = list(read_part_file(path))
    if len(elements) != part_count(path):
        raise DamagedWork(f"the checkpoint part {path} holds {len(elements)} elements, not the "
                           f"{part_count(path)} its name says; remove {path.rsplit('/', 2)[0]} to run "
                           f"its stages again")
    yield from elements


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
        raise DamagedWork(f"the {kind} {path} cannot be read ({type(error).__name__}: "
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


NO_PARTS = {"parts": 0, "elements": 0, "digest": f"{0:032x}"}


def write_done(parts: dict[str, dict], folder: str, stage: str) -> dict:
    """Write `done.json` (the stage group's name, the elements of each output and its committed
    parts, `PartsFn`'s) once every part is committed; returns it."""
    parts = {o: parts.get(o, NO_PARTS) for o in OUTPUTS}
    done = {"stage": stage, "elements": {o: parts[o]["elements"] for o in OUTPUTS}, "parts": parts}
    write_bytes(done_path(folder), json.dumps(done, sort_keys=True).encode("utf-8"))
    crash_point("checkpoint.done")
    return done


def check_parts(found: dict, done: dict, folder: str, output: str) -> dict:
    """`found` (`PartsFn`'s, of the `.ok` records a restore matched) when it is what `done.json`
    committed for `output`, else a one-line error naming the folder."""
    committed = (done.get("parts") or {}).get(output)
    if found != committed:
        said = (f"{committed['parts']} parts of {committed['elements']} elements" if committed
                else "nothing")
        raise DamagedWork(f"the checkpoint {folder} does not hold what its {DONE} committed ({output}: "
                           f"{found['parts']} parts of {found['elements']} elements found, {said} "
                           f"committed); remove {folder} to run its stages again")
    crash_point("restore.checked")
    return found


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
                | "SumParts" >> beam.CombinePerKey(PartsFn())
                | "PartsByOutput" >> beam.combiners.ToDict()
                | "WriteDone" >> beam.Map(write_done, folder, stage))


class RestoreCheckpoint(beam.PTransform):
    """`(kept, rejects, tallies)` read back from the committed parts of a done checkpoint (only
    `outputs` of them, in that order, when given), `done` being its `done.json`: the `.ok`
    records found are checked against it before any part is read (`check_parts`)."""

    def __init__(self, folder: str, done: dict, outputs: Sequence[str] = OUTPUTS):
        super().__init__()
        self._folder = folder.rstrip("/")
        self._done = done
        self._outputs = tuple(outputs)

    def expand(self, pbegin):
        restored = []
        folder, done = self._folder, self._done
        for name in self._outputs:
            title = name.capitalize()
            committed = (pbegin
                         | f"{title}Pattern" >> beam.Create([f"{folder}/{name}/*{PART_SUFFIX}{COMMITTED}"])
                         | f"Match{title}Parts" >> beam.FlatMap(committed_parts))
            checked = (committed
                       | f"Find{title}Parts" >> beam.CombineGlobally(PartsFn())
                       | f"Check{title}Parts" >> beam.Map(check_parts, done, folder, name))
            restored.append(
                after_done(committed, checked, f"{title}AfterCheck")
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
        return pbegin | f"Restore{_camel(self.stage)}" >> RestoreCheckpoint(self.folder, self.done)

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
        remove_folder(self.folder)   # what a run killed before `done.json` left
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
