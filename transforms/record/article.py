"""Articles as read from the dumps, and the split into passage and rest (ReCoRD §3.1)."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Callable, Optional

from filters.text import count_tokens, count_whitespace_tokens

HIGHLIGHT_SEP = "\n@highlight\n"


@dataclass(frozen=True)
class Article:
    """One news article: body paragraphs and highlights, raw characters kept."""

    id: str                      # sha1 of the URL (the .story file stem)
    paragraphs: tuple[str, ...]
    highlights: tuple[str, ...]
    url: str = ""
    source: str = ""             # "CNN", "Daily mail" or ""
    split: str = ""              # from the published URL lists
    origin: str = ""             # where it was read from, for rejects and debugging
    encoding: str = "utf-8"      # what the text was decoded from: utf-8, utf-8-sig, cp1252, latin-1

    def content_key(self) -> str:
        """A stable key of the content, used to pick one of several copies deterministically."""
        digest = hashlib.sha1()
        for part in self.paragraphs + ("\0",) + self.highlights:
            digest.update(part.encode("utf-8"))
            digest.update(b"\0")
        return digest.hexdigest()


@dataclass(frozen=True)
class PassageSplit:
    """An article cut into the passage (leading paragraphs + highlights) and the rest."""

    article: Article
    body: str                    # passage paragraphs joined by single spaces
    highlight_starts: tuple[int, ...]  # offset of each highlight in `text`
    rest: tuple[str, ...]        # the remaining paragraphs, in order
    passage_paragraphs: int
    tokens: int                  # tokens in `body`
    text: str = field(default="")  # the published layout (filled in by `make_split`)

    @property
    def body_end(self) -> int:
        return len(self.body)


DEEPMIND_HIGHLIGHT = "\n\n@highlight\n\n"


def article_document(article: Article) -> str:
    """The whole article as one string: the DeepMind `.story` layout (Story.ToString()).

    External annotators (AllenNLP, stanza, DeepMind's metadata) annotate this text, and their
    character offsets index it.
    """
    return "\n\n".join(article.paragraphs) + "".join(DEEPMIND_HIGHLIGHT + h for h in article.highlights)


def document_offsets(article: Article) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Start offsets in `article_document` of each paragraph and of each highlight."""
    paragraphs, offset = [], 0
    for paragraph in article.paragraphs:
        paragraphs.append(offset)
        offset += len(paragraph) + 2
    offset -= 2
    highlights = []
    for highlight in article.highlights:
        offset += len(DEEPMIND_HIGHLIGHT)
        highlights.append(offset)
        offset += len(highlight)
    return tuple(paragraphs), tuple(highlights)


def passage_text(body: str, highlights: tuple[str, ...]) -> tuple[str, tuple[int, ...]]:
    """ReCoRD's layout: body, then "\\n@highlight\\n" + highlight for each; and highlight offsets."""
    parts = [body]
    starts = []
    offset = len(body)
    for highlight in highlights:
        offset += len(HIGHLIGHT_SEP)
        starts.append(offset)
        parts.append(HIGHLIGHT_SEP + highlight)
        offset += len(highlight)
    return "".join(parts), tuple(starts)


def make_split(article: Article, n_paragraphs: int, tokens: int) -> PassageSplit:
    """Build the split that takes the first `n_paragraphs` paragraphs as the passage body."""
    body = " ".join(article.paragraphs[:n_paragraphs])
    text, starts = passage_text(body, article.highlights)
    return PassageSplit(
        article=article,
        body=body,
        highlight_starts=starts,
        rest=article.paragraphs[n_paragraphs:],
        passage_paragraphs=n_paragraphs,
        tokens=tokens,
        text=text,
    )


# How `passage.tokens` counts a paragraph's tokens: `whitespace` (the release's: the smallest
# published bodies have exactly 100 whitespace tokens, 108-114 word-and-punctuation tokens) or
# `words` (`filters.text.tokenize`: words and single punctuation marks).
TOKEN_COUNTS: dict[str, Callable[[str], int]] = {"whitespace": count_whitespace_tokens, "words": count_tokens}


def shortest_leading_split(article: Article, min_tokens: int,
                           count: Callable[[str], int] = count_whitespace_tokens) -> Optional[PassageSplit]:
    """The shortest run of leading paragraphs with at least `min_tokens` tokens (as `count`
    counts them), or None."""
    total = 0
    for i, paragraph in enumerate(article.paragraphs):
        total += count(paragraph)
        if total >= min_tokens:
            return make_split(article, i + 1, total)
    return None


SPLIT_STRATEGIES = {"shortest_leading": shortest_leading_split}
