"""Cutting a story into Cosmos QA paragraphs (paper Appendix A) at its least coherent gaps.

A story is a list of sentences with whitespace word counts `w[i]` and, between sentence `i` and
`i + 1`, a coherence score `g[i]` (higher = the two sentences belong together). Sentences longer
than `max_words` cannot sit in any paragraph: they are rejected (or split beforehand, see
`split_long_sentence`) and cut the story into independent runs.

Each run is partitioned into consecutive blocks; a block is a *paragraph* (`min_words` ..
`max_words` words) or a single *leftover* sentence. A partition is scored lexicographically:

1. the words left over (fewest first: as much of the story as possible ends up in paragraphs);
2. the cut cost, the sum over block boundaries of `g[k] - baseline`, where the baseline is the
   median gap score of the story (or a fixed number from the spec). Cuts at gaps less coherent
   than the baseline lower the cost, cuts through coherent stretches raise it.

`segment_run` finds the optimal partition by dynamic programming over cut positions
(`best[j]` = best cost of the first `j` sentences), in O(n * L) for L sentences per paragraph.
`greedy_segment` is a left-to-right scan with no lookahead, for comparison and tests.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Iterator, Optional, Sequence, Union

from filters import cosmos as cosmos_filters
from filters.text import count_tokens
from transforms.core.accounting import Reject
from transforms.cosmos.read import Story

STAGE = "segment"
_EPS = 1e-12


@dataclass(frozen=True)
class SentencedStory:
    """A story cut into sentences (whitespace-normalised, none empty)."""

    story: Story
    sentences: tuple[str, ...]


@dataclass(frozen=True)
class ScoredStory:
    """A story's sentences and the coherence of each gap (`len(gaps) == len(sentences) - 1`)."""

    story: Story
    sentences: tuple[str, ...]
    gaps: tuple[float, ...]


@dataclass(frozen=True)
class Block:
    """Sentences `[start, end)` of a story; `paragraph` False for a leftover sentence."""

    start: int
    end: int
    paragraph: bool


def n_words(text: str) -> int:
    return len(text.split())


def split_long_sentence(sentence: str, max_words: int) -> list[str]:
    """Cut a sentence of more than `max_words` words into the fewest even chunks that fit."""
    words = sentence.split()
    if len(words) <= max_words:
        return [sentence]
    pieces = math.ceil(len(words) / max_words)
    size = math.ceil(len(words) / pieces)
    return [" ".join(words[i:i + size]) for i in range(0, len(words), size)]


def baseline_of(gaps: Sequence[float], setting: Union[str, float]) -> float:
    """The cut baseline: the median of the story's gaps, or a fixed number."""
    if isinstance(setting, str):
        if setting != "median":
            raise ValueError(f"paragraph.cut_baseline must be 'median' or a number, got {setting!r}")
        return statistics.median(gaps) if gaps else 0.0
    return float(setting)


def cut_cost(blocks: Sequence[Block], gaps: Sequence[float], baseline: float,
             offset: int = 0) -> float:
    """Sum of `gap - baseline` over the boundaries between consecutive blocks."""
    return sum(gaps[offset + b.start - 1] - baseline for b in blocks[1:])


def leftover_words(blocks: Sequence[Block], words: Sequence[int], offset: int = 0) -> int:
    return sum(words[offset + b.start] for b in blocks if not b.paragraph)


def segment_run(words: Sequence[int], gaps: Sequence[float], baseline: float,
                min_words: int, max_words: int) -> list[Block]:
    """Optimal blocks of one run (`len(gaps) == len(words) - 1`, every word count <= max_words).

    Minimises (leftover words, cut cost) lexicographically; ties go to fewer blocks, then to the
    earliest cuts, so the result is deterministic.
    """
    n = len(words)
    prefix = [0]
    for w in words:
        prefix.append(prefix[-1] + w)
    # best[j]: (leftover words, cut cost, blocks) for sentences [0, j); back[j]: (i, paragraph)
    best: list[Optional[tuple[int, float, int]]] = [None] * (n + 1)
    back: list[tuple[int, bool]] = [(0, False)] * (n + 1)
    best[0] = (0, 0.0, 0)

    def better(a: tuple[int, float, int], b: Optional[tuple[int, float, int]]) -> bool:
        if b is None:
            return True
        if a[0] != b[0]:
            return a[0] < b[0]
        if abs(a[1] - b[1]) > _EPS:
            return a[1] < b[1]
        return a[2] < b[2]

    for j in range(1, n + 1):
        # A leftover sentence j-1.
        left, cost, count = best[j - 1]
        cut = gaps[j - 2] - baseline if j - 1 > 0 else 0.0
        candidate = (left + words[j - 1], cost + cut, count + 1)
        if better(candidate, best[j]):
            best[j], back[j] = candidate, (j - 1, False)
        # A paragraph [i, j), shortest first so that equal costs keep the earliest cut.
        for i in range(j - 1, -1, -1):
            size = prefix[j] - prefix[i]
            if size > max_words:
                break
            if size < min_words:
                continue
            left, cost, count = best[i]
            cut = gaps[i - 1] - baseline if i > 0 else 0.0
            candidate = (left, cost + cut, count + 1)
            if better(candidate, best[j]):
                best[j], back[j] = candidate, (i, True)
    blocks: list[Block] = []
    j = n
    while j > 0:
        i, paragraph = back[j]
        blocks.append(Block(i, j, paragraph))
        j = i
    return blocks[::-1]


