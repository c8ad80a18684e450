"""Reading blog dumps for Cosmos QA (paper §2.1): Blog Authorship Corpus files, JSONL rows, text
directories.

* Blog Authorship Corpus (Schler et al. 2006): one file per blogger named
  `{blogger id}.{gender}.{age}.{industry}.{sign}.xml`, pseudo-XML `<Blog><date>..</date><post>..
  </post>..</Blog>`. It is not well-formed XML (stray `&`, `<` inside posts), so posts are cut
  out by scanning for the `<post>`, `</post>`, `<date>` and `</Blog>` tags, not parsed. A post
  whose `</post>` is missing ends at the next `<post>`, `<date>` or `</Blog>` (or the end of the
  file); it is kept with the flag `unclosed_post` (in `Story.flags`, in its origin and in the
  Beam counter `read.flagged.unclosed_post`) instead of swallowing the posts after it.
  Each post is a story; the blogger id is the blog id; story ids are `{blog}/{post number}`.
* JSONL (`.jsonl`, `.json`): `{"id", "text", "blog_id"?}` per line; without `blog_id` the story
  is its own blog. `id` and `blog_id` are strings (or integers), `text` a string.
* Plain text (`.txt`, or files in a directory given as input): one story per file, the file
  stem is the story id and the blog id.

Inputs are files, globs and directories on any Beam filesystem, matched inside the pipeline
(`transforms.core.io.files.ReadRawRecords`): every worker reads the files dealt to it. A local
directory is the pattern `DIR/**`, every visible file under it (dot files skipped); a JSONL file
over 64 MiB is read in byte ranges by several workers, its `path:line` origins as if read whole.

Every payload is decoded by the one policy of `transforms.core.io.text` (`input.encoding`,
`input.control_chars`): UTF-8 (a BOM stripped), else Windows-1252, else latin-1, recorded per
story in `Story.encoding`; a blog file is decoded as a whole, so all its posts share one
encoding. Control characters are removed (Beam counter `read.control_chars_removed`) or, under
`control_chars: reject`, make the post / row / file a reject. The controls that Python counts
as whitespace (VT, FF, the file/group/record/unit separators, NEL U+0085) become spaces first, as
they always did: the story text is whitespace-normalised anyway.

Rejects of the `read` stage (record id; detail):

| reason | what |
|---|---|
| `unsupported_file` | a file whose suffix is none of `.xml`, `.jsonl`, `.json`, `.txt` (path) |
| `not_blog_xml` | an `.xml` file without `<Blog>` or `<post>` markup: not a blog file at all (blog id; path) |
| `no_posts` | a blog file with markup but no `<post>` (blog id; path) |
| `not_utf8` | `input.encoding: strict` and the file / line is not UTF-8 (blog id, path or path:line; the decode error) |
| `control_characters` | `input.control_chars: reject` and the post / row / file holds NUL or another control character (a blog file with controls outside its posts, where they may break a tag, is one reject) |
| `malformed_json` | a JSONL line that is not JSON, not an object, or lacks `id` / `text` (path:line) |
| `bad_field_type` | a JSONL field of the wrong type, e.g. `text must be a string, got int` (path:line) |
| `text_too_long` | a story longer than `input.max_chars` characters (default 1,000,000: spaCy's `max_length`), rejected before spaCy sees it (story id; length and origin) |
"""
from __future__ import annotations

import html
import json
import re
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import partial
from pathlib import PurePosixPath
from typing import IO, Collection, Iterator, NamedTuple, Optional, Sequence, Union

import apache_beam as beam
from apache_beam.metrics import Metrics

from data_specs.models import CosmosInputSection
from transforms.core.accounting import NAMESPACE, Reject
from transforms.core.io.files import FolderFiles, ReadRawRecords, open_file
from transforms.core.io.text import (
    CONTROL_CHARACTERS,
    ControlPolicy,
    Decoded,
    Policy,
    Undecodable,
    clean_controls,
    decode_bytes,
)
from transforms.core.progress.steps import ProgressLine
from transforms.core.stages import Stage

