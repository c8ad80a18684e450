"""Reading files other people made, within the spec's `limits` (plain Python, no Beam).

Crowd results (MTurk CSV, Label Studio JSON), annotator sheets and protoqa-data JSONL come from
strangers' tools and hands. Their readers go through this module, so that a damaged part of a
file is a named reject and the rest is read:

| reason             | what                                                                  |
|--------------------|-----------------------------------------------------------------------|
| `record_too_large` | a CSV row, JSONL line or JSON task over `limits.max_record_bytes`     |
| `field_too_large`  | a CSV cell or JSON string over `limits.max_field_bytes` (UTF-8 bytes) |
| `not_utf8`         | a row or line that is not UTF-8                                       |
| `malformed_record` | a row the CSV parser refuses or with more cells than the header (fewer are padded with empty cells), a line that is not JSON |

CSV rows are cut from the bytes before any parser sees them (a row ends at a line end outside
double quotes), so a row of any size costs at most `max_record_bytes` of memory and the rows
after it are read as usual. A file read whole (a JSON export, a workbook) is refused in one
`UserError` past `limits.max_file_bytes`; JSON nested too deeply for the parser is a record
that is not JSON, never a `RecursionError`.
"""
from __future__ import annotations

import csv
import io
import json
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Iterator, Optional, Sequence, Union

from transforms.core.errors import UserError

if TYPE_CHECKING:      # `protoqa score` and `record evaluate` start without pydantic
    from data_specs.models import LimitsSection

PathLike = Union[str, Path]

RECORD_TOO_LARGE = "record_too_large"
FIELD_TOO_LARGE = "field_too_large"
NOT_UTF8 = "not_utf8"
MALFORMED_RECORD = "malformed_record"

_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True)
class Skipped:
    """A part of a file left out: the reason (one of the module doc's table), where it starts (`line N` or a
    task id) and what was wrong."""

    reason: str
    where: str
    detail: str = ""

    def record_id(self, source: PathLike) -> str:
        """The reject's record id: `FILE:line N` or `FILE:task ID` for a part of the file named
        by `source`, else `where` as it is (an assignment id)."""
        return f"{Path(source).name}:{self.where}" if self.where.startswith(("line ", "task ")) else self.where


@dataclass(frozen=True)
class CsvRows:
    """A CSV file read within limits: its header, `(line, row)` pairs in file order (cells keyed
    by the header) and the rows left out."""

    header: list[str]
    rows: list[tuple[int, dict[str, str]]]
    skipped: list[Skipped]


# ---------------------------------------------------------------------------------------- CSV

def raw_records(handle: IO[bytes], limit: Optional[int], quoted: bool = True
                ) -> Iterator[tuple[int, Optional[bytes], int]]:
    """`(first line number, bytes, size)` of each record of a text file; the bytes are `None`
    for a record over `limit` bytes (`None`: no limit), which costs at most `limit` of memory.

    A record ends at a line end; with `quoted` (CSV), only at one with an even number of double
    quotes before it in the record, which is where Excel-dialect CSV ends one.
    """
    line = 1
    while True:
        start, parts, size, quotes = line, [], 0, 0
        while True:
            piece = handle.readline(limit + 1) if limit is not None else handle.readline()
            if not piece:
                break
            size += len(piece)
            if quoted:
                quotes += piece.count(b'"')
            if limit is None or size <= limit:
                parts.append(piece)
            else:
                parts = []
            if piece.endswith(b"\n"):
                line += 1
                if quotes % 2 == 0:
                    break
        if size == 0:
            return
        yield start, (b"".join(parts) if limit is None or size <= limit else None), size


@contextmanager
def csv_field_limit(limit: int) -> Iterator[None]:
    """The csv module's cell limit (process-wide) set to `limit` for the block, then restored."""
    before = csv.field_size_limit(limit)
    try:
        yield
    finally:
        csv.field_size_limit(before)


def _parse(text: str) -> list[list[str]]:
    return [row for row in csv.reader(io.StringIO(text, newline="")) if row]


def read_csv_rows(source: Union[PathLike, IO[bytes]], limits: LimitsSection) -> CsvRows:
    """The rows of a UTF-8 CSV file or binary stream (a BOM stripped) within `limits`; an
    unreadable header is a `UserError`. Blank lines are skipped as the csv module skips them."""
    if isinstance(source, (str, Path)):
        with Path(source).open("rb") as handle:
            return _read_csv_rows(handle, limits, str(source))
    return _read_csv_rows(source, limits, getattr(source, "name", "the CSV file"))


