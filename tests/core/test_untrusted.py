"""Reading files other people made within the spec's limits (transforms/core/io/untrusted.py).

Expected rows, line numbers and reasons are read off the hand-written files below.
"""
from __future__ import annotations

import io
import tracemalloc

import pytest

from data_specs.models import LimitsSection
from transforms.core.errors import UserError
from transforms.core.io.untrusted import (
    FIELD_TOO_LARGE,
    MALFORMED_RECORD,
    NOT_UTF8,
    RECORD_TOO_LARGE,
    check_json_record,
    oversized_string,
    parse_json,
    read_csv_rows,
    read_json_file,
)

SMALL = LimitsSection(max_field_bytes=8, max_record_bytes=40, max_file_bytes=200)
SHIPPED = LimitsSection(max_field_bytes=65536, max_record_bytes=1048576, max_file_bytes=1073741824)


def rows_of(data: bytes, limits: LimitsSection = SMALL):
    table = read_csv_rows(io.BytesIO(data), limits)
    return table.header, table.rows, [(s.reason, s.where) for s in table.skipped]


def test_a_300_kb_answer_is_a_reject_and_the_rows_after_it_are_read():
    data = ("answer,worker\r\nsalad,W1\r\n" + "x" * 300_000 + ",W2\r\n" + '"two\r\nlines",W3\r\nchips,W4\r\n').encode()
    header, rows, skipped = rows_of(data, SHIPPED)
    assert header == ["answer", "worker"]
    assert skipped == [(FIELD_TOO_LARGE, "line 3")]
    assert rows == [(2, {"answer": "salad", "worker": "W1"}), (4, {"answer": "two\r\nlines", "worker": "W3"}),
                    (6, {"answer": "chips", "worker": "W4"})]


def test_a_record_over_the_limit_is_skipped_even_across_quoted_lines():
    # line 3 opens a quoted cell that runs to line 5 (60 bytes in all, over 40)
    data = b'a,b\nok,1\n"' + b"y" * 20 + b"\n" + b"y" * 20 + b'\nend",2\nlast,3\n'
    header, rows, skipped = rows_of(data)
    assert skipped == [(RECORD_TOO_LARGE, "line 3")]
    assert rows == [(2, {"a": "ok", "b": "1"}), (6, {"a": "last", "b": "3"})]


def test_damaged_rows_are_named_and_short_rows_padded():
    data = "\ufeffa,b\nok,1\nbad\xff,2\nx,y,z\nshort\n".encode("utf-8").replace("\xff".encode(), b"\xff")
    header, rows, skipped = rows_of(data, SHIPPED)
    assert header == ["a", "b"]                                       # the BOM is not in the name
    assert skipped == [(NOT_UTF8, "line 3"), (MALFORMED_RECORD, "line 4")]
    assert rows == [(2, {"a": "ok", "b": "1"}), (5, {"a": "short", "b": ""})]


def test_an_unreadable_header_is_one_error():
    with pytest.raises(UserError, match="empty file"):
        rows_of(b"")
    with pytest.raises(UserError, match="header row is over 40 bytes"):
        rows_of(b"h" * 100 + b"\nrow\n")
    with pytest.raises(UserError, match="not UTF-8"):
        rows_of(b"\xff\xfeh\x00\n")


def test_memory_stays_within_the_record_limit_for_a_huge_row():
    limits = LimitsSection(max_field_bytes=1024, max_record_bytes=65536, max_file_bytes=1 << 30)
    data = b"a\n" + b"z" * (32 << 20) + b"\nafter\n"            # one 32 MB row
    tracemalloc.start()
    try:
        table = read_csv_rows(io.BytesIO(data), limits)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert [(s.reason, s.where) for s in table.skipped] == [(RECORD_TOO_LARGE, "line 2")]
    assert table.rows == [(3, {"a": "after"})]
    assert peak < 4 << 20                                            # not the row's 32 MB


def test_json_nested_too_deeply_is_not_json():
    with pytest.raises(ValueError, match="nested too deeply"):
        parse_json("[" * 100_000 + "]" * 100_000)
    assert parse_json('{"a": [1, "b"]}') == {"a": [1, "b"]}


def test_oversized_strings_are_found_by_path_keys_included():
    assert oversized_string({"a": ["short", "x" * 9]}, 8) == "a[1]"
    assert oversized_string({"k" * 9: 1}, 8) == "(the value) (a key)"
    assert oversized_string({"a": {"b": "é" * 5}}, 8) == "a.b"          # 10 UTF-8 bytes
    assert oversized_string({"a": "é" * 4}, 8) is None
    assert check_json_record({"answer": "x" * 9}, SMALL) == (FIELD_TOO_LARGE, "answer: over 8 bytes")
    assert check_json_record({"a": ["1234567"] * 5}, SMALL)[0] == RECORD_TOO_LARGE


def test_a_json_file_over_the_file_limit_or_broken_is_one_error(tmp_path):
    big = tmp_path / "big.json"
    big.write_text("[" + ",".join(["1"] * 150) + "]", encoding="utf-8")
    with pytest.raises(UserError, match=r"big.json: 301 bytes, over limits.max_file_bytes \(200\)"):
        read_json_file(big, SMALL, "Label Studio JSON export")
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 50_000, encoding="utf-8")
    with pytest.raises(UserError, match="deep.json: not a Label Studio JSON export"):
        read_json_file(deep, None, "Label Studio JSON export")
    bom = tmp_path / "bom.json"
    bom.write_bytes(b"\xef\xbb\xbf[1]")
    assert read_json_file(bom, SMALL, "export") == [1]
