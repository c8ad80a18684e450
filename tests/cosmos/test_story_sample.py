"""The `story_sample` rounds carry ids, not texts: a round's chosen stories are read again from
their files, and `kept` is counted where a decision meets its text again.

Expected values are worked out by hand from the rule in `transforms.cosmos.story_sample`.
"""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import apache_beam as beam
from apache_beam.testing.util import assert_that, equal_to

from data_specs import load_spec
from tests.conftest import beam_test_pipeline
from tests.groupings import assert_no_grouping_carries
from transforms.core.stages import Ledger
from transforms.cosmos.read import Story, read_stories_again
from transforms.cosmos.segment import Paragraph
from transforms.cosmos.story_sample import (
    BlogQueue,
    ReadChosen,
    chosen_stories,
    entry,
    packed_entry,
    sample_stories,
    story_key,
    unpacked_entry,
)

LONG = "word " * 5000
INPUT = load_spec("cosmos").input


def story(story_id: str, blog: str = "b1", text: str = "some text", origin: str = "test") -> Story:
    return Story(story_id, blog, text, origin)


def stories_in_file(path: Path, rows: list[tuple[str, str, str]]) -> list[Story]:
    """Write `(id, blog, text)` rows as a JSONL input file; its stories as the reader reads them."""
    path.write_text("".join(json.dumps({"id": i, "blog_id": b, "text": t}) + "\n" for i, b, t in rows))
    return list(read_stories_again(str(path), {i for i, _, _ in rows}, INPUT))


def read_again(source: str, ids):
    return read_stories_again(source, ids, INPUT)


def test_an_entry_holds_no_text_whatever_the_story_length():
    short, long = entry(7, story("b1/1", text="short")), entry(7, story("b1/1", text=LONG))
    assert len(repr(short)) == len(repr(long)) < 200
    assert LONG.strip() not in repr(long)


def test_what_waits_in_the_groupings_gives_back_the_same_entries_and_queues():
    # The grouping by blog holds `packed_entry` strings and the rounds' joins `BlogQueue`s of one
    # string; what the per-blog steps see from them is what `entry` and the queued triples were.
    odd = "b1/7:3=x\x00é"
    for s in (story("b1/1", text=LONG), replace(story(odd, text="short"), source="/in/b1.xml"),
              replace(story("", text="x"), source="12:=")):
        assert unpacked_entry(7, packed_entry(s)) == entry(7, s)
        assert LONG.strip() not in packed_entry(s)
    queued = [("b1/1", "k1", "/in/a.xml"), ("b1/2", "k2", "/in/a.xml"), (odd, "", "="), ("", "3:x", "")]
    for stories in ([], queued, queued[::-1], queued[2:]):
        assert BlogQueue.of("b1", 1, stories).stories() == stories
    assert BlogQueue.of("b1", 1, queued[:2]).packed.count("/in/a.xml") == 1   # a shared file once


def test_the_story_key_tells_records_apart_by_every_field():
    base = story("b1/1")
    assert story_key(base) == story_key(story("b1/1"))
    assert len({story_key(base), story_key(story("b1/1", text="other")),
                story_key(story("b1/1", origin="elsewhere")), story_key(story("b1/1", blog="b2"))}) == 4


def test_a_file_read_again_gives_the_chosen_stories_only_and_a_key_chosen_twice_twice(tmp_path):
    a, b, c = stories_in_file(tmp_path / "blogs.jsonl", [("b1/a", "b1", "text a"), ("b1/b", "b1", "text b"),
                                                         ("b2/c", "b2", "text c")])
    assert (a.origin, a.source) == (f"{tmp_path / 'blogs.jsonl'}:1", str(tmp_path / "blogs.jsonl"))
    got = list(chosen_stories(a.source, [("b1/a", story_key(a)), ("b2/c", story_key(c)), ("b2/c", story_key(c))],
                              read_again))
    assert got == [a, c, c]
    # A key that no story of the file has (the file changed under the run) gives nothing.
    assert list(chosen_stories(a.source, [("b1/b", story_key(story("b1/b", text="edited")))], read_again)) == []


def test_a_decision_whose_story_is_not_in_its_file_is_not_counted_as_kept(tmp_path):
    a, b = stories_in_file(tmp_path / "blogs.jsonl", [("b1/a", "b1", "text a"), ("b1/b", "b1", "text b")])
    with beam_test_pipeline() as p:
        decisions = p | "Decisions" >> beam.Create([(a.source, ("b1/a", story_key(a))),
                                                    (a.source, ("b1/b", "no-such-key"))])
        taken, tallies = decisions | ReadChosen(read_again)
        assert_that(taken | "TakenIds" >> beam.Map(lambda s: s.id), equal_to(["b1/a"]), label="Taken")
        assert_that(tallies, equal_to([(("story_sample", "kept"), 1)]), label="Tallies")


