"""A corpus N times the size of a base one, made from the repository's own sample inputs, for
`make bench-scale` (tests/bench_scale.py).

Sources: the CNN/DM `.story` files of tests/data/record (`cnn/stories`, `dailymail/stories`,
their URLs in `url_lists/`) and the Blog Authorship Corpus files of tests/data/cosmos/blogs.
Nothing comes from the samples beside the checkout.

*1x* is `articles` articles and `blogs` blog files (default `BASE_ARTICLES` = 550, 50 copies of
each of the 11 stories, and `BASE_BLOGS` = 300, 60 of each of the 5 blog files: sizes at which the
per-item work of each benchmarked command is about as large as its fixed cost, docs/benchmarks.md);
*N x* holds N times as many copies of each file, and its first copies are those of 1x. A copy is
the source file with:

* a new id: a story's URL gets `-sNNNNN` (the copy number) before its `.html` ending, the file
  stem is the sha1 of that URL (`url_to_id`, as `record generate` reads it) and the URL goes to the
  URL list of the source's split; a blog file gets blogger id `BLOG_ID_BASE` + its index;
* its words changed, the same way in every file of one copy: each *name* (a capitalised word seen
  after a letter, digit or comma somewhere in the sources, not a title, a generic word, a
  month, a weekday or a place the coreference table knows) becomes a word of a generated
  vocabulary with the same initial, and so does a `LOWER_SHARE` of the lower-case content words
  (4 letters or more, not stopwords), chosen per copy; every digit run becomes another number
  of the same length. The map is one-to-one within a copy, so coreference, acronyms (the
  initials stay) and the passage/rest 3-gram overlaps of the sources hold in every copy, and
  token counts do not change (the passage split is the same).

About a fifth of each text changes, so the estimated Jaccard similarity of two copies' 5-word
shingles stays far below the near-duplicate threshold (about 0.4 at most against 0.8, which
tests/core/test_scale_corpus.py checks with the pipeline's MinHash): `record generate` keeps every copy, except copies of the near duplicate the
sources hold by design (D2-dup, tests/data/record/README.md): copy k of D2-dup stays a near
duplicate of copy k of D2 (estimated similarity 0.81-0.92), and the LSH drops most of them, as it
drops D2-dup. Generation is a function of the seed alone.

    .venv/bin/python tests/scale_corpus.py --scale 10 --output /tmp/corpus [--articles 550]
        [--blogs 300] [--seed N]
"""
from __future__ import annotations

import argparse
import hashlib
import math
import random
import re
import string
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Sequence

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:   # run as a script
    sys.path.insert(0, str(ROOT))

from transforms.cosmos.read import find_posts  # noqa: E402
from transforms.record.annotate.coref_forms import (  # noqa: E402
    GENERIC,
    NAME_SUFFIXES,
    STOPWORDS,
    TITLES,
    load_place_table,
)
from transforms.record.formats import url_to_id  # noqa: E402

RECORD_DATA = ROOT / "tests" / "data" / "record"
BLOG_DATA = ROOT / "tests" / "data" / "cosmos" / "blogs"
STOPWORD_FILE = ROOT / "data_specs" / "nltk_english_stopwords.txt"
SEED = 4242
BASE_ARTICLES = 550
BASE_BLOGS = 300
LOWER_SHARE = 0.2       # of the lower-case content word types, changed in each copy
VOCABULARY_PER_LETTER = 2000
BLOG_ID_BASE = 20_000_000
STORY_SOURCES = ("cnn", "dailymail")
HIGHLIGHT = "@highlight"
# Words whose replacement would change what the sources test (dates, name parts that make an
# ORG or a place, sources the NER rules know), kept in every copy.
KEPT_WORDS = frozenset({
    "january", "february", "march", "april", "may", "june", "july", "august", "september",
    "october", "november", "december", "monday", "tuesday", "wednesday", "thursday", "friday",
    "saturday", "sunday", "lake", "bay", "island", "islands", "new", "gap", "river", "mount",
    "north", "south", "east", "west", "street", "quarter", "cnn", "mailonline", "highlight",
    "urllink",
})
# A token: an HTML entity (kept as it is), a word, or a digit run.
_TOKEN = re.compile(r"(?P<entity>&#?\w+;)|(?P<word>[^\W\d_]+)|(?P<number>\d+)")
_ONSETS = ("", "b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "br", "dr",
           "gr", "kr", "st", "tr", "sh", "th")
_VOWELS = ("a", "e", "i", "o", "u", "ae", "ia", "ou")
_CODAS = ("", "", "n", "r", "l", "s", "nd", "rt")


@dataclass(frozen=True)
class ScaledCorpus:
    """Where a scaled corpus lies and what it holds.

    Args:
        stories: the `cnn` and `dailymail` folders (the `--input`s of `record generate`).
        url_lists: the URL lists of every copied story (its `--url-list`s).
        blogs: the folder of blog files (the `--input` of `cosmos paragraphs`).
        articles: `.story` files written.
        blog_files: blog files written.
    """
    stories: tuple[Path, ...]
    url_lists: tuple[Path, ...]
    blogs: Path
    articles: int
    blog_files: int


