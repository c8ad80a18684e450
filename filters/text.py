"""Tokenisation shared by the filters, the passage split and the statistics."""
from __future__ import annotations

import re

# Words (with inner apostrophes/hyphens, e.g. "don't", "well-known") or single punctuation marks:
# close to spaCy's and the PTB tokenisation for counting, and dependency-free.
_TOKEN = re.compile(r"\w+(?:['’\-]\w+)*|[^\w\s]", re.UNICODE)


def tokenize(text: str) -> list[str]:
    """Split text into word and punctuation tokens."""
    return _TOKEN.findall(text)


def count_tokens(text: str) -> int:
    """Number of tokens in `text` (see `tokenize`)."""
    return sum(1 for _ in _TOKEN.finditer(text))


def ngrams(tokens: list[str], n: int) -> set[tuple[str, ...]]:
    """The set of lowercased n-grams of a token list."""
    lowered = [t.lower() for t in tokens]
    return {tuple(lowered[i : i + n]) for i in range(len(lowered) - n + 1)}