def greedy_segment(words: Sequence[int], gaps: Sequence[float], baseline: float,
                   min_words: int, max_words: int) -> list[Block]:
    """The greedy scan: grow a paragraph sentence by sentence; once it has `min_words`, cut at the
    first gap below the baseline, and always before the sentence that would overflow it."""
    blocks: list[Block] = []
    start, size = 0, 0
    n = len(words)
    for j in range(n):
        if size and size + words[j] > max_words:
            blocks.append(Block(start, j, size >= min_words))
            start, size = j, 0
        size += words[j]
        if j + 1 < n and size >= min_words and gaps[j] < baseline:
            blocks.append(Block(start, j + 1, True))
            start, size = j + 1, 0
    if start < n:
        blocks.append(Block(start, n, min_words <= size <= max_words))
    return blocks


@dataclass(frozen=True)
class Paragraph:
    """One paragraph of a story (sentences `[first, first + n_sentences)`)."""

    blog_id: str
    story_id: str
    paragraph_id: str
    text: str
    first_sentence: int
    n_sentences: int
    cut_before: float
    cut_after: float
    origin: str
    encoding: str = "utf-8"
    flags: tuple[str, ...] = ()

    def row(self) -> dict:
        return {"blog_id": self.blog_id, "story_id": self.story_id,
                "paragraph_id": self.paragraph_id, "text": self.text,
                "n_words": n_words(self.text), "n_tokens": count_tokens(self.text),
                "first_sentence": self.first_sentence, "n_sentences": self.n_sentences,
                "cut_before": self.cut_before, "cut_after": self.cut_after, "origin": self.origin,
                "encoding": self.encoding, "flags": list(self.flags)}


#: What `segment_story` yields for a sentence inside a paragraph other than its first one.
CONTINUED = "continued"


def segment_story(scored: ScoredStory, min_words: int, max_words: int,
                  baseline_setting: Union[str, float] = "median") -> Iterator[Union[Paragraph, Reject, str]]:
    """One outcome per sentence: a `Paragraph` at its first sentence, `CONTINUED` for its other
    sentences, or a `Reject` (`sentence_too_long`, `not_in_paragraph`)."""
    story, sentences, gaps = scored.story, scored.sentences, scored.gaps
    words = [n_words(s) for s in sentences]
    baseline = baseline_of(gaps, baseline_setting)
    nan = float("nan")
    runs: list[tuple[int, int]] = []
    start = 0
    for i, w in enumerate(words + [None]):
        if w is None or cosmos_filters.sentence_length(w, max_words):
            if i > start:
                runs.append((start, i))
            start = i + 1
    outcomes: dict[int, Union[Paragraph, Reject, str]] = {}
    for i, w in enumerate(words):
        reason = cosmos_filters.sentence_length(w, max_words)
        if reason:
            outcomes[i] = Reject(STAGE, reason, f"{story.id}#s{i}", f"{w} words > {max_words}")
    for a, b in runs:
        blocks = segment_run(words[a:b], gaps[a:b - 1], baseline, min_words, max_words)
        for block in blocks:
            first, end = a + block.start, a + block.end
            if not block.paragraph:
                outcomes[first] = Reject(STAGE, "not_in_paragraph", f"{story.id}#s{first}",
                                         f"{words[first]} words fit no {min_words}-{max_words} paragraph")
                continue
            text = " ".join(sentences[first:end])
            assert cosmos_filters.paragraph_length(n_words(text), min_words, max_words) is None
            outcomes[first] = Paragraph(
                story.blog_id, story.id, f"{story.id}#p{first:03d}", text, first, end - first,
                gaps[first - 1] if first > 0 else nan, gaps[end - 1] if end < len(sentences) else nan,
                story.origin, story.encoding, story.flags)
            for k in range(first + 1, end):
                outcomes[k] = CONTINUED
    for i in range(len(sentences)):
        yield outcomes[i]
