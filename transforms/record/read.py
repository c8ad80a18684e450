"""Reading CNN/DM dumps: `.story` files, `.tgz` archives of them, JSONL rows, and URL lists."""
from __future__ import annotations

import gzip
import hashlib
import io
import json
import re
import tarfile
from dataclasses import replace
from pathlib import PurePosixPath
from typing import IO, Iterator, Union

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from transforms.core.accounting import Reject, Stage
from transforms.core.files import ReadRawRecords, expand_local_inputs
from transforms.record.article import Article

STAGE = "read"


STORY_SUFFIXES = (".story",)


JSONL_SUFFIXES = (".jsonl", ".jsonl.gz", ".json")


ARCHIVE_SUFFIXES = (".tgz", ".tar.gz", ".tar")


SUPPORTED_SUFFIXES = STORY_SUFFIXES + JSONL_SUFFIXES + ARCHIVE_SUFFIXES


_LINE_STRIP = " \t\r\n"


# Sentence ends inside a flattened article: . ! ? (optionally closed by a quote) before a space.
_FLAT_SENTENCE_END = re.compile(r"([.!?]['\"’”]?)\s+")


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

    Joining the units with single spaces gives back the text when sentences were separated by
    single spaces, so the passage keeps the dump's characters.
    """
    units, start = [], 0
    for match in _FLAT_SENTENCE_END.finditer(text):
        units.append(text[start : match.start() + len(match.group(1))])
        start = match.end()
    units.append(text[start:])
    return tuple(u.strip(_LINE_STRIP) for u in units if u.strip(_LINE_STRIP))


def parse_json_row(row: dict, origin: str) -> Article:
    """An article from a JSONL row: `id`/`url`, `article` or `article_lines`, `highlights`."""
    url = str(row.get("url") or "")
    article_id = str(row.get("id") or (url_to_id(url) if url else ""))
    if not article_id:
        raise ValueError("row has neither id nor url")
    if "article_lines" in row:
        paragraphs = tuple(p.strip(_LINE_STRIP) for p in row["article_lines"] if p.strip(_LINE_STRIP))
    else:
        article = str(row.get("article") or "")
        blocks = [b for b in re.split(r"\n+", article) if b.strip(_LINE_STRIP)]
        paragraphs = (tuple(b.strip(_LINE_STRIP) for b in blocks) if len(blocks) > 1
                      else split_flat_article(article))
    raw = row.get("highlights") or []
    lines = raw.split("\n") if isinstance(raw, str) else list(raw)
    highlights = tuple(h.strip(_LINE_STRIP) for h in lines if h.strip(_LINE_STRIP))
    return Article(id=article_id, paragraphs=paragraphs, highlights=highlights, url=url,
                   source=source_from_url(url) or str(row.get("source") or ""), origin=origin)


RawRecord = tuple[str, str, bytes]  # (kind, origin, payload)


def _iter_archive(handle: IO[bytes], path: str) -> Iterator[RawRecord]:
    with tarfile.open(fileobj=handle, mode="r|*") as archive:
        for member in archive:
            if member.isfile() and member.name.endswith(".story"):
                extracted = archive.extractfile(member)
                if extracted is not None:
                    yield "story", f"{path}!{member.name}", extracted.read()


def iter_raw_records(path: str, handle: IO[bytes]) -> Iterator[RawRecord]:
    """Split one input file into raw records without parsing them (one story, one JSON line)."""
    lowered = path.lower()
    if lowered.endswith(ARCHIVE_SUFFIXES):
        yield from _iter_archive(handle, path)
    elif lowered.endswith(JSONL_SUFFIXES):
        stream = gzip.open(handle) if lowered.endswith(".gz") else handle
        for number, line in enumerate(stream, start=1):
            if line.strip():
                yield "json", f"{path}:{number}", line
    elif lowered.endswith(STORY_SUFFIXES):
        yield "story", path, handle.read()
    else:
        yield "unsupported", path, b""


def parse_raw_record(record: RawRecord, default_source: str = "") -> Iterator[Union[Article, Reject]]:
    """Turn a raw record into an Article, or a Reject naming why it could not be read."""
    kind, origin, payload = record
    if kind == "unsupported":
        yield Reject(STAGE, "unsupported_file", origin, f"expected one of {SUPPORTED_SUFFIXES}")
        return
    try:
        text = payload.decode("utf-8")
    except UnicodeDecodeError as error:
        yield Reject(STAGE, "not_utf8", origin, str(error))
        return
    if kind == "story":
        stem = PurePosixPath(origin.split("!")[-1]).name[: -len(".story")]
        article = parse_story(text, stem, origin, source_from_path(origin) or default_source)
    else:
        try:
            row = json.loads(text)
            if not isinstance(row, dict):
                raise ValueError("a JSON line must be an object")
            article = parse_json_row(row, origin)
        except (ValueError, TypeError) as error:
            yield Reject(STAGE, "malformed_json", origin, str(error)[:200])
            return
        if not article.source:
            article = replace(article, source=source_from_path(origin) or default_source)
    if not article.paragraphs:
        yield Reject(STAGE, "empty_article", article.id, origin)
        return
    yield article


class ReadArticles(beam.PTransform):
    """Read articles from files, directories, globs and archives (local or any Beam filesystem).

    Returns `(articles, rejects, tallies)` like `Stage`.
    """

    def __init__(self, patterns: list[str], default_source: str = ""):
        super().__init__()
        self._patterns = expand_local_inputs(patterns, SUPPORTED_SUFFIXES)
        self._default_source = default_source

    def expand(self, pbegin):
        default_source = self._default_source
        raw = pbegin | "ReadFiles" >> ReadRawRecords(self._patterns, iter_raw_records)
        return raw | "Parse" >> Stage(STAGE, lambda r: parse_raw_record(r, default_source))


def read_url_list(path: str) -> Iterator[tuple[str, tuple[str, str, str]]]:
    """(article id, (url, source, split)) for each URL in a published URL-list file."""
    split = split_from_list_name(path)
    with FileSystems.open(path) as handle:
        for line in io.TextIOWrapper(handle, encoding="utf-8"):
            url = line.strip()
            if url:
                yield url_to_id(url), (url, source_from_url(url), split)
