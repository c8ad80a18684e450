"""Input files cut into raw records, unparsed: one story, one JSON line, or a reject record for
damage found while cutting (`iter_raw_records`, the splitter `transforms.core.io.files.ReadRawRecords`
runs on each file).

A local directory is read recursively, only its files with a supported suffix (`.story`,
`.jsonl`, `.jsonl.gz`, `.json`, `.tgz`, `.tar.gz`, `.tar`, any case); a file named directly or
by a glob is read whatever its suffix (an unknown one is an `unsupported_file` reject). An
uncompressed JSONL file is line by line (`is_line_file`), so a big one may be read in byte ranges
by several workers, its lines numbered as if read whole; the stories of an archive are read by
one worker.

Archives are read as a stream, member by member; their compression (gzip, bzip2, xz or none) is
found from their first bytes, not their name. A cut is found wherever it falls: inside the
compressed stream (its end-of-stream marker or checksum missing), inside a member, or between two
members (tarfile alone would take that for the end: a sound archive ends with its zero blocks).
An I/O error of the file system itself (not damage in the data) is raised as usual, so that the
runner can retry it.
"""
from __future__ import annotations

import bz2
import gzip
import io
import json
import lzma
import tarfile
import zlib
from typing import IO, Any, Callable, Iterator, Optional

STORY_SUFFIXES = (".story",)


JSONL_SUFFIXES = (".jsonl", ".jsonl.gz", ".json")


ARCHIVE_SUFFIXES = (".tgz", ".tar.gz", ".tar")


SUPPORTED_SUFFIXES = STORY_SUFFIXES + JSONL_SUFFIXES + ARCHIVE_SUFFIXES


# JSONL files that may be read in byte ranges (a compressed one is read whole).
LINE_SUFFIXES = (".jsonl", ".json")


# Reject reasons of damage found while cutting (`transforms.record.read` lists every reason).
UNSUPPORTED_FILE = "unsupported_file"
TRUNCATED_ARCHIVE = "truncated_archive"
EMPTY_ARCHIVE = "empty_archive"
TRUNCATED_FILE = "truncated_file"


RawRecord = tuple[str, str, bytes]  # (kind, origin, payload)


def reject_record(reason: str, origin: str, detail: str) -> RawRecord:
    """A raw record that `transforms.record.read.parse_raw_record` turns into a reject (damage
    found while splitting)."""
    return "reject", origin, json.dumps([reason, detail]).encode("utf-8")


def reject_fields(payload: bytes) -> tuple[str, str]:
    """The `(reason, detail)` a reject record's payload carries (`reject_record`)."""
    reason, detail = json.loads(payload.decode("utf-8"))
    return reason, detail


class _SourceError(Exception):
    """An I/O error of the file system itself, not damage in the data: re-raised as it was."""

    def __init__(self, error: OSError):
        super().__init__(str(error))
        self.error = error


class _Guarded:
    """A binary reader over `handle` that first returns `prefix`, and wraps the handle's own
    OSErrors in `_SourceError` so that they are not taken for damage in the data."""

    def __init__(self, handle: IO[bytes], prefix: bytes = b""):
        self._handle = handle
        self._prefix = prefix

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        if self._prefix:
            if size is None or size < 0:
                head, self._prefix = self._prefix, b""
                return head + self._read(-1)
            head, self._prefix = self._prefix[:size], self._prefix[size:]
            return head
        return self._read(size)

    def _read(self, size: int) -> bytes:
        try:
            return self._handle.read(size)
        except OSError as error:
            raise _SourceError(error) from error

    def close(self) -> None:
        pass


def _read_prefix(handle: IO[bytes], size: int) -> bytes:
    parts, have = [], 0
    while have < size:
        chunk = handle.read(size - have)
        if not chunk:
            break
        parts.append(chunk)
        have += len(chunk)
    return b"".join(parts)