def one_paragraph_per_story_ending_in_1(candidates, number: int):
    """A stand-in segmenter: stories whose id ends in 1 give one paragraph."""
    return candidates | f"Segment{number}" >> beam.FlatMap(
        lambda s: [Paragraph(s.blog_id, s.id, f"{s.id}#p0", s.text, 0, 1, 0.0, 0.0, s.origin)]
        if s.id.endswith("1") else [])


def test_every_story_is_kept_or_not_sampled_over_many_blogs_and_duplicates(tmp_path):
    # 300 blogs of 1..9 stories; blog 0 holds a record twice. Each story is taken in some
    # round or rejected as not_sampled: in = kept + rejected = 1 + sum of the blog sizes.
    stories = stories_in_file(tmp_path / "blogs.jsonl", [(f"b{b}/{i}", f"b{b}", f"text {b} {i}")
                                                         for b in range(300) for i in range(1 + b % 9)])
    stories.append(stories[0])
    ledger = Ledger()
    with beam_test_pipeline() as p:
        found = sample_stories(p | beam.Create(stories), seed=3, per_blog=1, rounds=2,
                               segment=one_paragraph_per_story_ending_in_1, ledger=ledger, read=read_again)
        totals = (ledger.tallies | "AllTallies" >> beam.Flatten() | "Sum" >> beam.CombinePerKey(sum)
                  | "Totals" >> beam.combiners.ToDict()
                  | "Balance" >> beam.Map(lambda t: (t[("story_sample", "in")],
                                                     t[("story_sample", "kept")]
                                                     + t.get(("story_sample", "rejected.not_sampled"), 0))))
        expected = 1 + sum(1 + b % 9 for b in range(300))
        assert_that(totals, equal_to([(expected, expected)]), label="Balanced")
        # A blog with a story ending in 1 gets exactly one paragraph from the rounds
        # (blogs of 1 story: only b{b}/0, no paragraph).
        blogs = (found | "AllFound" >> beam.Flatten() | "Blogs" >> beam.Map(lambda q: q.blog_id)
                 | "PerBlog" >> beam.combiners.Count.PerElement() | "Counts" >> beam.Values()
                 | "Distinct" >> beam.Distinct())
        assert_that(blogs, equal_to([1]), label="OneEach")


def test_no_grouping_of_the_rounds_carries_a_story_text(tmp_path):
    # Each text holds a marker; every value that enters a grouping of the rounds is checked.
    marker = "MARKERTEXT"
    stories = stories_in_file(tmp_path / "blogs.jsonl", [(f"b{b}/{i}", f"b{b}", f"{marker} {b} {i} " * 20)
                                                         for b in range(20) for i in range(4)])
    p = beam_test_pipeline()
    found = sample_stories(p | beam.Create(stories), seed=3, per_blog=1, rounds=2,
                           segment=one_paragraph_per_story_ending_in_1, ledger=Ledger(), read=read_again)
    found | "AllFound" >> beam.Flatten()
    checked = assert_no_grouping_carries(p, marker)
    p.run().wait_until_finish()
    assert checked >= 5    # entries by blog, decisions by file (3 rounds), queues and counts (2 rounds)


def test_no_grouping_of_the_whole_graph_carries_a_story_text_before_the_models(tmp_path):
    # The whole of `cosmos paragraphs` with a work folder (its checkpoint and memo): every value
    # that enters a grouping, or waits for a side input, is checked for a piece of story text
    # (" the "), except in the steps that must hold text: the output writers (docs/runners.md).
    # The last sample groups the paragraphs' places, not their texts.
    from pipeline.graphs.cosmos import GenerateCosmosParagraphs

    spec = load_spec("cosmos", ["coherence.name=overlap"])
    data = Path(__file__).resolve().parents[1] / "data" / "cosmos"
    p = beam_test_pipeline()
    p | GenerateCosmosParagraphs(spec, [str(data / "blogs"), str(data / "stories.jsonl")],
                                 str(tmp_path / "out"), progress=False, work=str(tmp_path / "work"))
    checked = assert_no_grouping_carries(p, " the ", skip=("Create", "WriteParagraphs", "WriteRejects", "Summarize"))
    p.run().wait_until_finish()
    assert checked >= 10
