"""Reading the dumps, the passage split and the published layout and id scheme."""
import hashlib

from transforms.record.article import TOKEN_COUNTS, Article, passage_text, shortest_leading_split
from transforms.record.formats import (
    parse_json_row,
    parse_story,
    source_from_path,
    source_from_url,
    split_flat_article,
    split_from_list_name,
    url_to_id,
)
from transforms.record.queries import query_id

STORY = """Lead paragraph one.\u00a0Still one.

Paragraph “two” here.


@highlight

First highlight

@highlight

Second highlight
"""


def test_parse_story_keeps_raw_characters_and_highlights():
    article = parse_story(STORY, "abc", "cnn/stories/abc.story", source="CNN")
    assert article.paragraphs == ("Lead paragraph one.\u00a0Still one.", "Paragraph “two” here.")
    assert article.highlights == ("First highlight", "Second highlight")
    assert article.id == "abc" and article.source == "CNN"


def test_passage_layout_matches_the_release():
    text, starts = passage_text("A b. C d.", ("H1", "H2"))
    assert text == "A b. C d.\n@highlight\nH1\n@highlight\nH2"
    assert [text[s: s + 2] for s in starts] == ["H1", "H2"]


def test_shortest_leading_split_takes_just_enough_paragraphs():
    article = Article(id="x", paragraphs=("one two three", "four five", "six", "seven"),
                      highlights=("h",))
    split = shortest_leading_split(article, 5)
    assert split.passage_paragraphs == 2
    assert split.body == "one two three four five"
    assert split.rest == ("six", "seven")
    assert split.text == "one two three four five\n@highlight\nh"
    assert shortest_leading_split(article, 7).passage_paragraphs == 4
    assert shortest_leading_split(article, 8) is None


def test_shortest_leading_split_counts_whitespace_tokens_unless_told():
    # Whitespace tokens: "Hi, Bob." 2, "Yes, sir!" 2, "ok" 1; words and punctuation: 4, 4, 1.
    article = Article(id="x", paragraphs=("Hi, Bob.", "Yes, sir!", "ok"), highlights=("h",))
    by_whitespace = shortest_leading_split(article, 4)
    assert (by_whitespace.passage_paragraphs, by_whitespace.tokens) == (2, 4)
    by_words = shortest_leading_split(article, 4, TOKEN_COUNTS["words"])
    assert (by_words.passage_paragraphs, by_words.tokens) == (1, 4)
    assert shortest_leading_split(article, 6) is None
    assert shortest_leading_split(article, 9, TOKEN_COUNTS["words"]).passage_paragraphs == 3


def test_query_id_scheme_with_a_hand_checked_sha1():
    # FIPS 180 test vector: sha1("abc") = a9993e36 4706816a ba3e2571 7850c26c 9cd0d89d
    assert query_id("p1", "abc", 7) == "p1-a9993e364706816aba3e25717850c26c9cd0d89d-7"
    # Non-ASCII sentences hash their UTF-8 bytes.
    sentence = "Café\u00a0owner"
    assert query_id("p", sentence, 0).split("-")[1] == hashlib.sha1(sentence.encode("utf-8")).hexdigest()


def test_url_ids_sources_and_splits():
    assert url_to_id("abc") == "a9993e364706816aba3e25717850c26c9cd0d89d"
    assert source_from_url("http://web.archive.org/web/1id_/http://www.cnn.com/2015/x") == "CNN"
    assert source_from_url("http://www.dailymail.co.uk/news/article-1/x.html") == "Daily mail"
    assert source_from_path("data/dailymail/stories/x.story") == "Daily mail"
    assert split_from_list_name("lists/all_val.txt") == "validation"
    assert split_from_list_name("cnn_wayback_training_urls.txt") == "train"


def test_flattened_article_is_cut_into_sentences_that_rejoin_exactly():
    text = "By . Staff Reporter . The mayor said “no.” Then he left! Why? Because."
    units = split_flat_article(text)
    # The " ." line marks end units and go, as in the release's "By Staff Reporter The mayor...".
    assert units == ("By", "Staff Reporter", "The mayor said “no.”", "Then he left!",
                     "Why?", "Because.")
    assert " ".join(units) == "By Staff Reporter The mayor said “no.” Then he left! Why? Because."
    assert split_flat_article("Fired . Caption without a stop . Next one.") == (
        "Fired", "Caption without a stop", "Next one.")


def test_json_rows_in_both_layouts():
    flat = parse_json_row({"id": "i1", "article": "One. Two.", "highlights": "h1\nh2"}, "f:1")
    assert flat.paragraphs == ("One.", "Two.") and flat.highlights == ("h1", "h2")
    # The HF layout's highlights lose See et al.'s final " ." (the release's highlights have none).
    marked = parse_json_row({"id": "i2", "article": "One. Two.", "highlights": "First one .\nU.S. wins ."}, "f:1")
    assert marked.highlights == ("First one", "U.S. wins")
    lines = parse_json_row({"url": "http://www.cnn.com/a", "article_lines": ["P1", " ", "P2"],
                            "highlights": ["h"]}, "f:2")
    assert lines.id == url_to_id("http://www.cnn.com/a")
    assert lines.paragraphs == ("P1", "P2") and lines.source == "CNN"
