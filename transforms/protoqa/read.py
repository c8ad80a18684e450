"""ProtoQA's input: protoqa-data JSONL lines read and checked (the `read` stage of
`csdata protoqa questions`, `transforms.protoqa.questions`), and the omitted and flagged lists.

Reading (`ReadQuestionLines` gives `(path:line, bytes)`; text lines from `ReadFromText` work
too): each line is decoded by the one policy of `transforms.core.io.text` (`questions.encoding`:
UTF-8 with a BOM stripped, else cp1252, else latin-1, Beam counter `read.encoding.<name>` when not
UTF-8 | `strict`; `questions.control_chars`: NUL and the other control characters removed, also
when escaped inside the JSON strings, Beam counter `read.control_chars_removed` | `reject`).
The `read` rejects (record id: the row's `metadata.id` when it has a usable one, else
`line-{sha1 of the line}`; detail: `path:line: why`):

| reason | what |
|---|---|
| `malformed_row` | not JSON, not a JSON object, no `question` / `question.original`, or nothing but control characters |
| `bad_field_type` | a field of the wrong type: `metadata` / `answers` / `answers.raw` not objects, `metadata.id`, `metadata.source`, `question.original`, `question.normalized` not strings, an `answers.raw` count that is not an integer (e.g. `question.normalized must be a string, got int`, `answers.raw['towel'] must be an integer count, got str`) |
| `not_utf8` | `questions.encoding: strict` and the line is not UTF-8 |
| `control_characters` | `questions.control_chars: reject` and the line or one of its strings holds a control character |
| `record_too_large` | the line is over `limits.max_record_bytes` (read in pieces of that size, never whole) |
| `field_too_large` | a string of the row (a key or a value) is over `limits.max_field_bytes` UTF-8 bytes |

Negative counts pass the reader and are `answer_check` / `bad_count` rejects. The omitted and
flagged lists (`read_id_list`) are inputs of the run, not records: a broken line there is a
`UserError` naming the file and line.
"""
from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass
from typing import IO, Iterable, Iterator, Optional, Sequence, Union

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics import Metrics

from data_specs.models import LimitsSection
from filters.protoqa import normalize_question
from transforms.core.accounting import NAMESPACE, Reject
from transforms.core.errors import UserError
from transforms.core.io.files import ReadRawRecords
from transforms.core.io.text import ControlPolicy, Decoded, Policy, Undecodable, clean_string, decode_text
from transforms.core.io.untrusted import (
    FIELD_TOO_LARGE,
    RECORD_TOO_LARGE,
    oversized_string,
    parse_json,
    raw_records,
)
from transforms.core.progress.steps import ProgressLine

READ = "read"
MALFORMED_ROW = "malformed_row"
BAD_FIELD_TYPE = "bad_field_type"

QuestionLine = Union[str, bytes, tuple]     # a line as text (ReadFromText), bytes, or (origin, bytes)


@dataclass(frozen=True)
class Oversized:
    """A line over the record limit, in place of its bytes: only its size is kept."""

    size: int


def iter_question_lines(path: str, handle: IO[bytes], limit: Optional[int] = None, first_line: int = 1
                        ) -> Iterator[tuple[str, Union[bytes, Oversized]]]:
    """`(path:line, raw bytes)` of every non-blank line of a JSONL file (undecoded); with a
    `limit`, a longer line is `Oversized` and costs at most `limit` bytes of memory.
    `first_line` is the number of the handle's first line (a range of the file)."""
    for number, line, size in raw_records(handle, limit, quoted=False):
        number += first_line - 1
        if line is None:
            yield f"{path}:{number}", Oversized(size)
        elif line.strip():
            yield f"{path}:{number}", line


def _every_file(path: str) -> bool:
    return True


class ReadQuestionLines(beam.PTransform):
    """The lines of protoqa-data JSONL files (patterns on any Beam filesystem) as
    `(path:line, bytes)`, for `CurateQuestions` to decode by the spec's policy. The patterns are
    matched inside the pipeline, each file is read by the worker it is dealt to, and a file over
    64 MiB in byte ranges by several workers (`transforms.core.io.files.ReadRawRecords`)."""

    def __init__(self, patterns: Sequence[str], limits: Optional[LimitsSection] = None,
                 progress: Optional[ProgressLine] = None):
        super().__init__()
        self._patterns = list(patterns)
        self._limit = limits.max_record_bytes if limits else None
        self._progress = progress

    def expand(self, pbegin):
        return pbegin | "ReadLines" >> ReadRawRecords(
            self._patterns, functools.partial(iter_question_lines, limit=self._limit),
            line_files=_every_file, progress=self._progress)


