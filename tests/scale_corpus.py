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

Blog files come in one of two shapes (`blog_shape`):

* `copies` (`build_corpus`'s default, what tests/bench_resume.py and the figures measured before
  it use): each blog file of the sources copied whole, as above: 1x is
  `copies_per_file(blogs, 5)` copies of each of the 5 source files, of 0 to 3 posts each.
* `real` (`make bench-scale`'s and this script's default): the Blog Authorship Corpus' shape.
  1x is exactly `blogs` files and N x is N times as many, the first of them 1x's; file i is
  a function of the seed and i alone (and the sizes of the files before it):
    * its number of posts is drawn from a log-normal distribution (median `POSTS_MEDIAN`, log
      standard deviation `POSTS_SIGMA`; at least 1, at most `POSTS_MAX`): most blogs hold a few
      posts, a few hold hundreds or thousands (the real corpus: median about 10-15, largest
      about 2,300 of 19,320 files). The largest file therefore grows with the scale, as a
      tenth of the real corpus against the whole;
    * its posts are the next ones of one stream that runs through the 8 posts of the sources,
      each pass with the words of a new copy (`CopyWords`), so a post differs from the same
      source post in other passes (but for the sources' one-line post, whose few content words
      most passes keep: about 5 % of the posts are that line, as real blogs repeat short posts);
      each post has a generated date; the layout is the sources' (`<Blog>`, `<date>`, `<post>`);
    * a `DUPLICATE_SHARE` of the files are byte-identical to the file before them (under a
      new blogger id), a `CRLF_SHARE` have CRLF line ends (the rest LF), a `CP1252_SHARE` are
      cp1252, not UTF-8 (curly apostrophes and an ellipsis), and some posts are not
      well-formed XML: a stray `&` (`STRAY_AMP_SHARE` of the files, beside the `&` of that
      one-line post) or `<` (`STRAY_LT_SHARE`);
    * its name is `BLOG_ID_BASE + i` with a generated gender, age, industry and sign.

    .venv/bin/python tests/scale_corpus.py --scale 10 --output /tmp/corpus [--articles 550]
        [--blogs 300] [--blog-shape real|copies] [--seed N]
"""
from __future__ import annotations

import argparse
import datetime
import hashlib
import math
import random
import re
import string
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Iterator, Literal, Sequence

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
BlogShape = Literal["copies", "real"]
BLOG_SHAPES: tuple[BlogShape, ...] = ("copies", "real")
# The `real` shape (module docstring): posts per blog file, and the shares of odd files.
POSTS_MEDIAN = 12
POSTS_SIGMA = 1.3
POSTS_MAX = 2500
DUPLICATE_SHARE = 0.01
CRLF_SHARE = 0.9
CP1252_SHARE = 0.03
STRAY_AMP_SHARE = 0.3
STRAY_LT_SHARE = 0.02
_GENDERS = ("male", "female")
_INDUSTRIES = ("indUnk", "indUnk", "Student", "Student", "Education", "Technology", "Arts",
               "Communications-Media", "Internet", "Non-Profit", "Engineering", "Law")
_SIGNS = ("Aries", "Taurus", "Gemini", "Cancer", "Leo", "Virgo", "Libra", "Scorpio", "Sagittarius",
          "Capricorn", "Aquarius", "Pisces")
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September",
           "October", "November", "December")
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
        blog_posts: posts in them.
    """
    stories: tuple[Path, ...]
    url_lists: tuple[Path, ...]
    blogs: Path
    articles: int
    blog_files: int
    blog_posts: int = 0


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


@dataclass(frozen=True)
class BlogFilePlan:
    """What file `index` of a `real`-shape corpus is (module docstring), drawn from the seed and
    the index alone.

    Args:
        index: the file's number (1x's files are 0 to `blogs` - 1).
        name: its file name (blogger id and the generated gender, age, industry and sign).
        posts: how many posts it holds.
        duplicate: byte-identical to the file before it (`posts` is then unused).
        crlf: CRLF line ends (else LF).
        cp1252: encoded in cp1252, not UTF-8.
        stray_amp: posts with a stray `&` (of 0 to `posts` - 1).
        stray_lt: posts with a stray `<`.
        first_day: the date of its first post, days after 1 January 2000.
    """
    index: int
    name: str
    posts: int
    duplicate: bool
    crlf: bool
    cp1252: bool
    stray_amp: frozenset[int]
    stray_lt: frozenset[int]
    first_day: int


