"""Tokenisation shared by the filters, the passage split and the statistics."""
from __future__ import annotations

import re
from typing import Collection, Sequence

# Words, with inner apostrophes/hyphens ("don't", "well-known").
_WORD_TOKEN = re.compile(r"\w+(?:['’\-]\w+)*", re.UNICODE)
# Words or single punctuation marks: close to spaCy's and the PTB tokenisation for counting, and
# dependency-free. Its other tokens are single marks, never a word's start, so both patterns find
# the same words in the same places.
_TOKEN = re.compile(_WORD_TOKEN.pattern + r"|[^\w\s]", re.UNICODE)


def tokenize(text: str) -> list[str]:
    """Split text into word and punctuation tokens."""
    return _TOKEN.findall(text)


def count_tokens(text: str) -> int:
    """Number of tokens in `text` (see `tokenize`)."""
    return sum(1 for _ in _TOKEN.finditer(text))


def count_whitespace_tokens(text: str) -> int:
    """Number of whitespace-separated tokens in `text` (punctuation stays on its word).

    ReCoRD's counts are of these: every published passage body has at least 100 of them, and
    Table 1's tokens per passage and per query match them, not word-and-punctuation tokens.
    """
    return len(text.split())


def _lowered_words(text: str, stopwords: Collection[str]) -> list[str]:
    """The lowercased word tokens of `text` (`tokenize`'s, punctuation skipped) not in `stopwords`."""
    return [w for w in map(str.lower, _WORD_TOKEN.findall(text)) if w not in stopwords]


def word_ngrams(text: str, n: int, gaps: Sequence[tuple[int, int]] = (),
                stopwords: Collection[str] = ()) -> set[tuple[str, ...]]:
    """Lowercased n-grams of the words of `text`; punctuation and `stopwords` skipped.

    `gaps` are character spans (entity mentions) left out; an n-gram never spans a gap.
    Punctuation is skipped because ReCoRD's released queries share punctuated n-grams such as
    ", followed by" with their passages: counting them would drop published queries.
    """
    grams: set[tuple[str, ...]] = set()
    start = 0
    for gap_start, gap_end in sorted(gaps) + [(len(text), len(text))]:
        words = _lowered_words(text[start:gap_start], stopwords)
        grams.update(zip(*(words[i:] for i in range(n))))
        start = max(start, gap_end)
    return grams
