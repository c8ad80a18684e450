"""One input record made an `Article`, per format: DeepMind `.story` text, CNN/DM JSONL rows,
and the published URL lists.

JSONL fields are typed: `id`, `url` and `source` strings, `article` a string or `article_lines` a
list of strings, `highlights` a string or a list of strings; a null field counts as absent. An
article's id is the sha1 of its URL (`url_to_id`) when the row has none; its source ("CNN",
"Daily mail") comes from the URL, else from the path of a DeepMind layout.
"""
from __future__ import annotations

import hashlib
import re
from pathlib import PurePosixPath
from typing import Any, Iterator

from apache_beam.io.filesystems import FileSystems

from transforms.core.io.text import Decoded, Undecodable, clean_string, decode_text
from transforms.record.article import Article

_LINE_STRIP = " \t\r\n"


# Sentence ends inside a flattened article: . ! ? (optionally closed by a quote) before a space.
_FLAT_SENTENCE_END = re.compile(r"([.!?]['\"’”]?)\s+")
# See et al.'s preprocessing (the Hugging Face `cnn_dailymail` rows) ends every line that lacks a
# final mark with " ." and joins the lines with spaces ("By . Daily Mail Reporter . PUBLISHED: ."),
# and ends each highlight so; the release has the lines joined by spaces and no such marks.
_SEE_LINE_MARK = re.compile(r"(?<=\S) \.(?=\s|$)")


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


class Refused(Exception):
    """A JSON string the control-character policy refuses (carries the `Undecodable`)."""

    def __init__(self, refused: Undecodable):
        super().__init__(refused.detail)
        self.refused = refused


def clean_json_value(value: Any, controls: str = "remove") -> tuple[Any, int]:
    """Every string of a parsed JSON value (keys too) through `clean_string`; the value and the
    number of control characters removed. Raises `Refused` under the `reject` policy."""
    if isinstance(value, str):
        cleaned = clean_string(value, controls)  # type: ignore[arg-type]
        if isinstance(cleaned, Undecodable):
            raise Refused(cleaned)
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
