"""The invented corpus's planned passage splits hold under both `passage.tokens` counts.

The counters here are written independently of `filters.text` (the code under test): whitespace
tokens are `str.split()`, words are runs of letters/digits (with inner apostrophes or hyphens)
and every other non-space character is one mark, as tests/data/record/README.md defines them.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from transforms.record.article import TOKEN_COUNTS, shortest_leading_split
from transforms.record.formats import parse_json_row, parse_story

DATA = Path(__file__).parent.parent / "data" / "record"
MIN_TOKENS = 100
_WORD_OR_MARK = re.compile(r"[^\W_]+(?:['’\-][^\W_]+)*|_+|[^\w\s]")


def whitespace_count(text: str) -> int:
    return len(text.split())


def words_count(text: str) -> int:
    return len(_WORD_OR_MARK.findall(text))


COUNTS = {"whitespace": whitespace_count, "words": words_count}
FIGURES = {"whitespace": ("passage_tokens", "total_tokens"),
           "words": ("passage_tokens_words", "total_tokens_words")}


def _expectations() -> list[dict]:
    return json.loads((DATA / "expectations.json").read_text(encoding="utf-8"))["articles"]


def _article(entry: dict):
    if entry["file"].startswith("hf_rows.jsonl"):
        line = int(entry["file"].rsplit(" ", 1)[1])
        rows = (DATA / "hf_rows.jsonl").read_text(encoding="utf-8").splitlines()
        return parse_json_row(json.loads(rows[line - 1]), entry["file"])
    return parse_story((DATA / entry["file"]).read_text(encoding="utf-8"), entry["id"])


ARTICLES = _expectations()
SPLIT = [a for a in ARTICLES if a["passage_paragraphs"] is not None]


def test_the_counters_agree_with_hand_counts():
    text = "“We’re fine,” she said — don't-worry."
    # By hand: “We’re | fine,” | she | said | — | don't-worry.
    assert whitespace_count(text) == 6
    # By hand: “ | We’re | fine | , | ” | she | said | — | don't-worry | .
    assert words_count(text) == 10


@pytest.mark.parametrize("count", sorted(COUNTS))
@pytest.mark.parametrize("entry", SPLIT, ids=[a["key"] for a in SPLIT])
def test_every_planned_split_holds_under_both_counts(entry, count):
    """Earlier paragraphs < 100 tokens, the planned passage >= 100: the same split either way."""
    counter = COUNTS[count]
    sizes = [counter(p) for p in _article(entry).paragraphs]
    n = entry["passage_paragraphs"]
    assert sum(sizes[: n - 1]) < MIN_TOKENS <= sum(sizes[:n])


@pytest.mark.parametrize("count", sorted(COUNTS))
@pytest.mark.parametrize("entry", ARTICLES, ids=[a["key"] for a in ARTICLES])
def test_token_figures_of_expectations(entry, count):
    counter = COUNTS[count]
    passage_key, total_key = FIGURES[count]
    paragraphs = _article(entry).paragraphs
    assert sum(counter(p) for p in paragraphs) == entry[total_key]
    if entry["passage_paragraphs"] is None:
        assert entry[total_key] < MIN_TOKENS and entry[passage_key] is None
    else:
        assert sum(counter(p) for p in paragraphs[: entry["passage_paragraphs"]]) == entry[passage_key]


@pytest.mark.parametrize("count", sorted(TOKEN_COUNTS))
@pytest.mark.parametrize("entry", ARTICLES, ids=[a["key"] for a in ARTICLES])
def test_the_passage_rule_takes_the_planned_paragraphs(entry, count):
    split = shortest_leading_split(_article(entry), MIN_TOKENS, TOKEN_COUNTS[count])
    got = None if split is None else split.passage_paragraphs
    assert got == entry["passage_paragraphs"]