def copies_per_file(wanted: int, files: int) -> int:
    """Copies of each of `files` source files that make about `wanted` files (at least one each)."""
    return max(1, math.ceil(wanted / files))


def vocabulary(seed: int, per_letter: int = VOCABULARY_PER_LETTER) -> dict[str, tuple[str, ...]]:
    """Generated lower-case words (2-3 syllables of `_ONSETS` + `_VOWELS` + `_CODAS`), `per_letter`
    distinct ones for each initial a-z, none of them an English stopword; the same for one seed."""
    rng = random.Random(f"vocabulary/{seed}")
    stop = stopwords()
    words: dict[str, tuple[str, ...]] = {}
    for letter in string.ascii_lowercase:
        found: set[str] = set()
        while len(found) < per_letter:
            word = letter + "".join(rng.choice(_VOWELS) + rng.choice(_ONSETS[1:])
                                    for _ in range(rng.randint(1, 2))) + rng.choice(_VOWELS) + rng.choice(_CODAS)
            if word not in stop:
                found.add(word)
        words[letter] = tuple(sorted(found))
    return words


def stopwords() -> frozenset[str]:
    """NLTK's English stopwords (data_specs) and the connectors of the coreference rules."""
    lines = STOPWORD_FILE.read_text(encoding="utf-8").split()
    return frozenset(lines) | STOPWORDS


def kept_word(word: str, stop: frozenset[str]) -> bool:
    """Whether `word` (any case) stays the same in every copy: a stopword, a title, a generic
    name part, a date word, a known place or people, or one of `KEPT_WORDS`."""
    key = word.casefold()
    return (key in stop or key in TITLES or key in NAME_SUFFIXES or key in GENERIC or key in KEPT_WORDS
            or load_place_table().known(key))


def word_types(texts: Iterable[str]) -> tuple[frozenset[str], frozenset[str]]:
    """(names, lower-case content words) of `texts` that copies change (see the module docstring)."""
    stop = stopwords()
    names: set[str] = set()
    lower: set[str] = set()
    for text in texts:
        for match in _TOKEN.finditer(text):
            word = match.group("word")
            if word is None or kept_word(word, stop):
                continue
            if word.islower():
                if len(word) >= 4:
                    lower.add(word)
            elif word[0].isupper() and not word.isupper():
                before = text[:match.start()].rstrip(" \u00a0\t")
                if before and (before[-1].isalnum() or before[-1] in ",;:-"):
                    names.add(word)
    return frozenset(names), frozenset(lower)


class CopyWords:
    """The word and number map of one copy: one-to-one, the same in every file of the copy.

    Args:
        names: the capitalised words to change (`word_types`).
        lower: the lower-case content words of which a `LOWER_SHARE` changes.
        vocab: the generated words by initial (`vocabulary`).
        seed: the corpus seed.
        copy: the copy number.
    """

    def __init__(self, names: frozenset[str], lower: frozenset[str], vocab: dict[str, tuple[str, ...]],
                 seed: int, copy: int):
        rng = random.Random(f"copy/{seed}/{copy}")
        ordered = sorted(lower)
        chosen = rng.sample(ordered, round(len(ordered) * LOWER_SHARE))
        self._seed, self._copy = seed, copy
        self.words: dict[str, str] = {}
        by_letter: dict[str, list[str]] = {}
        for word in sorted({n.lower() for n in names} | set(chosen)):
            by_letter.setdefault(_initial(word), []).append(word)
        for letter, words in sorted(by_letter.items()):
            for word, new in zip(words, rng.sample(vocab[letter], len(words))):
                self.words[word] = new
        self._names = names

    def number(self, digits: str) -> str:
        """`digits` (a digit run) as this copy writes it: as many digits, a leading digit that is
        non-zero where the source's is."""
        draw = hashlib.sha256(f"{self._seed}/{self._copy}/{digits}".encode()).digest()
        out = [str(b % 10) for b in draw[:len(digits)]]
        if digits[0] != "0":
            out[0] = str(1 + draw[0] % 9)
        return "".join(out) if len(digits) <= len(draw) else digits

    def word(self, word: str) -> str:
        """`word` as this copy writes it (in the source's case: Capitalised, UPPER or lower)."""
        new = self.words.get(word.lower())
        if new is None:
            return word
        if word in self._names or word[0].isupper() and word[1:].islower():
            return new.capitalize()   # a name, or a changed word opening a sentence
        return new if word.islower() else word

    def text(self, text: str) -> str:
        """`text` with its words and numbers changed; lines that are `@highlight` markers kept."""
        def one(match: re.Match[str]) -> str:
            if match.group("word") is not None:
                return self.word(match.group("word"))
            if match.group("number") is not None:
                return self.number(match.group("number"))
            return match.group(0)
        return "\n".join(line if line.strip() == HIGHLIGHT else _TOKEN.sub(one, line)
                         for line in text.split("\n"))


def _initial(word: str) -> str:
    first = word[0].lower()
    return first if first in string.ascii_lowercase else "x"


