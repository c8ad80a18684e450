"""The `story_sample` rounds carry ids, not texts, and count `kept` where a decision meets its text.

Expected values are worked out by hand from the rule in `transforms.cosmos.story_sample`.
"""
from __future__ import annotations

import apache_beam as beam
from apache_beam.testing.util import assert_that, equal_to

from tests.conftest import beam_test_pipeline
from transforms.core.stages import Ledger
from transforms.cosmos.read import Story
from transforms.cosmos.segment import Paragraph
from transforms.cosmos.story_sample import (
    DECISION,
    DROP,
    STORY,
    TAKE,
    JoinStories,
    entry,
    pair_stories,
    sample_stories,
    story_key,
)

LONG = "word " * 5000


def story(story_id: str, blog: str = "b1", text: str = "some text", origin: str = "test") -> Story:
    return Story(story_id, blog, text, origin)


def test_an_entry_holds_no_text_whatever_the_story_length():
    short, long = entry(7, story("b1/1", text="short")), entry(7, story("b1/1", text=LONG))
    assert len(repr(short)) == len(repr(long)) < 200
    assert LONG.strip() not in repr(long)


def test_the_story_key_tells_records_apart_by_every_field():
    base = story("b1/1")
    assert story_key(base) == story_key(story("b1/1"))
    assert len({story_key(base), story_key(story("b1/1", text="other")),
                story_key(story("b1/1", origin="elsewhere")), story_key(story("b1/1", blog="b2"))}) == 4


def test_pairing_a_key_group():
    a = story("b1/1")
    assert pair_stories([(DECISION, TAKE), (STORY, a)]) == ([a], [])
    assert pair_stories([(STORY, a)]) == ([], [a])                 # not decided yet: waits
    assert pair_stories([(STORY, a), (DECISION, DROP)]) == ([], [])  # rejected where decided
    # Two identical records under one key, one taken and one still waiting.
    assert pair_stories([(STORY, a), (STORY, a), (DECISION, TAKE)]) == ([a], [a])
    # A decision whose story never came takes nothing.
    assert pair_stories([(DECISION, TAKE)]) == ([], [])


def test_a_decision_without_its_story_is_not_counted_as_kept():
    a, b = story("b1/a"), story("b1/b")
    with beam_test_pipeline() as p:
        decisions = p | "Decisions" >> beam.Create([
            (story_key(a), (DECISION, TAKE)), ("no-such-story", (DECISION, TAKE))])
        pending = p | "Pending" >> beam.Create([(story_key(a), (STORY, a)), (story_key(b), (STORY, b))])
        taken, waiting, tallies = (decisions, pending) | JoinStories()
        assert_that(taken | "TakenIds" >> beam.Map(lambda s: s.id), equal_to(["b1/a"]), label="Taken")
        assert_that(waiting | "WaitingIds" >> beam.Map(lambda kv: kv[1][1].id), equal_to(["b1/b"]),
                    label="Waiting")
        assert_that(tallies, equal_to([(("story_sample", "kept"), 1)]), label="Tallies")


def one_paragraph_per_story_ending_in_1(candidates, number: int):
    """A stand-in segmenter: stories whose id ends in 1 give one paragraph."""
    return candidates | f"Segment{number}" >> beam.FlatMap(
        lambda s: [Paragraph(s.blog_id, s.id, f"{s.id}#p0", s.text, 0, 1, 0.0, 0.0, s.origin)]
        if s.id.endswith("1") else [])


def test_every_story_is_kept_or_not_sampled_over_many_blogs_and_duplicates():
    # 300 blogs of 1..9 stories; blog 0 holds a record twice. Each story is taken in some
    # round or rejected as not_sampled: in = kept + rejected = 1 + sum of the blog sizes.
    stories = [story(f"b{b}/{i}", f"b{b}", f"text {b} {i}") for b in range(300) for i in range(1 + b % 9)]
    stories.append(stories[0])
    ledger = Ledger()
    with beam_test_pipeline() as p:
        found = sample_stories(p | beam.Create(stories), seed=3, per_blog=1, rounds=2,
                               segment=one_paragraph_per_story_ending_in_1, ledger=ledger)
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