def blog_file_plan(seed: int, index: int) -> BlogFilePlan:
    """The plan of file `index` of the `real` shape for `seed`."""
    rng = random.Random(f"blog-file/{seed}/{index}")
    posts = min(POSTS_MAX, max(1, round(rng.lognormvariate(math.log(POSTS_MEDIAN), POSTS_SIGMA))))
    duplicate = index > 0 and rng.random() < DUPLICATE_SHARE
    crlf, cp1252 = rng.random() < CRLF_SHARE, rng.random() < CP1252_SHARE
    amp = rng.random() < STRAY_AMP_SHARE
    lt = rng.random() < STRAY_LT_SHARE

    def some_posts(wanted: bool) -> frozenset[int]:
        if not wanted:
            return frozenset()
        return frozenset(rng.sample(range(posts), max(1, posts // 20)))

    stray_amp, stray_lt = some_posts(amp), some_posts(lt)
    name = (f"{BLOG_ID_BASE + index}.{rng.choice(_GENDERS)}.{rng.randint(13, 48)}."
            f"{rng.choice(_INDUSTRIES)}.{rng.choice(_SIGNS)}.xml")
    return BlogFilePlan(index, name, posts, duplicate, crlf, cp1252, stray_amp, stray_lt,
                        rng.randrange(5 * 365))


def _date(day: int) -> str:
    """`14,June,2005`: the corpus' date form, `day` days after 1 January 2000."""
    date = datetime.date(2000, 1, 1) + datetime.timedelta(days=day)
    return f"{date.day:02d},{_MONTHS[date.month - 1]},{date.year}"


def _stray(text: str, mark: str, rng: random.Random) -> str:
    """`text` with `mark` (`&` or `<3`) and a space put before one of its words (not well-formed XML)."""
    spaces = [m.start() for m in re.finditer(r" (?=\w)", text)]
    if not spaces:
        return f"{text} {mark} "
    at = rng.choice(spaces) + 1
    return f"{text[:at]}{mark} {text[at:]}"


def _cp1252_text(text: str) -> str:
    """`text` as a cp1252 file's blogger writes it: curly apostrophes, and an ellipsis where it
    has none (so the file is not valid UTF-8)."""
    text = text.replace("'", "\u2019")
    return text if "\u2019" in text else text.rstrip() + " \u2026\n"


class PostStream:
    """The posts of a `real`-shape corpus in order: pass k runs through `posts` (the source
    posts' contents, LF line ends) with the words of copy k."""

    def __init__(self, posts: Sequence[str], copy_words: Callable[[int], CopyWords]):
        self._posts, self._copy_words = list(posts), copy_words
        self._position = 0
        self._words: tuple[int, CopyWords] | None = None

    def take(self, n: int) -> Iterator[str]:
        for _ in range(n):
            copy, which = divmod(self._position, len(self._posts))
            if self._words is None or self._words[0] != copy:
                self._words = (copy, self._copy_words(copy))
            self._position += 1
            yield self._words[1].text(self._posts[which])


def real_blog_file(plan: BlogFilePlan, stream: PostStream, seed: int) -> bytes:
    """The bytes of a (non-duplicate) `real`-shape blog file: its posts taken from `stream`."""
    rng = random.Random(f"blog-text/{seed}/{plan.index}")
    parts = ["<Blog>\n\n"]
    day = plan.first_day
    for number, post in enumerate(stream.take(plan.posts)):
        if number in plan.stray_amp:
            post = _stray(post, "&", rng)
        if number in plan.stray_lt:
            post = _stray(post, "<3", rng)
        if plan.cp1252:
            post = _cp1252_text(post)
        parts.append(f"<date>{_date(day)}</date>\n<post>{post}</post>\n\n")
        day += rng.choice((0, 1, 1, 2, 3, 7, 30))
    parts.append("\n</Blog>\n")
    text = "".join(parts)
    if plan.crlf:
        text = text.replace("\n", "\r\n")
    return text.encode("cp1252", errors="xmlcharrefreplace") if plan.cp1252 else text.encode("utf-8")


def source_posts(blog_texts: Iterable[str]) -> list[str]:
    """The posts' contents of the source blog files, in order, with LF line ends."""
    return [text[start:end].replace("\r\n", "\n")
            for text in blog_texts for start, end, _, _ in find_posts(text)]


def write_real_blogs(out: Path, files: int, posts: Sequence[str], copy_words: Callable[[int], CopyWords],
                     seed: int) -> int:
    """Write files 0 to `files` - 1 of the `real` shape under `out`; the posts written."""
    stream = PostStream(posts, copy_words)
    previous, previous_posts, written = b"", 0, 0
    for index in range(files):
        plan = blog_file_plan(seed, index)
        if not plan.duplicate:   # file 0 never is
            previous, previous_posts = real_blog_file(plan, stream, seed), plan.posts
        (out / plan.name).write_bytes(previous)
        written += previous_posts
    return written


def _story_sources(record_data: Path) -> list[Path]:
    return sorted(p for source in STORY_SOURCES for p in (record_data / source / "stories").glob("*.story"))


def build_corpus(out: Path, scale: int, articles: int = BASE_ARTICLES, blogs: int = BASE_BLOGS,
                 seed: int = SEED, record_data: Path = RECORD_DATA, blog_data: Path = BLOG_DATA,
                 blog_shape: BlogShape = "copies") -> ScaledCorpus:
    """Write the `scale` x corpus (1x: about `articles` articles and `blogs` blog files, exactly
    `blogs` in the `real` `blog_shape`) under `out` (`record/{cnn,dailymail}/stories`,
    `record/url_lists`, `cosmos/blogs`) and say what it holds; `out` must not hold one already."""
    if min(scale, articles, blogs) < 1:
        raise ValueError(f"scale, articles and blogs must be positive, not {scale}, {articles}, {blogs}")
    if blog_shape not in BLOG_SHAPES:
        raise ValueError(f"blog_shape is one of {', '.join(BLOG_SHAPES)}, not {blog_shape!r}")
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
    blog_copies = scale * copies_per_file(blogs, len(blog_files)) if blog_shape == "copies" else 0
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
    if blog_shape == "real":
        n_blogs = scale * blogs
        n_posts = write_real_blogs(blog_out, n_blogs, source_posts(t for t, _ in blog_texts.values()),
                                   lambda copy: CopyWords(names, lower, vocab, seed, copy), seed)
    else:
        n_blogs = blog_copies * len(blog_files)
        n_posts = blog_copies * sum(len(find_posts(t)) for t, _ in blog_texts.values())
    return ScaledCorpus(tuple(out / "record" / s for s in STORY_SOURCES),
                        tuple(sorted((out / "record" / "url_lists").glob("*.txt"))), blog_out,
                        story_copies * len(stories), n_blogs, n_posts)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=int, default=1, help="N: N times the base corpus (default 1)")
    parser.add_argument("--articles", type=int, default=BASE_ARTICLES, help=f"articles at 1x ({BASE_ARTICLES})")
    parser.add_argument("--blogs", type=int, default=BASE_BLOGS, help=f"blog files at 1x ({BASE_BLOGS})")
    parser.add_argument("--blog-shape", choices=BLOG_SHAPES, default="real",
                        help="blog files of the real corpus' shape, or copies of the sample files (real)")
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--output", required=True, type=Path, help="a folder that does not exist yet")
    args = parser.parse_args(argv)
    corpus = build_corpus(args.output, args.scale, args.articles, args.blogs, args.seed, blog_shape=args.blog_shape)
    print(f"{corpus.articles} articles, {corpus.blog_files} blog files ({corpus.blog_posts} posts) "
          f"under {args.output}")


if __name__ == "__main__":
    main()