def _line_parts(line: QuestionLine) -> tuple[str, Union[str, bytes]]:
    if isinstance(line, tuple):
        return str(line[0]), line[1]
    return "", line


def question_units(line: QuestionLine) -> int:
    """1 for a line that holds anything but whitespace (blank lines are not records)."""
    payload = _line_parts(line)[1]
    return 1 if isinstance(payload, Oversized) or payload.strip() else 0


class _BadRow(ValueError):
    def __init__(self, reason: str, detail: str, record_id: str = ""):
        super().__init__(detail)
        self.reason, self.record_id = reason, record_id


def _type_name(value: object) -> str:
    return {"NoneType": "null", "dict": "object"}.get(type(value).__name__, type(value).__name__)


def _expect(value: object, kind: type, name: str, what: str, record_id: str = "") -> None:
    if not isinstance(value, kind) or isinstance(value, bool):
        raise _BadRow(BAD_FIELD_TYPE, f"{name} must be {what}, got {_type_name(value)}", record_id)


def _optional(mapping: dict, key: str, kind: type, name: str, what: str, record_id: str = ""):
    value = mapping.get(key)
    if value is not None:
        _expect(value, kind, name, what, record_id)
    return value


def _clean(value: str, name: str, controls: ControlPolicy, record_id: str) -> str:
    cleaned = clean_string(value, controls)
    if isinstance(cleaned, Undecodable):
        raise _BadRow(cleaned.reason, f"{name}: {cleaned.detail}", record_id)
    if cleaned.control_chars:
        _count_controls(cleaned.control_chars)
    return cleaned.text


def _count_controls(n: int) -> None:
    Metrics.counter(NAMESPACE, f"{READ}.control_chars_removed").inc(n)


def _decode_line(payload: Union[str, bytes], policy: Policy, controls: ControlPolicy) -> str:
    if isinstance(payload, str):
        decoded = clean_string(payload, controls)
    else:
        decoded = decode_text(payload, policy, controls)
        if isinstance(decoded, Decoded) and decoded.encoding != "utf-8":
            Metrics.counter(NAMESPACE, f"{READ}.encoding.{decoded.encoding}").inc()
    if isinstance(decoded, Undecodable):
        raise _BadRow(decoded.reason, decoded.detail)
    if decoded.control_chars:
        _count_controls(decoded.control_chars)
    return decoded.text


def _row_fields(row: object, digest: str, controls: ControlPolicy) -> dict:
    """The checked, cleaned fields of one protoqa-data row (see the module doc)."""
    if not isinstance(row, dict):
        raise _BadRow(MALFORMED_ROW, f"a line must be a JSON object, got {_type_name(row)}")
    meta = _optional(row, "metadata", dict, "metadata", "an object") or {}
    raw_id = _optional(meta, "id", str, "metadata.id", "a string")
    record_id = raw_id or f"line-{digest}"
    source = _optional(meta, "source", str, "metadata.source", "a string", record_id)
    if "question" not in row or row["question"] is None:
        raise _BadRow(MALFORMED_ROW, "row has no question", record_id)
    question = row["question"]
    if isinstance(question, dict):
        if question.get("original") is None:
            raise _BadRow(MALFORMED_ROW, "row has no question.original", record_id)
        original = question["original"]
        _expect(original, str, "question.original", "a string", record_id)
        _optional(question, "normalized", str, "question.normalized", "a string", record_id)
    else:
        _expect(question, str, "question", "an object or a string", record_id)
        original = question
    answers = _optional(row, "answers", dict, "answers", "an object", record_id) or {}
    raw = _optional(answers, "raw", dict, "answers.raw", "an object of answer counts", record_id) or {}
    for answer, count in raw.items():
        _expect(count, int, f"answers.raw[{answer!r}]", "an integer count", record_id)
    cleaned_id = _clean(raw_id, "metadata.id", controls, record_id) if raw_id else ""
    return {
        "question_id": cleaned_id or record_id,
        "source": _clean(source, "metadata.source", controls, record_id) if source else "",
        "original": _clean(original, "question.original", controls, record_id),
        "answers": [(_clean(a, "answers.raw", controls, record_id), c) for a, c in raw.items()],
    }