STAGE = "read"
BLOG_SUFFIXES = (".xml",)
JSONL_SUFFIXES = (".jsonl", ".json")
TEXT_SUFFIXES = (".txt",)
SUPPORTED_SUFFIXES = BLOG_SUFFIXES + JSONL_SUFFIXES + TEXT_SUFFIXES
DEFAULT_MAX_CHARS = 1_000_000

UNSUPPORTED_FILE = "unsupported_file"
NOT_BLOG_XML = "not_blog_xml"
NO_POSTS = "no_posts"
MALFORMED_JSON = "malformed_json"
BAD_FIELD_TYPE = "bad_field_type"
TEXT_TOO_LONG = "text_too_long"
UNCLOSED_POST = "unclosed_post"          # a flag: the post is kept

# A complete `<date>..</date>`, or one of the tags that open or close a post.
_MARKUP = re.compile(r"<date>(?P<date>[^<]*)</date>|<(?P<tag>/?post|date|/blog)>", re.IGNORECASE)
_BLOG = re.compile(r"<blog>", re.IGNORECASE)
_SPACE = re.compile(r"\s+")
# Control characters Python treats as whitespace (str.split / \s): VT, FF, FS, GS, RS, US, NEL.
_SPACE_CONTROLS = re.compile("[\x0b\x0c\x1c-\x1f\x85]")


@dataclass(frozen=True)
class Story:
    """One story: whitespace-normalised text, its blog, where it came from, the encoding it was
    read with, its flags (`unclosed_post`) and the input file it was read from (`source`, so
    that a step can read it again instead of carrying its text through a grouping)."""

    id: str
    blog_id: str
    text: str
    origin: str
    encoding: str = "utf-8"
    flags: tuple[str, ...] = ()
    source: str = field(default="", compare=False)   # where it is, not what it is


class RawRecord(NamedTuple):
    """One unparsed record: a blog post (text, already decoded with its file), a JSONL line or a
    text file (bytes)."""

    kind: str                      # "post" | "json" | "text"
    origin: str
    ident: str                     # story id of a post / text file; "" for a JSONL line
    payload: Union[bytes, str]
    encoding: str = ""             # of a post: its file's
    flags: tuple[str, ...] = ()
    source: str = ""               # the input file's path


# Set while a file is read again (`read_stories_again`): its counts were made by the first read.
_READING_AGAIN: ContextVar[bool] = ContextVar("csdata_cosmos_reading_again", default=False)


def _count(name: str, n: int = 1) -> None:
    if not _READING_AGAIN.get():
        Metrics.counter(NAMESPACE, f"{STAGE}.{name}").inc(n)


def decode(payload: bytes, policy: Policy = "lenient",
           controls: ControlPolicy = "remove") -> Union[Decoded, Undecodable]:
    """`transforms.core.io.text` decoding, whitespace controls turned into spaces first (see the
    module doc); removed controls are counted."""
    decoded = decode_bytes(payload, policy)
    if isinstance(decoded, Undecodable):
        return decoded
    return clean_text_controls(decoded, controls)


def clean_text_controls(decoded: Decoded, controls: ControlPolicy = "remove") -> Union[Decoded, Undecodable]:
    """Whitespace controls to spaces, then `clean_controls`; removed controls are counted."""
    spaced = Decoded(_SPACE_CONTROLS.sub(" ", decoded.text), decoded.encoding, decoded.control_chars)
    cleaned = clean_controls(spaced, controls)
    if isinstance(cleaned, Decoded) and cleaned.control_chars > decoded.control_chars:
        _count("control_chars_removed", cleaned.control_chars - decoded.control_chars)
    return cleaned


def _count_controls(text: str) -> int:
    cleaned = clean_controls(Decoded(_SPACE_CONTROLS.sub(" ", text), ""), "remove")
    assert isinstance(cleaned, Decoded)
    return cleaned.control_chars


