"""Cosmos QA readers: Blog Authorship Corpus files (UTF-8 and latin-1), JSONL, text files."""
from __future__ import annotations

import io
from pathlib import Path

import apache_beam as beam
from apache_beam.testing.util import assert_that, equal_to

from data_specs import load_spec
from tests.conftest import beam_test_pipeline
from transforms.core.accounting import Reject
from transforms.cosmos.read import ReadStories, Story, clean_text, decode, iter_raw_records, parse_raw_record

DATA = Path(__file__).resolve().parents[1] / "data" / "cosmos"
LATIN1 = DATA / "blogs" / "1000004.male.41.Arts.Libra.xml"


def stories_of(path: Path):
    out = []
    for raw in iter_raw_records(str(path), io.BytesIO(path.read_bytes())):
        out.extend(parse_raw_record(raw, ("urlLink",)))
    return out


def test_blog_file_posts_become_stories_of_the_blogger():
    stories = stories_of(DATA / "blogs" / "1000001.female.24.Student.Aries.xml")
    assert [s.id for s in stories] == ["1000001/0000", "1000001/0001", "1000001/0002"]
    assert {s.blog_id for s in stories} == {"1000001"}
    assert stories[1].text == "Short one today & I am too tired to write more than this."   # stray &
    assert "urlLink" not in stories[2].text and stories[2].text.endswith("Here is the centre.")
    assert "05,March,2004" in stories[1].origin
    assert all("  " not in s.text and "\r" not in s.text for s in stories)


def test_latin1_blog_file_is_decoded():
    raw = LATIN1.read_bytes()
    assert b"caf\xe9" in raw                         # really latin-1 on disk
    assert decode(raw).encoding == "cp1252"
    (story,) = stories_of(LATIN1)
    assert story.encoding == "cp1252" and story.flags == ()
    assert "café" in story.text and "señor" in story.text and "£3" in story.text and "½" in story.text


def test_blog_without_posts_and_bad_json_are_rejects():
    (reject,) = stories_of(DATA / "blogs" / "1000005.female.19.indUnk.Gemini.xml")
    assert isinstance(reject, Reject) and reject.reason == "no_posts" and reject.record_id == "1000005"
    rows = stories_of(DATA / "stories.jsonl")
    assert [r.reason for r in rows if isinstance(r, Reject)] == ["malformed_json"]
    stories = {s.id: s for s in rows if isinstance(s, Story)}
    assert stories["story-garden"].blog_id == "green-thumbs"
    assert stories["story-interview"].blog_id == "story-interview"   # no blog_id: its own blog


def test_text_file_is_one_story(tmp_path):
    path = tmp_path / "my-story.txt"
    path.write_text("One line.\n\nAnother   line.", encoding="utf-8")
    (story,) = stories_of(path)
    assert story == Story("my-story", "my-story", "One line. Another line.", str(path))


def test_clean_text_entities_and_nbsp():
    assert clean_text("a&nbsp;b &amp; c &#8217; d &", ("urlLink",)) == "a b & c \u2019 d &"


def test_read_stories_transform_counts_every_record():
    spec = load_spec("cosmos")
    with beam_test_pipeline() as p:
        stories, rejects, tallies = p | ReadStories([str(DATA / "blogs")], spec.input)
        assert_that(stories | "Ids" >> beam.Map(lambda s: s.id), equal_to(
            ["1000001/0000", "1000001/0001", "1000001/0002", "1000002/0000", "1000002/0001",
             "1000003/0000", "1000003/0001", "1000004/0000"]), label="Stories")
        assert_that(rejects | "Reasons" >> beam.Map(lambda r: r.reason),
                    equal_to(["no_posts"]), label="Rejects")