def copy_url(url: str, copy: int) -> str:
    """The URL of copy `copy` of an article: `-sNNNNN` before its `.html` (or `/index.html`)
    ending, else at its end; the host, and so the source, unchanged."""
    tag = f"-s{copy:05d}"
    match = re.search(r"(/index)?\.html?$", url)
    return url[:match.start()] + tag + url[match.start():] if match else url + tag


def read_url_lists(folder: Path) -> dict[str, tuple[str, str]]:
    """{article id: (url, list file name)} of every URL list in `folder`."""
    found = {}
    for path in sorted(folder.glob("*.txt")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                found[url_to_id(line.strip())] = (line.strip(), path.name)
    return found


def decode(payload: bytes) -> tuple[str, str]:
    """(text, encoding) of a source file: UTF-8, else latin-1 (one blog file is)."""
    try:
        return payload.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        return payload.decode("latin-1"), "latin-1"


def blog_posts_only(text: str, change: Callable[[str], str]) -> str:
    """`text` (a blog file) with `change` applied to its posts' contents only: the markup and
    the dates stay as they are."""
    out, last = [], 0
    for start, end, _, _ in find_posts(text):
        out += [text[last:start], change(text[start:end])]
        last = end
    return "".join(out) + text[last:]


def _story_sources(record_data: Path) -> list[Path]:
    return sorted(p for source in STORY_SOURCES for p in (record_data / source / "stories").glob("*.story"))


def build_corpus(out: Path, scale: int, articles: int = BASE_ARTICLES, blogs: int = BASE_BLOGS,
                 seed: int = SEED, record_data: Path = RECORD_DATA, blog_data: Path = BLOG_DATA) -> ScaledCorpus:
    """Write the `scale` x corpus (1x: about `articles` articles and `blogs` blog files) under
    `out` (`record/{cnn,dailymail}/stories`, `record/url_lists`, `cosmos/blogs`) and say what it
    holds; `out` must not hold one already."""
    if min(scale, articles, blogs) < 1:
        raise ValueError(f"scale, articles and blogs must be positive, not {scale}, {articles}, {blogs}")
    stories = _story_sources(record_data)
    blog_files = sorted(blog_data.glob("*.xml"))
    if not stories or not blog_files:
        raise ValueError(f"no .story files under {record_data} or no .xml under {blog_data}")
    urls = read_url_lists(record_data / "url_lists")
    story_texts = {p: p.read_text(encoding="utf-8") for p in stories}
    blog_texts = {p: decode(p.read_bytes()) for p in blog_files}
    names, lower = word_types([*story_texts.values(), *(t for t, _ in blog_texts.values())])
    vocab = vocabulary(seed)
    story_copies = scale * copies_per_file(articles, len(stories))
    blog_copies = scale * copies_per_file(blogs, len(blog_files))
    lists: dict[str, list[str]] = {path.name: [] for path in sorted((record_data / "url_lists").glob("*.txt"))}
    blog_out = out / "cosmos" / "blogs"
    folders = [*(out / "record" / s / "stories" for s in STORY_SOURCES), blog_out, out / "record" / "url_lists"]
    for folder in folders:
        folder.mkdir(parents=True, exist_ok=False)
    for copy in range(max(story_copies, blog_copies)):
        words = CopyWords(names, lower, vocab, seed, copy)
        if copy < story_copies:
            for path, text in story_texts.items():
                if path.stem not in urls:
                    raise ValueError(f"{path}: its URL is in no list of {record_data / 'url_lists'}")
                url, list_name = urls[path.stem]
                new_url = copy_url(url, copy)
                lists[list_name].append(new_url)
                target = out / "record" / path.parent.parent.name / "stories" / f"{url_to_id(new_url)}.story"
                target.write_text(words.text(text), encoding="utf-8")
        if copy < blog_copies:
            for index, (path, (text, encoding)) in enumerate(blog_texts.items()):
                rest = path.name.split(".", 1)[1]
                name = f"{BLOG_ID_BASE + copy * len(blog_files) + index}.{rest}"
                (blog_out / name).write_bytes(blog_posts_only(text, words.text).encode(encoding))
    for list_name, lines in lists.items():
        (out / "record" / "url_lists" / list_name).write_text("".join(f"{u}\n" for u in lines), encoding="utf-8")
    return ScaledCorpus(tuple(out / "record" / s for s in STORY_SOURCES),
                        tuple(sorted((out / "record" / "url_lists").glob("*.txt"))), blog_out,
                        story_copies * len(stories), blog_copies * len(blog_files))


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=int, default=1, help="N: N times the base corpus (default 1)")
    parser.add_argument("--articles", type=int, default=BASE_ARTICLES, help=f"articles at 1x ({BASE_ARTICLES})")
    parser.add_argument("--blogs", type=int, default=BASE_BLOGS, help=f"blog files at 1x ({BASE_BLOGS})")
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--output", required=True, type=Path, help="a folder that does not exist yet")
    args = parser.parse_args(argv)
    corpus = build_corpus(args.output, args.scale, args.articles, args.blogs, args.seed)
    print(f"{corpus.articles} articles, {corpus.blog_files} blog files under {args.output}")


if __name__ == "__main__":
    main()
