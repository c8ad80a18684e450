"""Reading CNN/DM dumps: `.story` files, `.tgz` archives of them, JSONL rows, and URL lists.

Real dumps are messy, and nothing in one may crash the run or vanish without a trace: every input
that cannot become an article is a `Reject` of stage `read` (a row of `rejects/`, a Beam counter
`read.rejected.<reason>`, a count in `summary.json`) and the run goes on. The reasons, with the
reject's `record_id` and `detail`:

| reason | record_id | detail |
|---|---|---|
| `unsupported_file` | the path | `expected one of ('.story', ...)` for an unknown suffix; `not a tar archive` (`(empty file)`, `(gzip data that is not tar)`) for a `.tgz` / `.tar.gz` / `.tar` that is something else; `not gzip data` for a `.jsonl.gz` that is not gzip |
| `truncated_archive` | the archive's path | `N members read before the damage (K stories kept): <error>`: the archive's stream broke (a download cut short, a corrupt block); the K stories read before the break are kept and read as usual, and this one reject stands for the rest |
| `empty_archive` | the archive's path | `no .story member among N members`: a sound archive that holds no story |
| `truncated_file` | the `.jsonl.gz` path | `N lines read before the damage: <error>`; the lines before it are kept |
| `not_utf8` | the record's origin | under `input.encoding: strict`, a story or JSON line that is not UTF-8 |
| `control_characters` | the record's origin | under `input.control_chars: reject`, `N control characters (e.g. NUL)` in the raw text or in a JSON string |
| `malformed_json` | `path:line` | the JSON error; `a JSON line must be an object`; `row has neither id nor url` |
| `bad_field_type` | `path:line` | e.g. `article must be a string, got int`, `article_lines[2] must be a string, got null`, `highlights must be a string or a list of strings, got dict` |
| `empty_article` | the article id | the origin: no paragraph left after stripping |
| `text_too_long` | the article id | `<origin>: N characters, more than input.max_chars (M)` (the DeepMind story layout of the article, `article_document`, is measured; the default is spaCy's `nlp.max_length`) |

An origin is the path, `archive!member` for an archive member, `path:line` for a JSON line.

Files are found and read as `transforms.core.files.ReadRawRecords` does: the `--input` patterns
are matched inside the pipeline and every worker reads the files dealt to it. A local directory
is read recursively (the pattern `DIR/**`), only its files with a supported suffix (`.story`,
`.jsonl`, `.jsonl.gz`, `.json`, `.tgz`, `.tar.gz`, `.tar`, any case); a file named directly or
by a glob is read whatever its suffix (an unknown one is an `unsupported_file` reject). An
uncompressed JSONL file bigger than 64 MiB is read in byte ranges by several workers, its lines
numbered as if read whole; the stories of an archive are read by one worker and then dealt out.

Archives are read as a stream, member by member; their compression (gzip, bzip2, xz or none) is
found from their first bytes, not their name. A cut is found wherever it falls: inside the
compressed stream (its end-of-stream marker or checksum missing), inside a member, or between two
members (tarfile alone would take that for the end: a sound archive ends with its zero blocks).
An I/O error of the file system itself (not damage in the data) is raised as usual, so that the
runner can retry it.

Decoding follows the one policy of `transforms.core.text`: UTF-8 with a byte-order mark
stripped, else (under `lenient`, the default) cp1252 or latin-1; the encoding is kept on the
article (`Article.encoding`, the `encoding` column of `passages`) so users can filter on it. NUL
and the other control characters are removed from the raw text and from every JSON string after
`json.loads` (`input.control_chars: remove`, counted by the Beam counter
`read.control_chars_removed`; records not read as plain UTF-8 by `read.encoding.<encoding>`), or
make the record a `control_characters` reject. JSONL fields are typed: `id`, `url` and `source` strings,
`article` a string or `article_lines` a list of strings, `highlights` a string or a list of
strings; a null field counts as absent.
"""
from __future__ import annotations

import bz2
import gzip
import hashlib
import io
import json
import lzma
import re
import tarfile
import zlib
from dataclasses import replace
from pathlib import PurePosixPath
from typing import IO, Any, Callable, Iterator, Optional, Union

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics import Metrics

from data_specs.models import RecordInputSection
from transforms.core.accounting import NAMESPACE, Reject
from transforms.core.files import FolderFiles, ReadRawRecords
from transforms.core.progress import ProgressLine
from transforms.core.stages import Stage
from transforms.core.text import Decoded, Undecodable, clean_string, decode_text
from transforms.record.article import Article, article_document

STAGE = "read"


STORY_SUFFIXES = (".story",)


JSONL_SUFFIXES = (".jsonl", ".jsonl.gz", ".json")


ARCHIVE_SUFFIXES = (".tgz", ".tar.gz", ".tar")


