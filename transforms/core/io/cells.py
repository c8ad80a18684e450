"""Cell text that spreadsheets never evaluate (CSV and formula injection).

A crowd worker's answer `=HYPERLINK("http://...","click")` in a CSV that Excel or LibreOffice
opens becomes a live formula. Every CSV written for people to open (annotator, disagreement and
adjudication sheets, MTurk batch files, csdata's crowd CSVs) passes its cells through
`csv_cell`: text that starts with `=`, `+`, `-`, `@`, a tab or a carriage return gets a leading
apostrophe, which spreadsheets show as text (OWASP's "CSV Injection" advice). Text that already
starts with an apostrophe before such a character gets one more, so that `read_csv_cell`, which
every reader of those files applies, returns exactly what was written: a round trip never
changes an answer. `.xlsx` workbooks need no escaping: `xlsx_text` makes a cell an explicit
string cell instead.
"""
from __future__ import annotations

from typing import Any

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
ESCAPE = "'"


def _needs_escape(text: str) -> bool:
    return text.lstrip(ESCAPE).startswith(FORMULA_STARTS)


def csv_cell(value: Any) -> Any:
    """`value` as a CSV cell no spreadsheet evaluates (non-text values pass unchanged)."""
    if isinstance(value, str) and _needs_escape(value):
        return ESCAPE + value
    return value


def read_csv_cell(text: str) -> str:
    """Undo `csv_cell`: drop the one apostrophe it added (and nothing else)."""
    if text.startswith(ESCAPE) and _needs_escape(text[1:]):
        return text[1:]
    return text


def csv_row(values: Any) -> list[Any]:
    """`csv_cell` of every value of a row (a sequence) or of a mapping's values, as a list."""
    return [csv_cell(v) for v in (values.values() if isinstance(values, dict) else values)]


def escaped_dict(row: Any) -> dict[str, Any]:
    """A mapping row with every value passed through `csv_cell`."""
    return {k: csv_cell(v) for k, v in row.items()}


def unescaped_dict(row: Any) -> dict[str, Any]:
    """A row read by `csv.DictReader` with every text cell passed through `read_csv_cell`."""
    return {k: read_csv_cell(v) if isinstance(v, str) else v for k, v in row.items()}


def xlsx_text(cell: Any) -> None:
    """Make an openpyxl cell holding text an explicit string cell (never a formula)."""
    if isinstance(cell.value, str):
        cell.data_type = "s"