def clean_text(text: str, drop_tokens: Sequence[str] = (), unescape: bool = True) -> str:
    """Unescape HTML entities, drop placeholder tokens, collapse whitespace (NBSP included)."""
    if unescape:
        text = html.unescape(text)
    words = [w for w in _SPACE.split(text.replace("\u00a0", " ").replace("\u0085", " ")) if w]
    if drop_tokens:
        dropped = set(drop_tokens)
        words = [w for w in words if w not in dropped]
    return " ".join(words)


def blog_id_from_path(path: str) -> str:
    """The blogger id of a Blog Authorship Corpus file: the file name up to the first dot."""
    return PurePosixPath(path.replace("\\", "/")).name.split(".")[0]


def find_posts(text: str) -> list[tuple[int, int, str, bool]]:
    """`(start, end, date, closed)` of each post's content in a blog file's text, in file order.

    A post runs from `<post>` to its `</post>`; when that is missing, to the next `<post>`,
    `<date>` or `</Blog>`, or the end of the text (`closed` False). `date` is the last complete
    `<date>..</date>` before the post ("" when there is none).
    """
    posts: list[tuple[int, int, str, bool]] = []
    date = ""
    start, post_date = -1, ""
    for match in _MARKUP.finditer(text):
        tag = "date" if match.group("date") is not None else match.group("tag").lower()
        if start >= 0:
            if tag == "/post":
                posts.append((start, match.start(), post_date, True))
                start = -1
                continue
            posts.append((start, match.start(), post_date, False))   # <post>, <date>, </blog>
            start = -1
        if tag == "post":
            start, post_date = match.end(), date
        elif tag == "date":
            date = (match.group("date") or "").strip()   # a bare <date> (unclosed): date unknown
    if start >= 0:
        posts.append((start, len(text), post_date, False))
    return posts


def split_blog_file(path: str, payload: bytes, policy: Policy = "lenient",
                    controls: ControlPolicy = "remove") -> Iterator[Union[RawRecord, Reject]]:
    """One raw record per post of a blog file, or the `Reject`s of the file / its posts."""
    blog = blog_id_from_path(path)
    decoded = decode_bytes(payload, policy)
    if isinstance(decoded, Undecodable):
        yield Reject(STAGE, decoded.reason, blog, f"{path}: {decoded.detail}")
        return
    encoding = decoded.encoding
    if controls == "remove":          # before the tags are looked for: a NUL may sit inside one
        cleaned = clean_text_controls(decoded, "remove")
        assert isinstance(cleaned, Decoded)
        decoded = cleaned
    text = decoded.text
    if encoding != "utf-8":
        _count(f"encoding.{encoding}")
    posts = find_posts(text)
    if not posts:
        reason = NO_POSTS if _BLOG.search(text) or _MARKUP.search(text) else NOT_BLOG_XML
        yield Reject(STAGE, reason, blog, path)
        return
    if controls == "reject":
        # Controls outside the posts may have broken a tag: the file's markup cannot be trusted.
        outside = _count_controls(text) - sum(_count_controls(text[s:e]) for s, e, _, _ in posts)
        if outside:
            yield Reject(STAGE, CONTROL_CHARACTERS, blog,
                         f"{outside} control characters in the markup outside the posts; {path}")
            return
    for number, (start, end, date, closed) in enumerate(posts):
        flags = () if closed else (UNCLOSED_POST,)
        notes = ", ".join([*([date] if date else []), encoding, *flags])
        origin = f"{path}#post{number} ({notes})"
        ident = f"{blog}/{number:04d}"
        content = text[start:end]
        if controls == "reject":
            checked = clean_text_controls(Decoded(content, encoding), "reject")
            if isinstance(checked, Undecodable):
                yield Reject(STAGE, checked.reason, ident, f"{checked.detail}; {origin}")
                continue
            content = checked.text
        yield RawRecord("post", origin, ident, content, encoding, flags, path)