# Magic numbers of the compressions a `.tgz` / `.tar` may really hold (by content, not by name).
_COMPRESSIONS: tuple[tuple[bytes, str, Callable[[Any], IO[bytes]]], ...] = (
    (b"\x1f\x8b", "gzip", lambda f: gzip.GzipFile(fileobj=f, mode="rb")),
    (b"BZh", "bzip2", lambda f: bz2.BZ2File(f)),
    (b"\xfd7zXZ\x00", "xz", lambda f: lzma.LZMAFile(f)),
)
# What a broken stream raises: tarfile's own errors, a cut or corrupt gzip / bzip2 / xz stream.
_DAMAGE = (tarfile.TarError, EOFError, zlib.error, OSError, lzma.LZMAError)
_TAR_MAGIC = slice(257, 262)


def _tracking_tarinfo(ends: list) -> type:
    """A TarInfo class that records the header error that ended a tarfile's iteration: tarfile
    ends it quietly on a header cut short after the first member, so a truncated archive would
    otherwise look complete. A sound archive ends on `EOFHeaderError` (its zero blocks)."""

    class _TarInfo(tarfile.TarInfo):
        @classmethod
        def fromtarfile(cls, archive):
            try:
                return super().fromtarfile(archive)
            except tarfile.HeaderError as error:
                ends.append(error)
                raise

    return _TarInfo


def _ending_error(header: Optional[Exception]) -> Optional[str]:
    """Why an archive whose iteration ended on `header` is damaged, or None when it ended soundly."""
    if isinstance(header, tarfile.EOFHeaderError):
        return None
    if header is None or isinstance(header, tarfile.EmptyHeaderError):
        return "the archive ends without its end-of-archive blocks"
    return f"{header}"


def _plural(n: int, word: str, plural: str = "") -> str:
    return f"{n} {word if n == 1 else plural or word + 's'}"


class _SoftEnd(io.RawIOBase):
    """A decompressed stream whose breaking (a cut or corrupt gzip / bzip2 / xz stream) reads as
    its end, the error kept in `error`. tarfile reads ahead in 10 KiB blocks (and a buffered
    reader in 8 KiB ones), so an error raised into them would lose what was decompressed just
    before the break; read this way, those members and lines are kept and the break is reported
    after them."""

    def __init__(self, stream: Any):
        super().__init__()
        self._stream = stream
        self.error: Optional[BaseException] = None

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if self.error is not None:
            return 0
        try:
            chunk = self._stream.read1(len(buffer))
        except _SourceError:
            raise
        except _DAMAGE as error:
            self.error = error
            return 0
        buffer[: len(chunk)] = chunk
        return len(chunk)


