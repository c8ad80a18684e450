"""Hypothesis strategies that damage real-format files, and the bounds a reader must keep.

`mutated_bytes` applies a few byte-level edits to a seed file (flips, inserted syntax tokens,
deletions, duplicated slices, truncation, and large runs: a 200 KB cell, 20,000 open brackets);
`mutated_json` replaces one node of a parsed JSON seed with an arbitrary JSON value;
`mutated_csv` replaces one cell of a CSV seed with arbitrary text. `bounded` runs a reader
under a time limit (SIGALRM) and a data-segment limit (RLIMIT_DATA), so a hang or unbounded
memory fails the example instead of the machine.
"""
from __future__ import annotations

import csv
import io
import json
import re
import resource
import signal
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from hypothesis import strategies as st

TOKENS = [b'"', b",", b"\n", b"\r", b"\r\n", b"{", b"}", b"[", b"]", b":", b"\\", b"\x00", b"\xff",
          b"\xef\xbb\xbf", b"=", b"-1", b"1e999", b"null", b'"a"', b"\t", b"\xc3", "é".encode(), b"\\u0000",
          b"\\ud800", b"NaN", b"99999999999999999999", b"=HYPERLINK(\"http://x\")"]
LARGE = [b"x" * 200_000, b'"' * 70_000, b"[" * 20_000, b'{"a":' * 5_000, b"\n" * 10_000, b"9" * 5_000,
         b"\xff" * 1_000, b",\"\"" * 20_000]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20)
    | st.sampled_from(["", "=1+1", "x" * 70_000, "2024-06-04T11:00:00Z", "Wed Mar 04 10:12:45 PST 2020"]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12)

cell_texts = st.one_of(st.text(max_size=40), st.sampled_from([
    "", "=SUM(A1:A2)", "+1", "-", "@x", "\t", "x" * 200_000, '"', "a\nb", "\r", "\x00", "-1", "1e999",
    "999999999999999999", "nan", "Rejected", "yesterday"]))


@st.composite
def mutated_bytes(draw: Any, seed: bytes) -> bytes:
    """The seed with 1-6 byte-level edits."""
    data = bytearray(seed)
    for _ in range(draw(st.integers(1, 6))):
        op = draw(st.sampled_from(["replace", "insert", "insert", "delete", "duplicate", "truncate", "large"]))
        at = draw(st.integers(0, len(data)))
        if op == "replace" and data:
            data[min(at, len(data) - 1)] = draw(st.integers(0, 255))
        elif op == "insert":
            data[at:at] = draw(st.sampled_from(TOKENS) | st.binary(max_size=8))
        elif op == "delete":
            del data[at:at + draw(st.integers(1, 64))]
        elif op == "duplicate":
            data[at:at] = data[at:at + draw(st.integers(1, 400))]
        elif op == "truncate":
            del data[at:]
        elif op == "large":
            data[at:at] = draw(st.sampled_from(LARGE))
    return bytes(data)


def _paths(value: Any, here: tuple = ()) -> Iterator[tuple]:
    yield here
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from _paths(inner, (*here, key))
    elif isinstance(value, list):
        for i, inner in enumerate(value):
            yield from _paths(inner, (*here, i))


@st.composite
def mutated_json(draw: Any, seed: Any) -> bytes:
    """The JSON seed (parsed) with one node (the root included) replaced by any JSON value."""
    value = json.loads(json.dumps(seed))
    path = draw(st.sampled_from(list(_paths(value))))
    new = draw(json_values)
    if not path:
        return json.dumps(new).encode()
    parent = value
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = new
    return json.dumps(value, ensure_ascii=draw(st.booleans())).encode()


@st.composite
def mutated_jsonl(draw: Any, seed: list) -> bytes:
    """A JSONL seed (parsed rows) with one row's node replaced, written one row per line."""
    index = draw(st.integers(0, len(seed) - 1))
    row = draw(mutated_json(seed[index]))
    lines = [json.dumps(r).encode() for r in seed]
    lines[index] = row
    return b"\n".join(lines) + b"\n"


@st.composite
def mutated_csv(draw: Any, seed: str) -> bytes:
    """A CSV seed with one cell (the header's included) replaced by arbitrary text."""
    rows = list(csv.reader(io.StringIO(seed, newline="")))
    r = draw(st.integers(0, len(rows) - 1))
    c = draw(st.integers(0, max(len(rows[r]) - 1, 0)))
    if rows[r]:
        rows[r][c] = draw(cell_texts)
    out = io.StringIO(newline="")
    csv.writer(out).writerows(rows)
    return out.getvalue().encode("utf-8", "surrogatepass")


def _json_or_none(line: str) -> Any:
    try:
        return json.loads(line)
    except ValueError:
        return None


def damaged(seed_path: Path, kind: str) -> st.SearchStrategy[bytes]:
    """Byte-level damage to the seed file, or damage that keeps its format (`kind` json, jsonl,
    csv), in equal shares."""
    raw = seed_path.read_bytes()
    text = raw.decode("utf-8-sig")
    if kind == "json":
        keeping = mutated_json(json.loads(text))
    elif kind == "jsonl":
        keeping = mutated_jsonl([row for row in map(_json_or_none, text.splitlines()) if row is not None])
    else:
        keeping = mutated_csv(text)
    return st.one_of(mutated_bytes(raw), keeping)


class Overrun(Exception):
    """A reader ran past its time limit."""


def _data_kb() -> int:
    status = Path("/proc/self/status").read_text()
    return int(re.search(r"^VmData:\s+(\d+) kB", status, re.M).group(1))   # type: ignore[union-attr]


@contextmanager
def bounded(seconds: int = 20, extra_bytes: int = 2 << 30) -> Iterator[None]:
    """Run the block with `seconds` of wall time and `extra_bytes` more data segment than now."""
    def expire(signum: int, frame: Any) -> None:
        raise Overrun(f"still running after {seconds} s")

    soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    limit = _data_kb() * 1024 + extra_bytes
    resource.setrlimit(resource.RLIMIT_DATA, (min(limit, hard) if hard != resource.RLIM_INFINITY else limit, hard))
    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
        resource.setrlimit(resource.RLIMIT_DATA, (soft, hard))