def is_line_file(path: str) -> bool:
    """Whether a file is read line by line (JSONL), so that a big one may be read in byte ranges
    by several workers (`transforms.core.io.files`)."""
    return path.lower().endswith(JSONL_SUFFIXES)


def iter_raw_records(path: str, handle: IO[bytes], policy: Policy = "lenient",
                     controls: ControlPolicy = "remove", first_line: int = 1
                     ) -> Iterator[Union[RawRecord, Reject]]:
    """Split one input file into raw records (or rejects) without parsing them; `first_line`
    numbers the lines of a range of a JSONL file (`is_line_file`)."""
    lowered = path.lower()
    if lowered.endswith(BLOG_SUFFIXES):
        yield from split_blog_file(path, handle.read(), policy, controls)
    elif lowered.endswith(JSONL_SUFFIXES):
        for number, line in enumerate(handle, start=first_line):
            if line.strip():
                yield RawRecord("json", f"{path}:{number}", "", line, source=path)
    elif lowered.endswith(TEXT_SUFFIXES) or "." not in PurePosixPath(path).name:
        stem = PurePosixPath(path).name.rsplit(".", 1)[0]
        yield RawRecord("text", path, stem, handle.read(), source=path)
    else:
        yield Reject(STAGE, UNSUPPORTED_FILE, path, f"expected one of {SUPPORTED_SUFFIXES}")


def _type_name(value: object) -> str:
    return {"NoneType": "null", "dict": "object"}.get(type(value).__name__, type(value).__name__)


class _Malformed(ValueError):
    def __init__(self, reason: str, detail: str):
        super().__init__(detail)
        self.reason = reason


def _identifier(row: dict, key: str) -> str:
    value = row.get(key)
    if value is None or isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return str(value or "")
    raise _Malformed(BAD_FIELD_TYPE, f"{key} must be a string, got {_type_name(value)}")


def parse_json_row(payload: bytes, policy: Policy = "lenient",
                   controls: ControlPolicy = "remove") -> tuple[str, str, str, str]:
    """`(id, blog id, text, encoding)` of a JSONL line; raises `_Malformed` with the reason."""
    decoded = decode(payload, policy, controls)
    if isinstance(decoded, Undecodable):
        raise _Malformed(decoded.reason, decoded.detail)
    try:
        row = json.loads(decoded.text)
    except ValueError as error:
        raise _Malformed(MALFORMED_JSON, f"not JSON: {error}") from None
    if not isinstance(row, dict):
        raise _Malformed(MALFORMED_JSON, f"a JSON line must be an object, got {_type_name(row)}")
    story_id = _identifier(row, "id")
    if not story_id:
        raise _Malformed(MALFORMED_JSON, "row has no id")
    if "text" not in row or row["text"] is None:
        raise _Malformed(MALFORMED_JSON, "row has no text")
    if not isinstance(row["text"], str):
        raise _Malformed(BAD_FIELD_TYPE, f"text must be a string, got {_type_name(row['text'])}")
    fields = []
    for name, value in (("id", story_id), ("blog_id", _identifier(row, "blog_id") or story_id),
                        ("text", row["text"])):
        cleaned = clean_text_controls(Decoded(value, decoded.encoding), controls)
        if isinstance(cleaned, Undecodable):
            raise _Malformed(cleaned.reason, f"{name}: {cleaned.detail}")
        fields.append(cleaned.text)
    return fields[0], fields[1], fields[2], decoded.encoding