SUPPORTED_SUFFIXES = STORY_SUFFIXES + JSONL_SUFFIXES + ARCHIVE_SUFFIXES


# JSONL files that may be read in byte ranges (a compressed one is read whole).
LINE_SUFFIXES = (".jsonl", ".json")


# Reject reasons of this stage (see the module docstring).
UNSUPPORTED_FILE = "unsupported_file"
TRUNCATED_ARCHIVE = "truncated_archive"
EMPTY_ARCHIVE = "empty_archive"
TRUNCATED_FILE = "truncated_file"
MALFORMED_JSON = "malformed_json"
BAD_FIELD_TYPE = "bad_field_type"
EMPTY_ARTICLE = "empty_article"
TEXT_TOO_LONG = "text_too_long"


# spaCy's default `nlp.max_length`; the shipped spec's `input.max_chars`.
DEFAULT_MAX_CHARS = 1_000_000


_LINE_STRIP = " \t\r\n"


# Sentence ends inside a flattened article: . ! ? (optionally closed by a quote) before a space.
_FLAT_SENTENCE_END = re.compile(r"([.!?]['\"’”]?)\s+")
# See et al.'s preprocessing (the Hugging Face `cnn_dailymail` rows) ends every line that lacks a
# final mark with " ." and joins the lines with spaces ("By . Daily Mail Reporter . PUBLISHED: ."),
# and ends each highlight so; the release has the lines joined by spaces and no such marks.
_SEE_LINE_MARK = re.compile(r"(?<=\S) \.(?=\s|$)")


def input_section(value: Union[str, RecordInputSection, None] = "") -> RecordInputSection:
    """The spec's `input` section; a plain string is a `default_source` with the shipped defaults
    (lenient decoding, control characters removed, `max_chars` = spaCy's limit)."""
    if isinstance(value, RecordInputSection):
        return value
    return RecordInputSection(default_source=value or "", encoding="lenient", control_chars="remove",
                              max_chars=DEFAULT_MAX_CHARS)


def url_to_id(url: str) -> str:
    """ReCoRD/CNN-DM article id: sha1 hex of the URL's UTF-8 bytes."""
    return hashlib.sha1(url.encode("utf-8")).hexdigest()


def source_from_url(url: str) -> str:
    """"CNN" or "Daily mail" (ReCoRD's spelling) from an article URL, else ""."""
    lowered = url.lower()
    if "dailymail.co.uk" in lowered:
        return "Daily mail"
    if "cnn.com" in lowered:
        return "CNN"
    return ""


def source_from_path(path: str) -> str:
    """The source implied by a DeepMind-layout path (`cnn/stories/…`, `dailymail/stories/…`)."""
    parts = [p.lower() for p in re.split(r"[\\/]", path)]
    if any(p.startswith("dailymail") for p in parts):
        return "Daily mail"
    if any(p.startswith("cnn") for p in parts):
        return "CNN"
    return ""


def split_from_list_name(path: str) -> str:
    """Split named by a URL-list file name (`all_train.txt`, `cnn_wayback_validation_urls.txt`)."""
    name = PurePosixPath(path).name.lower()
    for key, split in (("train", "train"), ("val", "validation"), ("test", "test")):
        if key in name:
            return split
    return ""


def parse_story(text: str, story_id: str, origin: str = "", source: str = "") -> Article:
    """Parse a DeepMind `.story`: blank-line-separated paragraphs, then `@highlight` blocks."""
    paragraphs: list[str] = []
    highlights: list[str] = []
    next_is_highlight = False
    for block in re.split(r"\n\s*\n", text.replace("\r\n", "\n")):
        for line in block.split("\n"):
            line = line.strip(_LINE_STRIP)
            if not line:
                continue
            if line == "@highlight":
                next_is_highlight = True
            elif next_is_highlight:
                highlights.append(line)
                next_is_highlight = False
            else:
                paragraphs.append(line)
    return Article(id=story_id, paragraphs=tuple(paragraphs), highlights=tuple(highlights),
                   source=source, origin=origin)


def split_flat_article(text: str) -> tuple[str, ...]:
    """Units of an article whose paragraphs were flattened into one string: its sentences.

    A " ." line mark of See et al.'s preprocessing ends a unit and is dropped, as in the release.
    Joining the units with single spaces gives back the text, without those marks, when sentences
    were separated by single spaces, so the passage keeps the dump's other characters.
    """
    units = []
    for block in _SEE_LINE_MARK.split(text):
        start = 0
        for match in _FLAT_SENTENCE_END.finditer(block):
            units.append(block[start : match.start() + len(match.group(1))])
            start = match.end()
        units.append(block[start:])
    return tuple(u.strip(_LINE_STRIP) for u in units if u.strip(_LINE_STRIP))


