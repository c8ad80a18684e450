"""The corpus of `make bench-scale` (tests/scale_corpus.py): new ids listed in the URL lists, no
copy an exact or near duplicate of another (by the pipeline's own dedup functions), the same
corpus for the same seed, and N x holding N times the files of 1x."""
from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

from data_specs import RecordSpec, load_spec
from tests.scale_corpus import BLOG_DATA, RECORD_DATA, CopyWords, build_corpus, copy_url
from transforms.core.dedup import MinHasher, near_duplicates_in_bucket
from transforms.cosmos.read import find_posts
from transforms.record.curate import shingles
from transforms.record.formats import parse_story

ARTICLES, BLOGS = 22, 25      # 1x: 2 copies of each of the 11 stories, 5 of each of the 5 blog files
D2 = "bc9756632a5af516f1a7569a2d6fcc1881392fe5"       # and its near duplicate by design (README)
D2_DUP = "3c18ba2b5cc74580d416247fa07746a5b4e4cd85"
COPY_TAG = re.compile(r"-s(\d{5})")


@pytest.fixture(scope="module")
def corpora(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("scale")
    for name, scale, seed in (("1x", 1, 7), ("1x-again", 1, 7), ("2x", 2, 7), ("1x-seed8", 1, 8)):
        build_corpus(root / name, scale, ARTICLES, BLOGS, seed)
    return {name: root / name for name in ("1x", "1x-again", "2x", "1x-seed8")}


def stories(corpus: Path) -> dict[str, Path]:
    return {p.stem: p for p in sorted(corpus.glob("record/*/stories/*.story"))}


def listed(folder: Path) -> dict[str, str]:
    """{url: list file name} of the URL lists in `folder`."""
    return {line: path.name for path in sorted(folder.glob("*.txt"))
            for line in path.read_text(encoding="utf-8").splitlines() if line}


def source_of(url: str) -> tuple[str, int]:
    """(the source article's URL, the copy number) of a copy's URL."""
    match = COPY_TAG.search(url)
    assert match, url
    return url[:match.start()] + url[match.end():], int(match.group(1))


def sha1(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


def test_copy_url_puts_the_copy_number_before_the_ending():
    assert copy_url("http://www.cnn.com/2015/03/30/europe/glacier/index.html", 7) == \
        "http://www.cnn.com/2015/03/30/europe/glacier-s00007/index.html"
    assert copy_url("http://www.dailymail.co.uk/news/article-1/Seal-pup.html", 12) == \
        "http://www.dailymail.co.uk/news/article-1/Seal-pup-s00012.html"


def test_copies_have_new_ids_that_are_sha1_stems_of_listed_urls(corpora):
    sources = listed(RECORD_DATA / "url_lists")
    urls = listed(corpora["1x"] / "record" / "url_lists")
    files = stories(corpora["1x"])
    assert len(files) == len(urls) == 22
    assert set(files) == {sha1(url) for url in urls}
    assert not set(files) & {p.stem for p in RECORD_DATA.glob("*/stories/*.story")}
    for url, list_name in urls.items():
        source, _ = source_of(url)
        assert sources[source] == list_name          # the split of the source
        # cnn/ and dailymail/ as the source's
        assert files[sha1(url)].parent.parent.name == ("cnn" if "cnn.com" in url else "dailymail")
    blogs = sorted(p.name for p in (corpora["1x"] / "cosmos" / "blogs").glob("*.xml"))
    assert len(blogs) == 25 and len({b.split(".")[0] for b in blogs}) == 25
    assert not {b.split(".")[0] for b in blogs} & {p.name.split(".")[0] for p in BLOG_DATA.glob("*.xml")}
    assert {b.split(".", 1)[1] for b in blogs} == {p.name.split(".", 1)[1] for p in BLOG_DATA.glob("*.xml")}


def test_no_copy_is_an_exact_or_near_duplicate(corpora):
    """All copies compared pairwise (one LSH bucket: every pair, not only those sharing a band)
    with the spec's MinHash settings. Only copy k of D2-dup may be a near duplicate of copy k of
    D2, as the sources are."""
    spec = load_spec("record")
    assert isinstance(spec, RecordSpec)
    near = spec.curation.near_duplicates
    hasher = MinHasher(near.threshold, near.num_perm, spec.seed)
    urls = listed(corpora["2x"] / "record" / "url_lists")
    origin = {sha1(url): (sha1(source_of(url)[0]), source_of(url)[1]) for url in urls}
    members, texts = [], set()
    for stem, path in stories(corpora["2x"]).items():
        text = path.read_text(encoding="utf-8")
        texts.add(text)
        signature = hasher.signature(shingles(parse_story(text, stem), near.shingle_size))
        assert signature is not None
        members.append((stem, signature, None))
    assert len(texts) == len(members) == 44
    pairs = list(near_duplicates_in_bucket(members, near.threshold, len(members)))
    for dropped, kept in pairs:
        assert {origin[dropped][0], origin[kept][0]} == {D2, D2_DUP}, (origin[dropped], origin[kept])
        assert origin[dropped][1] == origin[kept][1]
    blog_texts = {p.read_bytes() for p in (corpora["2x"] / "cosmos" / "blogs").glob("*.xml")}
    assert len(blog_texts) == 50 - 9     # the 10 copies of the blog without posts are all alike


def test_copies_keep_the_structure_of_their_source(corpora):
    """Same paragraphs, highlights and whitespace tokens per paragraph (so the same passage
    split); a blog file keeps its markup, dates and encoding."""
    urls = listed(corpora["1x"] / "record" / "url_lists")
    source_files = {p.stem: p for p in RECORD_DATA.glob("*/stories/*.story")}
    for url in urls:
        copy = stories(corpora["1x"])[sha1(url)].read_text(encoding="utf-8")
        source = source_files[sha1(source_of(url)[0])].read_text(encoding="utf-8")
        a, b = parse_story(copy, "copy"), parse_story(source, "source")
        assert [len(p.split()) for p in a.paragraphs] == [len(p.split()) for p in b.paragraphs]
        assert [len(h.split()) for h in a.highlights] == [len(h.split()) for h in b.highlights]
        assert copy.count("@highlight") == source.count("@highlight") and copy != source
    copy_bytes = next((corpora["1x"] / "cosmos" / "blogs").glob("*.male.41.Arts.Libra.xml")).read_bytes()
    source_bytes = next(BLOG_DATA.glob("*.male.41.Arts.Libra.xml")).read_bytes()
    with pytest.raises(UnicodeDecodeError):     # the latin-1 source stays latin-1
        copy_bytes.decode("utf-8")
    copy_text, source_text = copy_bytes.decode("latin-1"), source_bytes.decode("latin-1")
    assert len(find_posts(copy_text)) == len(find_posts(source_text))
    markup = re.compile(r"<date>[^<]*</date>|</?(?:post|Blog|date)>")
    assert markup.findall(copy_text) == markup.findall(source_text)
    assert copy_text.count("\r\n") == source_text.count("\r\n") and copy_text != source_text


def test_same_seed_same_corpus_other_seed_other_words(corpora):
    def files(root: Path) -> dict[str, bytes]:
        return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}

    assert files(corpora["1x"]) == files(corpora["1x-again"])
    other = files(corpora["1x-seed8"])
    assert set(other) == set(files(corpora["1x"]))      # ids do not depend on the seed
    assert other != files(corpora["1x"])


def test_n_x_holds_n_times_the_files_and_1x_among_them(corpora):
    one, two = corpora["1x"], corpora["2x"]
    for pattern in ("record/*/stories/*.story", "cosmos/blogs/*.xml"):
        assert len(list(two.glob(pattern))) == 2 * len(list(one.glob(pattern)))
        for path in one.glob(pattern):
            assert (two / path.relative_to(one)).read_bytes() == path.read_bytes()
    assert len(listed(two / "record" / "url_lists")) == 2 * len(listed(one / "record" / "url_lists"))


def test_copy_words_are_one_to_one_and_keep_initials_case_and_lengths():
    names = frozenset({"Brunner", "Bern", "Gletschmatt"})
    lower = frozenset({"glacier", "valley", "cracking", "cameras", "sensor"})
    vocab = {letter: tuple(f"{letter}{i:03d}x" for i in range(50)) for letter in "abcdefghijklmnopqrstuvwxyz"}
    words = CopyWords(names, lower, vocab, seed=1, copy=3)
    text = "Brunner's IGMC team left Bern; Brunner saw 140 people in Gletschmatt on 02 March.\n@highlight"
    out = words.text(text)
    tokens, source = out.split(" "), text.split(" ")
    assert len(tokens) == len(source)
    new_names = {words.words[n.lower()] for n in names}
    assert len(new_names) == 3 and all(words.words[n.lower()][0] == n[0].lower() for n in names)
    assert out.endswith("\n@highlight")                              # the marker line is kept
    assert tokens[1] == "IGMC" and tokens[9] == "in" and tokens[-1].startswith("March")
    assert tokens[0] == words.words["brunner"].capitalize() + "'s"
    assert tokens[5] == tokens[0][:-2] and tokens[4] == words.words["bern"].capitalize() + ";"
    assert len(tokens[7]) == 3 and tokens[7][0] != "0" and len(tokens[12]) == 2    # 140, 02
    assert tokens[7] != "140" or tokens[12] != "02"
    assert len(words.words) == 3 + 1     # the names and a fifth of the 5 lower-case words


def test_real_shaped_blogs_are_heavy_tailed_messy_and_nested_across_scales(tmp_path):
    # The `real` blog shape (make bench-scale's): per-file post counts from one to hundreds, some
    # files byte-identical, CRLF and cp1252 files, the same bytes for the same seed, and 1x's
    # files inside 2x unchanged.
    one = build_corpus(tmp_path / "1x", 1, 11, 300, 7, blog_shape="real")
    two = build_corpus(tmp_path / "2x", 2, 11, 300, 7, blog_shape="real")
    again = build_corpus(tmp_path / "again", 1, 11, 300, 7, blog_shape="real")
    files = sorted(one.blogs.rglob("*.xml"))
    assert len(files) == 300 and len(list(two.blogs.rglob("*.xml"))) == 600
    payloads = [f.read_bytes() for f in files]
    counts = sorted(len(find_posts(p.decode("utf-8", "replace"))) for p in payloads)
    assert counts[0] == 1 or counts[0] < 3
    assert counts[-1] >= 20 * counts[len(counts) // 2]          # heavy tail: max >> median
    assert len(set(payloads)) < len(payloads)                     # some byte-identical files
    assert any(b"\r\n" in p for p in payloads) and any(b"\r\n" not in p for p in payloads)
    undecodable = 0
    for payload in payloads:
        try:
            payload.decode("utf-8")
        except UnicodeDecodeError:
            undecodable += 1
    assert undecodable > 0
    assert [f.read_bytes() for f in sorted(again.blogs.rglob("*.xml"))] == payloads
    doubled = {f.name: f.read_bytes() for f in two.blogs.rglob("*.xml")}
    assert all(doubled.get(f.name) == p for f, p in zip(files, payloads))