def parse_raw_record(record: Union[RawRecord, Reject, tuple], drop_tokens: Sequence[str] = (),
                     unescape: bool = True, encoding: Policy = "lenient",
                     controls: ControlPolicy = "remove",
                     max_chars: int = DEFAULT_MAX_CHARS) -> Iterator[Union[Story, Reject]]:
    """A `Story`, or a `Reject` naming why the record cannot be read (see the module doc)."""
    if isinstance(record, Reject):
        yield record
        return
    kind, origin, ident, payload, record_encoding, flags, source = RawRecord(*record)
    if kind == "json":
        assert isinstance(payload, bytes)
        try:
            story_id, blog_id, text, record_encoding = parse_json_row(payload, encoding, controls)
        except _Malformed as error:
            yield Reject(STAGE, error.reason, origin, str(error)[:200])
            return
        if record_encoding != "utf-8":
            _count(f"encoding.{record_encoding}")
        story = Story(story_id, blog_id, clean_text(text, drop_tokens, unescape), origin, record_encoding,
                      source=source)
    elif kind == "post":
        assert isinstance(payload, str)
        story = Story(ident, ident.split("/")[0], clean_text(payload, drop_tokens, unescape), origin,
                      record_encoding, tuple(flags), source)
        for flag in flags:
            _count(f"flagged.{flag}")
    else:
        assert isinstance(payload, bytes)
        decoded = decode(payload, encoding, controls)
        if isinstance(decoded, Undecodable):
            yield Reject(STAGE, decoded.reason, ident, f"{origin}: {decoded.detail}")
            return
        if decoded.encoding != "utf-8":
            _count(f"encoding.{decoded.encoding}")
        story = Story(ident, ident, clean_text(decoded.text, drop_tokens, False), origin, decoded.encoding,
                      source=source)
    if len(story.text) > max_chars:
        yield Reject(STAGE, TEXT_TOO_LONG, story.id,
                     f"{len(story.text)} characters > input.max_chars {max_chars}; {origin}")
        return
    yield story


def read_stories_again(source: str, ids: Collection[str], section: CosmosInputSection) -> Iterator[Story]:
    """The stories with these ids of one input file, read again as `ReadStories` read them
    (same spec section), without counting the reading twice: for a step that needs a few texts
    back instead of carrying every text through a grouping. Posts and text files whose ids are
    not asked for are not parsed."""
    drop, unescape = tuple(section.drop_tokens), section.unescape_html
    policy, controls, max_chars = section.encoding, section.control_chars, section.max_chars
    with open_file(source) as handle:
        records = iter_raw_records(source, handle, policy, controls)
        while True:
            token = _READING_AGAIN.set(True)
            try:
                record = next(records, None)
                if record is None:
                    return
                if isinstance(record, Reject) or (record.ident and record.ident not in ids):
                    continue
                stories = [s for s in parse_raw_record(record, drop, unescape, policy, controls, max_chars)
                           if isinstance(s, Story) and s.id in ids]
            finally:
                _READING_AGAIN.reset(token)
            yield from stories


class ReadStories(beam.PTransform):
    """Read stories from files, directories and globs; returns `(stories, rejects, tallies)`.

    The patterns are matched inside the pipeline and each file is read by the worker it is dealt
    to (`transforms.core.io.files.ReadRawRecords`). A local directory is read recursively (the
    pattern `DIR/**`), every visible file of it: a text directory holds one story a file,
    whatever the file names; dot files are skipped. A JSONL file over 64 MiB is read in byte
    ranges by several workers, its lines numbered as if read whole. With `progress`, the run's
    line counts the files matched and read. The records are parsed where they were read (no
    rebalance: a blog corpus is many files, and that grouping would carry every post's text).
    """

    def __init__(self, patterns: Sequence[str], input: CosmosInputSection,  # noqa: A002 (the spec's name)
                 progress: Optional[ProgressLine] = None):
        super().__init__()
        self._patterns = list(patterns)
        self._input = input
        self._progress = progress

    def expand(self, pbegin):
        section = self._input
        drop, unescape = tuple(section.drop_tokens), section.unescape_html
        policy, controls, max_chars = section.encoding, section.control_chars, section.max_chars
        raw = pbegin | "ReadFiles" >> ReadRawRecords(
            self._patterns, partial(iter_raw_records, policy=policy, controls=controls),
            folder_files=FolderFiles(suffixes=None), line_files=is_line_file, progress=self._progress,
            rebalance=False)
        return raw | "Parse" >> Stage(STAGE, lambda r: parse_raw_record(
            r, drop, unescape, policy, controls, max_chars))
