"""Reading blog dumps for Cosmos QA (paper §2.1): Blog Authorship Corpus files, JSONL rows, text
directories.

* Blog Authorship Corpus (Schler et al. 2006): one file per blogger named
  `{blogger id}.{gender}.{age}.{industry}.{sign}.xml`, pseudo-XML `<Blog><date>..</date><post>..
  </post>..</Blog>`. It is not well-formed XML (stray `&`, `<` inside posts), so posts are cut
  out with a pattern, not parsed. Files are UTF-8 or, for some bloggers, Windows-1252/latin-1:
  bytes are decoded as UTF-8 when they are valid UTF-8, else as cp1252, else as latin-1.
  Each post is a story; the blogger id is the blog id; story ids are `{blog}/{post number}`.
* JSONL (`.jsonl`, `.json`): `{"id", "text", "blog_id"?}` per line; without `blog_id` the story
  is its own blog.
* Plain text (`.txt`, or files in a directory given as input): one story per file, the file
  stem is the story id and the blog id.
"""
from __future__ import annotations

import html
import json
import re
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import IO, Iterator, Sequence, Union

import apache_beam as beam

from data_specs.models import CosmosInputSection
from transforms.core.accounting import Reject, Stage
from transforms.core.files import ReadRawRecords, expand_local_inputs

STAGE = "read"
BLOG_SUFFIXES = (".xml",)
JSONL_SUFFIXES = (".jsonl", ".json")
TEXT_SUFFIXES = (".txt",)
SUPPORTED_SUFFIXES = BLOG_SUFFIXES + JSONL_SUFFIXES + TEXT_SUFFIXES
_POST = re.compile(r"<post>(.*?)</post>", re.DOTALL | re.IGNORECASE)
_DATE = re.compile(r"<date>(.*?)</date>", re.DOTALL | re.IGNORECASE)
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class Story:
    """One story: whitespace-normalised text, its blog and where it came from."""

    id: str
    blog_id: str
    text: str
    origin: str


RawRecord = tuple[str, str, str, bytes]  # (kind, origin, blog id, payload)


def decode(payload: bytes) -> tuple[str, str]:
    """Text and encoding of a blog file: UTF-8 if valid, else cp1252, else latin-1 (never fails)."""
    for encoding in ("utf-8", "cp1252"):
        try:
            return payload.decode(encoding), encoding
        except UnicodeDecodeError:
            continue
    return payload.decode("latin-1"), "latin-1"


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


def split_blog_file(path: str, payload: bytes) -> Iterator[RawRecord]:
    """One raw record per `<post>` of a blog file (UTF-8 encoded); a file without posts is one
    `empty_blog` record."""
    text, encoding = decode(payload)
    blog = blog_id_from_path(path)
    posts = list(_POST.finditer(text))
    if not posts:
        yield "empty_blog", path, blog, b""
        return
    dates = [(m.start(), m.group(1).strip()) for m in _DATE.finditer(text)]
    for number, post in enumerate(posts):
        date = max((d for d in dates if d[0] < post.start()), default=(0, ""))[1]
        origin = f"{path}#post{number}" + (f" ({date}, {encoding})" if date else f" ({encoding})")
        yield "post", origin, f"{blog}/{number:04d}", post.group(1).encode("utf-8")


def iter_raw_records(path: str, handle: IO[bytes]) -> Iterator[RawRecord]:
    """Split one input file into raw records without parsing them."""
    lowered = path.lower()
    if lowered.endswith(BLOG_SUFFIXES):
        yield from split_blog_file(path, handle.read())
    elif lowered.endswith(JSONL_SUFFIXES):
        for number, line in enumerate(handle, start=1):
            if line.strip():
                yield "json", f"{path}:{number}", "", line
    elif lowered.endswith(TEXT_SUFFIXES) or "." not in PurePosixPath(path).name:
        stem = PurePosixPath(path).name.rsplit(".", 1)[0]
        yield "text", path, stem, handle.read()
    else:
        yield "unsupported", path, "", b""


def parse_raw_record(record: RawRecord, drop_tokens: Sequence[str] = (),
                     unescape: bool = True) -> Iterator[Union[Story, Reject]]:
    """A `Story`, or a `Reject` naming why the record cannot be read."""
    kind, origin, ident, payload = record
    if kind == "unsupported":
        yield Reject(STAGE, "unsupported_file", origin, f"expected one of {SUPPORTED_SUFFIXES}")
        return
    if kind == "empty_blog":
        yield Reject(STAGE, "no_posts", ident, origin)
        return
    if kind == "json":
        try:
            row = json.loads(decode(payload)[0])
            if not isinstance(row, dict):
                raise ValueError("a JSON line must be an object")
            story_id = str(row.get("id") or "")
            if not story_id:
                raise ValueError("row has no id")
            text = row.get("text")
            if not isinstance(text, str):
                raise ValueError("row has no text string")
        except (ValueError, TypeError) as error:
            yield Reject(STAGE, "malformed_json", origin, str(error)[:200])
            return
        blog_id = str(row.get("blog_id") or story_id)
        yield Story(story_id, blog_id, clean_text(text, drop_tokens, unescape), origin)
        return
    text = decode(payload)[0]
    blog_id = ident.split("/")[0]
    yield Story(ident, blog_id, clean_text(text, drop_tokens, unescape and kind == "post"), origin)


class ReadStories(beam.PTransform):
    """Read stories from files, directories and globs; returns `(stories, rejects, tallies)`."""

    def __init__(self, patterns: Sequence[str], input: CosmosInputSection):  # noqa: A002 (the spec's name)
        super().__init__()
        # A text directory holds one story a file, whatever the file names.
        self._patterns = expand_local_inputs(patterns, suffixes=None)
        self._drop = tuple(input.drop_tokens)
        self._unescape = input.unescape_html

    def expand(self, pbegin):
        drop, unescape = self._drop, self._unescape
        raw = pbegin | "ReadFiles" >> ReadRawRecords(self._patterns, iter_raw_records)
        return raw | "Parse" >> Stage(STAGE, lambda r: parse_raw_record(r, drop, unescape))