class FieldTypeError(ValueError):
    """A JSONL field of the wrong type (the reject `bad_field_type`); the message is its detail."""


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _string_field(row: dict, key: str) -> str:
    """A string field of a row; absent or null is ""."""
    value = row.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise FieldTypeError(f"{key} must be a string, got {_type_name(value)}")
    return value


def _string_items(value: list, key: str) -> list[str]:
    for index, item in enumerate(value):
        if not isinstance(item, str):
            raise FieldTypeError(f"{key}[{index}] must be a string, got {_type_name(item)}")
    return value


def parse_json_row(row: dict, origin: str) -> Article:
    """An article from a JSONL row: `id`/`url`, `article` or `article_lines`, `highlights`.

    Raises `FieldTypeError` for a field of the wrong type (null is absent), ValueError for a row
    with neither id nor url.
    """
    url = _string_field(row, "url")
    article_id = _string_field(row, "id") or (url_to_id(url) if url else "")
    if not article_id:
        raise ValueError("row has neither id nor url")
    source = _string_field(row, "source")
    lines = row.get("article_lines")
    if lines is not None:
        if not isinstance(lines, list):
            raise FieldTypeError(f"article_lines must be a list of strings, got {_type_name(lines)}")
        paragraphs = tuple(p.strip(_LINE_STRIP) for p in _string_items(lines, "article_lines")
                           if p.strip(_LINE_STRIP))
    else:
        article = _string_field(row, "article")
        blocks = [b for b in re.split(r"\n+", article) if b.strip(_LINE_STRIP)]
        paragraphs = (tuple(b.strip(_LINE_STRIP) for b in blocks) if len(blocks) > 1
                      else split_flat_article(article))
    raw = row.get("highlights")
    if raw is None:
        raw = []
    elif isinstance(raw, str):
        raw = [_SEE_LINE_MARK.sub("", h) for h in raw.split("\n")]
    elif isinstance(raw, list):
        raw = _string_items(raw, "highlights")
    else:
        raise FieldTypeError(f"highlights must be a string or a list of strings, got {_type_name(raw)}")
    highlights = tuple(h.strip(_LINE_STRIP) for h in raw if h.strip(_LINE_STRIP))
    return Article(id=article_id, paragraphs=paragraphs, highlights=highlights, url=url,
                   source=source_from_url(url) or source, origin=origin)


class _Refused(Exception):
    """A JSON string the control-character policy refuses (carries the `Undecodable`)."""

    def __init__(self, refused: Undecodable):
        super().__init__(refused.detail)
        self.refused = refused


def clean_json_value(value: Any, controls: str = "remove") -> tuple[Any, int]:
    """Every string of a parsed JSON value (keys too) through `clean_string`; the value and the
    number of control characters removed. Raises `_Refused` under the `reject` policy."""
    if isinstance(value, str):
        cleaned = clean_string(value, controls)  # type: ignore[arg-type]
        if isinstance(cleaned, Undecodable):
            raise _Refused(cleaned)
        return cleaned.text, cleaned.control_chars
    if isinstance(value, list):
        items, removed = [], 0
        for item in value:
            item, n = clean_json_value(item, controls)
            items.append(item)
            removed += n
        return items, removed
    if isinstance(value, dict):
        mapping, removed = {}, 0
        for key, item in value.items():
            key, n_key = clean_json_value(key, controls)
            mapping[key], n_item = clean_json_value(item, controls)
            removed += n_key + n_item
        return mapping, removed
    return value, 0


RawRecord = tuple[str, str, bytes]  # (kind, origin, payload)


def _reject_record(reason: str, origin: str, detail: str) -> RawRecord:
    """A raw record that `parse_raw_record` turns into a reject (damage found while splitting)."""
    return "reject", origin, json.dumps([reason, detail]).encode("utf-8")


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
                    yield _reject_record(EMPTY_ARCHIVE, path, f"no .story member among {_plural(0, 'member')}")
                    return
                looks_like_tar = not compression and prefix[_TAR_MAGIC] == b"ustar"
                if isinstance(header, tarfile.InvalidHeaderError) or not looks_like_tar:
                    what = ("(empty file)" if not prefix else
                            f"({compression} data that is not tar)" if compression else "")
                    yield _reject_record(UNSUPPORTED_FILE, path, f"not a tar archive {what}".strip())
                    return
        detail = (f"{_plural(members, 'member')} read before the damage "
                  f"({_plural(stories, 'story', 'stories')} kept): {type(cause).__name__}: {cause}")
        yield _reject_record(TRUNCATED_ARCHIVE, path, detail[:300])
        return
    if not stories:
        yield _reject_record(EMPTY_ARCHIVE, path, f"no .story member among {_plural(members, 'member')}")


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
        yield _reject_record(UNSUPPORTED_FILE, path, f"not gzip data ({stream.error})"[:300])
    else:
        detail = f"{_plural(number, 'line')} read before the damage: {type(stream.error).__name__}: {stream.error}"
        yield _reject_record(TRUNCATED_FILE, path, detail[:300])