def _iter_archive(handle: IO[bytes], path: str) -> Iterator[RawRecord]:
    """The `.story` members of a tar archive (plain, gzip, bzip2 or xz), read member by member.

    When the stream breaks, the stories read so far are yielded and one `truncated_archive`
    record follows; a file that is not a tar archive is one `unsupported_file` record.
    """
    prefix = _read_prefix(handle, tarfile.BLOCKSIZE)
    source = _Guarded(handle, prefix)
    compression, stream = "", None
    for magic, name, opener in _COMPRESSIONS:
        if prefix.startswith(magic):
            compression, stream = name, _SoftEnd(opener(source))
            break
    ends: list = []
    opened = False
    members = stories = 0
    try:
        with tarfile.open(fileobj=stream or source, mode="r|", tarinfo=_tracking_tarinfo(ends)) as archive:
            opened = True
            for member in archive:
                if member.isfile() and member.name.endswith(".story"):
                    extracted = archive.extractfile(member)
                    if extracted is not None:
                        payload = extracted.read()
                        members += 1
                        stories += 1
                        yield "story", f"{path}!{member.name}", payload
                        continue
                members += 1
        if stream is not None:  # the compressed stream must end soundly too (trailer, checksum)
            while stream.read(1 << 16):
                pass
            if stream.error is not None:
                raise stream.error
        problem = _ending_error(ends[-1] if ends else None)
        if problem:
            raise tarfile.ReadError(problem)
    except _SourceError as error:
        raise error.error from None
    except _DAMAGE as damage:
        # the break itself, not what tarfile made of the early end it read
        cause = stream.error if stream is not None and stream.error is not None else damage
        if cause is damage:
            header = ends[-1] if ends else None
            if not opened and isinstance(header, tarfile.HeaderError):
                if isinstance(header, tarfile.EOFHeaderError):
                    yield reject_record(EMPTY_ARCHIVE, path, f"no .story member among {_plural(0, 'member')}")
                    return
                looks_like_tar = not compression and prefix[_TAR_MAGIC] == b"ustar"
                if isinstance(header, tarfile.InvalidHeaderError) or not looks_like_tar:
                    what = ("(empty file)" if not prefix else
                            f"({compression} data that is not tar)" if compression else "")
                    yield reject_record(UNSUPPORTED_FILE, path, f"not a tar archive {what}".strip())
                    return
        detail = (f"{_plural(members, 'member')} read before the damage "
                  f"({_plural(stories, 'story', 'stories')} kept): {type(cause).__name__}: {cause}")
        yield reject_record(TRUNCATED_ARCHIVE, path, detail[:300])
        return
    if not stories:
        yield reject_record(EMPTY_ARCHIVE, path, f"no .story member among {_plural(members, 'member')}")


def _iter_jsonl(handle: IO[bytes], path: str, first_line: int = 1) -> Iterator[RawRecord]:
    """The non-blank lines of a JSONL file (gzip-compressed when its name ends in `.gz`);
    `first_line` is the number of the handle's first line (a range of an uncompressed file)."""
    if not path.lower().endswith(".gz"):
        for number, line in enumerate(handle, start=first_line):
            if line.strip():
                yield "json", f"{path}:{number}", line
        return
    stream = _SoftEnd(gzip.GzipFile(fileobj=_Guarded(handle), mode="rb"))
    number = 0
    try:
        for line in io.BufferedReader(stream):
            if stream.error is not None and not line.endswith(b"\n"):
                break  # the piece of a line the break left: part of the damage reported below
            number += 1
            if line.strip():
                yield "json", f"{path}:{number}", line
    except _SourceError as error:
        raise error.error from None
    if stream.error is None:
        return
    if number == 0 and isinstance(stream.error, gzip.BadGzipFile):
        yield reject_record(UNSUPPORTED_FILE, path, f"not gzip data ({stream.error})"[:300])
    else:
        detail = f"{_plural(number, 'line')} read before the damage: {type(stream.error).__name__}: {stream.error}"
        yield reject_record(TRUNCATED_FILE, path, detail[:300])


def is_line_file(path: str) -> bool:
    """Whether a file is read line by line, so that a big one may be read in byte ranges by
    several workers (`transforms.core.io.files`): uncompressed JSONL."""
    return path.lower().endswith(LINE_SUFFIXES)


def iter_raw_records(path: str, handle: IO[bytes], first_line: int = 1) -> Iterator[RawRecord]:
    """Split one input file into raw records without parsing them (one story, one JSON line).

    Damage found while splitting (a truncated archive, a file that is not what its name says)
    is a record of kind `reject`, so the stage counts it like any other unit. `first_line`
    numbers the lines of a range of a JSONL file (`is_line_file`).
    """
    lowered = path.lower()
    if lowered.endswith(ARCHIVE_SUFFIXES):
        yield from _iter_archive(handle, path)
    elif lowered.endswith(JSONL_SUFFIXES):
        yield from _iter_jsonl(handle, path, first_line)
    elif lowered.endswith(STORY_SUFFIXES):
        yield "story", path, handle.read()
    else:
        yield reject_record(UNSUPPORTED_FILE, path, f"expected one of {SUPPORTED_SUFFIXES}")