def _read_csv_rows(handle: IO[bytes], limits: LimitsSection, path: str) -> CsvRows:
    skipped: list[Skipped] = []
    rows: list[tuple[int, dict[str, str]]] = []
    header: Optional[list[str]] = None
    # A record is at most max_record_bytes, so no cell of it can pass the parser's own limit.
    with csv_field_limit(max(csv.field_size_limit(), limits.max_record_bytes)):
        for number, raw, _ in raw_records(handle, limits.max_record_bytes):
            where = f"line {number}"
            if header is None and raw is not None and raw.startswith(_BOM):
                raw = raw[len(_BOM):]
            if raw is None:
                if header is None:
                    raise UserError(f"{path}: the header row is over {limits.max_record_bytes} bytes "
                                    f"(limits.max_record_bytes): not a CSV file for this command")
                skipped.append(Skipped(RECORD_TOO_LARGE, where, f"over {limits.max_record_bytes} bytes"))
                continue
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as error:
                if header is None:
                    raise UserError(f"{path}: not UTF-8 (byte {error.start} of the header); save "
                                    f"it as UTF-8 CSV") from None
                skipped.append(Skipped(NOT_UTF8, where, f"byte {error.start} of the row"))
                continue
            try:
                parsed = _parse(text)
            except csv.Error as error:
                if header is None:
                    raise UserError(f"{path}: the header row is not CSV ({error})") from None
                skipped.append(Skipped(MALFORMED_RECORD, where, str(error)))
                continue
            for row in parsed:
                if header is None:
                    header = row
                    continue
                problem = _row_problem(row, header, limits)
                if problem:
                    skipped.append(Skipped(problem[0], where, problem[1]))
                else:
                    rows.append((number, dict(zip(header, [*row, *[""] * (len(header) - len(row))]))))
    if header is None:
        raise UserError(f"{path}: empty file (no header row)")
    return CsvRows(header, rows, skipped)


def _row_problem(row: Sequence[str], header: Sequence[str], limits: LimitsSection) -> Optional[tuple[str, str]]:
    if len(row) > len(header):     # fewer are padded with "" (as csv.DictReader does)
        return MALFORMED_RECORD, f"{len(row)} cells, the header has {len(header)}"
    for name, value in zip(header, row):
        size = len(value.encode("utf-8", "surrogatepass"))
        if size > limits.max_field_bytes:
            return FIELD_TOO_LARGE, f"{name}: {size} bytes, over {limits.max_field_bytes}"
    return None


# --------------------------------------------------------------------------------------- JSON

def oversized_string(value: Any, limit: int) -> Optional[str]:
    """The path (`a.b[2]`) of the first string in a JSON value (keys included) over `limit`
    UTF-8 bytes, else None; walked without recursion, so any depth is safe."""
    stack: list[tuple[str, Any]] = [("", value)]
    while stack:
        where, item = stack.pop()
        if isinstance(item, str):
            if len(item) * 4 > limit and len(item.encode("utf-8", "surrogatepass")) > limit:
                return where or "(the value)"
        elif isinstance(item, dict):
            for key, inner in item.items():
                name = f"{where}.{key}" if where else str(key)
                if len(str(key).encode("utf-8", "surrogatepass")) > limit:
                    return f"{where or '(the value)'} (a key)"
                stack.append((name[:80], inner))
        elif isinstance(item, list):
            stack.extend((f"{where}[{i}]", inner) for i, inner in enumerate(item))
    return None


def parse_json(text: Union[str, bytes]) -> Any:
    """`json.loads`, with nesting too deep for the parser raising `ValueError` like other
    text that is not JSON (Python's parser would raise `RecursionError`)."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("nested too deeply") from None


def read_json_file(path: PathLike, limits: Optional[LimitsSection], what: str) -> Any:
    """A JSON file read whole (a BOM allowed) as `what`; over `limits.max_file_bytes`, not
    UTF-8 or not JSON is one `UserError` naming the file."""
    source = Path(path)
    size = source.stat().st_size
    if limits is not None and size > limits.max_file_bytes:
        raise UserError(f"{path}: {size} bytes, over limits.max_file_bytes ({limits.max_file_bytes}); "
                        f"raise it with --set limits.max_file_bytes=N if this {what} is genuine")
    data = source.read_bytes()
    if data.startswith(_BOM):
        data = data[len(_BOM):]
    try:
        return parse_json(data.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise UserError(f"{path}: not a {what} (not UTF-8 at byte {error.start})") from None
    except ValueError as error:
        detail = (f"{error.msg} at line {error.lineno}" if isinstance(error, json.JSONDecodeError)
                  else str(error))
        raise UserError(f"{path}: not a {what} ({detail})") from None


def check_json_record(value: Any, limits: LimitsSection, size: Optional[int] = None) -> Optional[tuple[str, str]]:
    """`(reason, detail)` when a parsed JSON record breaks `limits` (its serialised size when
    `size` is not given, then its strings), else None."""
    if size is None:
        try:
            size = len(json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass"))
        except RecursionError:
            return MALFORMED_RECORD, "nested too deeply"
    if size > limits.max_record_bytes:
        return RECORD_TOO_LARGE, f"{size} bytes, over {limits.max_record_bytes}"
    where = oversized_string(value, limits.max_field_bytes)
    if where:
        return FIELD_TOO_LARGE, f"{where}: over {limits.max_field_bytes} bytes"
    return None
