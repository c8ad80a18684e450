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

Files are found and read as `transforms.core.io.files.ReadRawRecords` does: the `--input` patterns
are matched inside the pipeline and every worker reads the files dealt to it, cut into raw
records by `transforms.record.raw_records`; a record becomes an article by its format's parser
(`transforms.record.formats`).

Decoding follows the one policy of `transforms.core.io.text`: UTF-8 with a byte-order mark
stripped, else (under `lenient`, the default) cp1252 or latin-1; the encoding is kept on the
article (`Article.encoding`, the `encoding` column of `passages`) so users can filter on it. NUL
and the other control characters are removed from the raw text and from every JSON string after
`json.loads` (`input.control_chars: remove`, counted by the Beam counter
`read.control_chars_removed`; records not read as plain UTF-8 by `read.encoding.<encoding>`), or
make the record a `control_characters` reject.
"""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import PurePosixPath
from typing import Any, Callable, Collection, Iterator, Optional, Union

import apache_beam as beam
from apache_beam.metrics import Metrics

from data_specs.models import RecordInputSection
from transforms.core.accounting import NAMESPACE, Reject
from transforms.core.io.files import FolderFiles, NumberedRange, ReadRawRecords, read_range
from transforms.core.io.text import Decoded, Undecodable, decode_text
from transforms.core.progress.steps import ProgressLine
from transforms.core.stages import Stage
from transforms.record.article import Article, article_document
from transforms.record.formats import (
    FieldTypeError,
    Refused,
    clean_json_value,
    parse_json_row,
    parse_story,
    source_from_path,
)
from transforms.record.raw_records import (
    SUPPORTED_SUFFIXES,
    RawRecord,
    is_line_file,
    iter_raw_records,
    reject_fields,
)

STAGE = "read"


# Reject reasons of parsing (those of damage found while cutting files are in `raw_records`).
MALFORMED_JSON = "malformed_json"
BAD_FIELD_TYPE = "bad_field_type"
EMPTY_ARTICLE = "empty_article"
TEXT_TOO_LONG = "text_too_long"


# spaCy's default `nlp.max_length`; the shipped spec's `input.max_chars`.
DEFAULT_MAX_CHARS = 1_000_000


def input_section(value: Union[str, RecordInputSection, None] = "") -> RecordInputSection:
    """The spec's `input` section; a plain string is a `default_source` with the shipped defaults
    (lenient decoding, control characters removed, `max_chars` = spaCy's limit)."""
    if isinstance(value, RecordInputSection):
        return value
    return RecordInputSection(default_source=value or "", encoding="lenient", control_chars="remove",
                              max_chars=DEFAULT_MAX_CHARS)


def _count_decoding(decoded: Decoded, removed: int = 0) -> None:
    if decoded.encoding != "utf-8":
        Metrics.counter(NAMESPACE, f"{STAGE}.encoding.{decoded.encoding}").inc()
    if decoded.control_chars + removed:
        Metrics.counter(NAMESPACE, f"{STAGE}.control_chars_removed").inc(decoded.control_chars + removed)


def parse_raw_record(record: RawRecord, default_source: Union[str, RecordInputSection] = "",
                     count: bool = True) -> Iterator[Union[Article, Reject]]:
    """Turn a raw record into an Article, or a Reject naming why it could not be read.

    `default_source` is the spec's `input` section (or only its `default_source`, with the
    shipped defaults for the rest). `count=False` parses a record read again without bumping
    the decoding counters a second time.
    """
    section = input_section(default_source)
    kind, origin, payload = record
    if kind == "reject":
        reason, detail = reject_fields(payload)
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
        except Refused as refused:
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
    if count:
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
    to (`transforms.core.io.files.ReadRawRecords`); a local directory is read as the pattern
    `DIR/**`, its files with `SUPPORTED_SUFFIXES` only; an uncompressed JSONL file over 64 MiB
    is read in byte ranges by several workers. `section` is the spec's `input` section (a plain
    string: its `default_source`, the rest as shipped). Returns `(articles, rejects, tallies)`
    like `Stage`. With `progress`, the run's line counts the files matched and read.

    With `entry`, each article becomes `entry(read unit, article)` where it was read, and the
    records are not rebalanced: for a graph whose groupings carry entries, not texts, and which
    reads the articles it keeps again from their units (`read_articles_again`).
    """

    def __init__(self, patterns: list[str], section: Union[str, RecordInputSection] = "",
                 progress: Optional[ProgressLine] = None,
                 entry: Optional[Callable[[NumberedRange, Article], Any]] = None):
        super().__init__()
        self._patterns = list(patterns)
        self._section = input_section(section)
        self._progress = progress
        self._entry = entry

    def expand(self, pbegin):
        section, entry = self._section, self._entry
        raw = pbegin | "ReadFiles" >> ReadRawRecords(
            self._patterns, iter_raw_records, folder_files=FolderFiles(SUPPORTED_SUFFIXES),
            line_files=is_line_file, progress=self._progress, keyed=entry is not None)
        if entry is None:
            return raw | "Parse" >> Stage(STAGE, lambda r: parse_raw_record(r, section))
        return raw | "Parse" >> Stage(STAGE, lambda keyed: (
            entry(keyed[0], outcome) if isinstance(outcome, Article) else outcome
            for outcome in parse_raw_record(keyed[1], section)))


def read_articles_again(unit: NumberedRange, origins: Collection[str],
                        section: Union[str, RecordInputSection] = "") -> Iterator[Article]:
    """The articles of one read unit whose origins are `origins`, read and parsed again as
    `ReadArticles` read them (same spec section) without counting the reading twice; the other
    records of the unit are not parsed."""
    section = input_section(section)
    for record in read_range(unit, iter_raw_records, count=False):
        if record[0] == "reject" or record[1] not in origins:
            continue
        for outcome in parse_raw_record(record, section, count=False):
            if isinstance(outcome, Article):
                yield outcome