def is_line_file(path: str) -> bool:
    """Whether a file is read line by line, so that a big one may be read in byte ranges by
    several workers (`transforms.core.files`): uncompressed JSONL."""
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
        yield _reject_record(UNSUPPORTED_FILE, path, f"expected one of {SUPPORTED_SUFFIXES}")


def _count_decoding(decoded: Decoded, removed: int = 0) -> None:
    if decoded.encoding != "utf-8":
        Metrics.counter(NAMESPACE, f"{STAGE}.encoding.{decoded.encoding}").inc()
    if decoded.control_chars + removed:
        Metrics.counter(NAMESPACE, f"{STAGE}.control_chars_removed").inc(decoded.control_chars + removed)


def parse_raw_record(record: RawRecord, default_source: Union[str, RecordInputSection] = ""
                     ) -> Iterator[Union[Article, Reject]]:
    """Turn a raw record into an Article, or a Reject naming why it could not be read.

    `default_source` is the spec's `input` section (or only its `default_source`, with the
    shipped defaults for the rest).
    """
    section = input_section(default_source)
    kind, origin, payload = record
    if kind == "reject":
        reason, detail = json.loads(payload.decode("utf-8"))
        yield Reject(STAGE, reason, origin, detail)
        return
    decoded = decode_text(payload, section.encoding, section.control_chars)
    if isinstance(decoded, Undecodable):
        yield Reject(STAGE, decoded.reason, origin, decoded.detail)
        return
    removed = 0
    if kind == "story":
        stem = PurePosixPath(origin.split("!")[-1]).name[: -len(".story")]
        article = parse_story(decoded.text, stem, origin, source_from_path(origin) or section.default_source)
    else:
        try:
            row = json.loads(decoded.text)
            if not isinstance(row, dict):
                raise ValueError("a JSON line must be an object")
            row, removed = clean_json_value(row, section.control_chars)
            article = parse_json_row(row, origin)
        except _Refused as refused:
            yield Reject(STAGE, refused.refused.reason, origin, refused.refused.detail)
            return
        except FieldTypeError as error:
            yield Reject(STAGE, BAD_FIELD_TYPE, origin, str(error)[:200])
            return
        except (ValueError, TypeError, RecursionError) as error:
            yield Reject(STAGE, MALFORMED_JSON, origin, str(error)[:200])
            return
        if not article.source:
            article = replace(article, source=source_from_path(origin) or section.default_source)
    _count_decoding(decoded, removed)
    article = replace(article, encoding=decoded.encoding)
    if not article.paragraphs:
        yield Reject(STAGE, EMPTY_ARTICLE, article.id, origin)
        return
    length = len(article_document(article))
    if length > section.max_chars:
        yield Reject(STAGE, TEXT_TOO_LONG, article.id,
                     f"{origin}: {length} characters, more than input.max_chars ({section.max_chars})")
        return
    yield article


class ReadArticles(beam.PTransform):
    """Read articles from files, directories, globs and archives (local or any Beam filesystem).

    The patterns are matched inside the pipeline and each file is read by the worker it is dealt
    to (`transforms.core.files.ReadRawRecords`); a local directory is read as the pattern
    `DIR/**`, its files with `SUPPORTED_SUFFIXES` only; an uncompressed JSONL file over 64 MiB
    is read in byte ranges by several workers. `section` is the spec's `input` section (a plain
    string: its `default_source`, the rest as shipped). Returns `(articles, rejects, tallies)`
    like `Stage`. With `progress`, the run's line counts the files matched and read.
    """

    def __init__(self, patterns: list[str], section: Union[str, RecordInputSection] = "",
                 progress: Optional[ProgressLine] = None):
        super().__init__()
        self._patterns = list(patterns)
        self._section = input_section(section)
        self._progress = progress

    def expand(self, pbegin):
        section = self._section
        raw = pbegin | "ReadFiles" >> ReadRawRecords(
            self._patterns, iter_raw_records, folder_files=FolderFiles(SUPPORTED_SUFFIXES),
            line_files=is_line_file, progress=self._progress)
        return raw | "Parse" >> Stage(STAGE, lambda r: parse_raw_record(r, section))


def read_url_list(path: str) -> Iterator[tuple[str, tuple[str, str, str]]]:
    """(article id, (url, source, split)) for each URL in a published URL-list file.

    Lines are decoded by the shared policy (a BOM and control characters never reach a URL).
    """
    split = split_from_list_name(path)
    with FileSystems.open(path) as handle:
        for line in iter(handle.readline, b""):
            decoded = decode_text(line)
            url = decoded.text.strip() if isinstance(decoded, Decoded) else ""
            if url:
                yield url_to_id(url), (url, source_from_url(url), split)