def parse_question(line: QuestionLine, default_source: str = "", encoding: Policy = "lenient",
                   controls: ControlPolicy = "remove", limits: Optional[LimitsSection] = None
                   ) -> Iterable[Union[dict, Reject]]:
    """One protoqa-data JSONL line -> a question dict (answers: [(string, count)] in file order).

    `line` is text, raw bytes (decoded by `encoding` / `controls`, transforms.core.io.text) or
    `(origin, bytes)` as `ReadQuestionLines` gives. Scraped rows have one string per cluster and
    `raw == {string: count}`; rows with clusters take the answers from `raw` all the same, so
    any protoqa-data file can be curated. A damaged line is one `Reject` (module doc).
    """
    origin, payload = _line_parts(line)
    where = f"{origin}: " if origin else ""
    if isinstance(payload, Oversized):
        record_id = "line-" + hashlib.sha1(origin.encode("utf-8")).hexdigest()[:12]
        return [Reject(READ, RECORD_TOO_LARGE, record_id, f"{where}{payload.size} bytes, over "
                       f"limits.max_record_bytes ({limits.max_record_bytes if limits else '?'})")]
    if not payload.strip():
        return []
    if limits and len(payload) > limits.max_record_bytes:
        record_id = "line-" + hashlib.sha1(payload[:4096].encode("utf-8") if isinstance(payload, str)
                                           else payload[:4096]).hexdigest()[:12]
        return [Reject(READ, RECORD_TOO_LARGE, record_id, f"{where}{len(payload)} characters or bytes, over "
                       f"limits.max_record_bytes ({limits.max_record_bytes})")]
    raw_bytes = payload.encode("utf-8") if isinstance(payload, str) else payload
    digest = hashlib.sha1(raw_bytes.strip()).hexdigest()[:12]
    try:
        text = _decode_line(payload, encoding, controls).strip()
        if not text:
            raise _BadRow(MALFORMED_ROW, "nothing but control characters")
        digest = hashlib.sha1(text.encode("utf-8")).hexdigest()[:12]     # of the text: an encoding never changes an id
        try:
            row = parse_json(text)
        except ValueError as error:
            raise _BadRow(MALFORMED_ROW, f"not JSON: {error}") from None
        oversized = oversized_string(row, limits.max_field_bytes) if limits else None
        if oversized:
            raise _BadRow(FIELD_TOO_LARGE, f"{oversized}: over limits.max_field_bytes "
                                           f"({limits.max_field_bytes if limits else '?'})")
        fields = _row_fields(row, digest, controls)
    except _BadRow as error:
        return [Reject(READ, error.reason, error.record_id or f"line-{digest}", f"{where}{error}"[:300])]
    return [{
        "question_id": fields["question_id"],
        "source": fields["source"] or default_source,
        "original": fields["original"],
        "normalized": normalize_question(fields["original"]),
        "answers": fields["answers"],
    }]


def read_id_list(path: str) -> tuple[list[str], list[str]]:
    """(ids, normalised questions) of an omitted / flagged list.

    A protoqa-data JSONL file (omitted.jsonl) gives each row's id and normalised question; any
    other file is read as one id per line (`#` comments allowed). The file is decoded by the
    default policy of transforms.core.io.text; a line that is not JSON (or not a protoqa-data row)
    in a JSONL list is a `UserError` naming the file and line.
    """
    with FileSystems.open(path) as handle:
        decoded = decode_text(handle.read())
    assert isinstance(decoded, Decoded)     # the lenient policy always decodes
    ids, questions = [], []
    for number, line in enumerate(decoded.text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("{"):
            try:
                row = json.loads(line)
                meta = row.get("metadata") or {}
                if meta.get("id"):
                    ids.append(str(meta["id"]))
                question = row.get("question")
                if isinstance(question, dict) and question.get("original"):
                    questions.append(normalize_question(question["original"]))
            except (ValueError, TypeError, AttributeError) as error:
                raise UserError(f"{path}:{number}: not a protoqa-data row ({error})") from None
        else:
            ids.append(line)
    return ids, questions
