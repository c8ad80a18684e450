"""Cosmos QA stage 1: the per-blog sample drawn before the models run (`sample.mode`).

Hash orders are computed here with hashlib, independently of `transforms.core.hashing`; the
stories are invented. The `all` mode is checked against the output of stage 1 before the
sample moved ahead of the models (tests/data/cosmos/golden/stage1_*.json).
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import tempfile
from pathlib import Path

import apache_beam as beam
import pytest
from apache_beam.testing.util import assert_that, equal_to

from data_specs import SpecError, load_spec
from tests.conftest import beam_test_pipeline
from transforms.core.accounting import build_summary
from transforms.cosmos import scorers
from transforms.cosmos.paragraphs import Paragraphs, sample_paragraphs
from transforms.cosmos.read import ReadStories, Story, read_stories_again
from transforms.cosmos.segment import Paragraph
from transforms.cosmos.story_sample import (
    NOT_SAMPLED,
    STORY_SAMPLE_STAGE,
    BlogQueue,
    Decision,
    Entry,
    after_round,
    first_candidates,
    next_candidates,
)

DATA = Path(__file__).resolve().parents[1] / "data" / "cosmos"
SEED = 1909


def sha1_unit(*parts) -> float:
    """sha1 of the parts joined by ':' as a number in [0, 1), written out here on purpose."""
    digest = hashlib.sha1(":".join(map(str, parts)).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2 ** 64


def story(story_id: str, blog: str = "b1", text: str = "") -> Story:
    return Story(story_id, blog, text or f"text of {story_id}", "test")


def paragraph(paragraph_id: str, blog: str = "b1") -> Paragraph:
    story_id = paragraph_id.split("#")[0]
    return Paragraph(blog, story_id, paragraph_id, "words " * 40, 0, 1, math.nan, math.nan, "test")


# ---- the rule, by hand ------------------------------------------------------------------------

def test_hash_order_of_the_test_stories():
    # The premise of the tests below: in blog b1, post-c < post-b < post-a by sha1(1909:story:id),
    # and of the paragraphs, post-b#p000 < post-a#p000 < post-b#p003.
    ranks = {s: sha1_unit(SEED, "story", f"b1/{s}") for s in ("post-a", "post-b", "post-c")}
    assert sorted(ranks, key=ranks.get) == ["post-c", "post-b", "post-a"]
    paragraphs = {p: sha1_unit(SEED, "paragraph", p) for p in ("b1/post-b#p000", "b1/post-b#p003", "b1/post-a#p000")}
    assert sorted(paragraphs, key=paragraphs.get) == ["b1/post-b#p000", "b1/post-a#p000", "b1/post-b#p003"]


def entry_of(story_id: str) -> Entry:
    """An entry whose rank is sha1(1909:story:id), written out here; key "k:" + id."""
    return Entry(sha1_unit(SEED, "story", story_id), story_id, "", f"k:{story_id}", "blogs.xml")


def test_first_candidates_are_the_first_ranked_stories_and_the_rest_waits():
    a, b, c = entry_of("b1/post-a"), entry_of("b1/post-b"), entry_of("b1/post-c")
    queued = lambda *ids: tuple((i, f"k:{i}", "blogs.xml") for i in ids)  # noqa: E731
    take = lambda i: Decision("blogs.xml", i, f"k:{i}")  # noqa: E731
    assert list(first_candidates(("b1", [a, b, c]), 1)) == [
        take("b1/post-c"), BlogQueue.of("b1", 1, queued("b1/post-b", "b1/post-a"))]
    assert list(first_candidates(("b1", [a, b, c]), 2)) == [
        take("b1/post-c"), take("b1/post-b"), BlogQueue.of("b1", 2, queued("b1/post-a"))]
    assert list(first_candidates(("b1", [a, b, c]), 3)) == [
        take("b1/post-c"), take("b1/post-b"), take("b1/post-a")]
    assert list(first_candidates(("b1", [a]), 1)) == [take("b1/post-a")]


def test_next_candidates():
    b, a, d = ("b1/post-b", "kb", "f1"), ("b1/post-a", "ka", "f2"), ("b1/post-d", "kd", "f1")
    queue = BlogQueue.of("b1", 2, (b, a, d))
    take = lambda entry: Decision(entry[2], entry[0], entry[1])  # noqa: E731
    # Nothing found: as many stories as paragraphs are missing, the rest waits.
    assert list(next_candidates(queue, 0, final=False)) == [take(b), take(a), BlogQueue.of("b1", 2, (d,))]
    assert list(next_candidates(queue, 1, final=False)) == [take(b), BlogQueue.of("b1", 1, (a, d))]
    # The last round takes every story left.
    assert list(next_candidates(queue, 1, final=True)) == [take(b), take(a), take(d)]
    # Enough paragraphs: the queue is not sampled (rejects only: no text waits to be let go).
    outcomes = list(next_candidates(queue, 2, final=False))
    rejects = [o for o in outcomes if not isinstance(o, Decision)]
    assert [(r.stage, r.reason, r.record_id) for r in rejects] == [
        (STORY_SAMPLE_STAGE, NOT_SAMPLED, "b1/post-b"), (STORY_SAMPLE_STAGE, NOT_SAMPLED, "b1/post-a"),
        (STORY_SAMPLE_STAGE, NOT_SAMPLED, "b1/post-d")]
    assert [o for o in outcomes if isinstance(o, Decision)] == []
    assert all(r.detail.startswith("blog b1:") for r in rejects)
    assert list(after_round(("b1", {"queue": [queue], "found": [1, 1, 1]}), final=False)) == outcomes
    assert list(after_round(("b9", {"queue": [], "found": [1]}), final=False)) == []


def test_kept_paragraphs_come_from_the_first_ranked_story_first():
    found = [paragraph("b1/post-b#p000"), paragraph("b1/post-b#p003"), paragraph("b1/post-a#p000")]
    kept = [p.paragraph_id for p in sample_paragraphs(("b1", found), SEED, 2, "before_scoring")
            if isinstance(p, Paragraph)]
    # post-b ranks before post-a, so both of its paragraphs, in paragraph-hash order.
    assert kept == ["b1/post-b#p000", "b1/post-b#p003"]
    # `all`: the blog's smallest paragraph hashes, whatever their story.
    kept_all = [p.paragraph_id for p in sample_paragraphs(("b1", found), SEED, 2, "all")
                if isinstance(p, Paragraph)]
    assert kept_all == ["b1/post-b#p000", "b1/post-a#p000"]
    rejects = [r for r in sample_paragraphs(("b1", found), SEED, 2, "all") if not isinstance(r, Paragraph)]
    assert [(r.stage, r.reason, r.record_id, r.detail) for r in rejects] == [
        ("sample", "not_sampled", "b1/post-b#p003", "blog b1")]


def test_spec_options_are_checked():
    assert load_spec("cosmos").sample.mode == "before_scoring"
    assert load_spec("cosmos", ["sample.mode=all"]).sample.mode == "all"
    with pytest.raises(SpecError, match="sample.mode"):
        load_spec("cosmos", ["sample.mode=later"])
    with pytest.raises(SpecError, match="sample.rounds"):
        load_spec("cosmos", ["sample.rounds=0"])
    with pytest.raises(SpecError, match="coherence.runtime"):
        load_spec("cosmos", ["coherence.runtime=fp16"])


# ---- in Beam ----------------------------------------------------------------------------------

KITE = ("The red kite flew over the red barn. The red kite circled the red barn twice. "
        "Then the red kite landed on the red barn roof. My phone battery died at lunch. "
        "My phone needed a charger at lunch. Lunch ended before my phone woke up.")
APPLE = "I ate a big red apple today. The apple was very sweet. Then I slept all afternoon."
STORM = ("The storm that rolled over the hills last night knocked down the old fence and the big oak "
         "tree and the power lines behind the barn and kept every one of us awake until the sun came up")
# b1: post-c (ranked first) is one 37-word sentence, too long for a 10-30 word paragraph, so it
# gives none; post-b gives two paragraphs (p000, p003), post-a one. b2 has one story with one
# paragraph, b3 only a story without any.
STORIES = [
    Story("b1/post-a", "b1", APPLE, "test"), Story("b1/post-b", "b1", KITE, "test"),
    Story("b1/post-c", "b1", STORM, "test"), Story("b2/only", "b2", APPLE, "test"),
    Story("b3/storm", "b3", STORM, "test"), Story("b3/tiny", "b3", "Too short.", "test"),
]


# The stories' input files of this test process, removed when it exits (a story read from a file
# is read again from it by the sampling rounds, so the file outlives the call that wrote it).
STORY_FILES = tempfile.TemporaryDirectory(prefix="csdata-sample-")


def stories_from_file(stories: list[Story]) -> list[Story]:
    """The stories written to a JSONL input file and read back as `ReadStories` reads them (the
    sampling rounds read a round's chosen stories again from their file)."""
    handle, name = tempfile.mkstemp(suffix=".jsonl", dir=STORY_FILES.name)
    os.close(handle)
    path = Path(name)
    path.write_text("".join(json.dumps({"id": s.id, "blog_id": s.blog_id, "text": s.text}) + "\n"
                            for s in stories), encoding="utf-8")
    return list(read_stories_again(str(path), {s.id for s in stories}, load_spec("cosmos").input))


def check_sample(overrides: list[str], ids: list[str], rejects: list[tuple], stages: dict[str, tuple]) -> None:
    """Paragraphs over STORIES with the overlap scorer: the kept paragraph ids, the rejects
    `(stage, reason, id)` and, for the `stages` named, `(in, kept, rejected by reason)`; every
    stage must balance."""
    spec = load_spec("cosmos", ["coherence.name=overlap", "paragraph.min_words=10",
                                "paragraph.max_words=30", *overrides])
    names = sorted(stages)
    expected_stages = {name: (*stages[name], True) for name in names}

    def figures(summary: dict) -> dict:
        entries = summary["stages"]
        assert all(e["balanced"] for e in entries.values()), entries
        return {n: (entries[n]["in"], entries[n]["kept"], entries[n]["rejected"], entries[n]["balanced"])
                for n in names}

    stories = stories_from_file(STORIES)
    with beam_test_pipeline() as p:
        kept, stage_rejects, tallies = p | beam.Create(stories) | Paragraphs(
            spec.paragraph, spec.sentences, spec.coherence, spec.sample, spec.seed)
        assert_that(kept | "Ids" >> beam.Map(lambda q: q.paragraph_id), equal_to(ids), label="Kept")
        assert_that(stage_rejects | "AllRejects" >> beam.Flatten()
                    | "Reasons" >> beam.Map(lambda r: (r.stage, r.reason, r.record_id)),
                    equal_to(rejects), label="Rejects")
        summary = (tallies | "AllTallies" >> beam.Flatten() | "Sum" >> beam.CombinePerKey(sum)
                   | "List" >> beam.combiners.ToList()
                   | "Summary" >> beam.Map(lambda counts: figures(build_summary(counts, names))))
        assert_that(summary, equal_to([expected_stages]), label="Stages")


def test_before_scoring_scores_only_what_the_sample_needs():
    # b1: post-c gives nothing, so round 2 takes post-b; its first paragraph by hash is p000
    # (see test_hash_order_of_the_test_stories); post-a is never split. STORM is one sentence,
    # APPLE three, KITE six.
    check_sample([], ["b1/post-b#p000", "b2/only#p000"], [
        ("story_filter", "story_too_short", "b3/tiny"),
        (STORY_SAMPLE_STAGE, NOT_SAMPLED, "b1/post-a"),
        ("segment", "sentence_too_long", "b1/post-c#s0"),
        ("segment", "sentence_too_long", "b3/storm#s0"),
        ("sample", NOT_SAMPLED, "b1/post-b#p003"),
    ], {"story_filter": (6, 5, {"story_too_short": 1}), STORY_SAMPLE_STAGE: (5, 4, {NOT_SAMPLED: 1}),
        "sentences": (4, 4, {}), "coherence": (4, 4, {}),
        "segment": (1 + 3 + 1 + 6, 9, {"sentence_too_long": 2}), "sample": (3, 2, {NOT_SAMPLED: 1})})


def test_rounds_change_the_work_not_the_paragraphs():
    kept = ["b1/post-b#p000", "b2/only#p000"]
    # One round, then the last pass takes post-b and post-a together: post-a is split too.
    check_sample(["sample.rounds=1"], kept, [
        ("story_filter", "story_too_short", "b3/tiny"),
        ("segment", "sentence_too_long", "b1/post-c#s0"),
        ("segment", "sentence_too_long", "b3/storm#s0"),
        ("sample", NOT_SAMPLED, "b1/post-a#p000"),
        ("sample", NOT_SAMPLED, "b1/post-b#p003"),
    ], {STORY_SAMPLE_STAGE: (5, 5, {}), "sample": (4, 2, {NOT_SAMPLED: 2})})
    check_sample(["sample.rounds=3"], kept, [
        ("story_filter", "story_too_short", "b3/tiny"),
        (STORY_SAMPLE_STAGE, NOT_SAMPLED, "b1/post-a"),
        ("segment", "sentence_too_long", "b1/post-c#s0"),
        ("segment", "sentence_too_long", "b3/storm#s0"),
        ("sample", NOT_SAMPLED, "b1/post-b#p003"),
    ], {STORY_SAMPLE_STAGE: (5, 4, {NOT_SAMPLED: 1}), "sample": (3, 2, {NOT_SAMPLED: 1})})


def test_two_per_blog_before_scoring_and_all():
    common = [("story_filter", "story_too_short", "b3/tiny"),
              ("segment", "sentence_too_long", "b1/post-c#s0"), ("segment", "sentence_too_long", "b3/storm#s0")]
    # Round 1 takes post-c and post-b; post-b alone gives the two paragraphs.
    check_sample(["sample.per_blog=2"], ["b1/post-b#p000", "b1/post-b#p003", "b2/only#p000"],
                 [*common, (STORY_SAMPLE_STAGE, NOT_SAMPLED, "b1/post-a")],
                 {STORY_SAMPLE_STAGE: (5, 4, {NOT_SAMPLED: 1}), "sample": (3, 3, {})})
    # Every story segmented; the blog's two smallest paragraph hashes (post-b#p000, post-a#p000).
    check_sample(["sample.per_blog=2", "sample.mode=all"], ["b1/post-a#p000", "b1/post-b#p000", "b2/only#p000"],
                 [*common, ("sample", NOT_SAMPLED, "b1/post-b#p003")],
                 {STORY_SAMPLE_STAGE: (5, 5, {}), "sample": (4, 3, {NOT_SAMPLED: 1})})


def test_the_models_are_loaded_once_for_all_rounds(monkeypatch):
    built = []
    original = scorers.OverlapCoherence.__init__

    def counting(self, **options):
        built.append(1)
        original(self, **options)

    monkeypatch.setattr(scorers.OverlapCoherence, "__init__", counting)
    # Rounds 1 (post-c, only, storm) and 2 (post-b) both score stories.
    check_sample([], ["b1/post-b#p000", "b2/only#p000"], [
        ("story_filter", "story_too_short", "b3/tiny"), (STORY_SAMPLE_STAGE, NOT_SAMPLED, "b1/post-a"),
        ("segment", "sentence_too_long", "b1/post-c#s0"), ("segment", "sentence_too_long", "b3/storm#s0"),
        ("sample", NOT_SAMPLED, "b1/post-b#p003")], {"coherence": (4, 4, {})})
    assert len(built) == 1


# ---- `all` is stage 1 as it was --------------------------------------------------------------

def normalise(row: dict) -> tuple:
    """A comparable row: the data directory as `{DATA}`, NaN as None, floats to 6 places."""
    def value(v):
        if isinstance(v, float):
            return None if math.isnan(v) else round(v, 6)
        if isinstance(v, str):
            return v.replace(str(DATA), "{DATA}")
        if isinstance(v, list):
            return tuple(v)
        return v
    return tuple(sorted((k, value(v)) for k, v in row.items()))


def golden(scorer: str, per_blog: int) -> tuple[list, list]:
    data = json.loads((DATA / "golden" / f"stage1_{scorer}_per_blog{per_blog}.json").read_text(encoding="utf-8"))
    return [normalise(r) for r in data["paragraphs"]], [normalise(r) for r in data["rejects"]]


def run_all_mode(scorer: str, per_blog: int) -> None:
    """ReadStories + Paragraphs under `sample.mode=all` must give the golden rows."""
    spec = load_spec("cosmos", [f"coherence.name={scorer}", f"sample.per_blog={per_blog}", "sample.mode=all"])
    paragraphs, rejects = golden(scorer, per_blog)
    with beam_test_pipeline() as p:
        stories, read_rejects, _ = p | ReadStories([str(DATA / "blogs"), str(DATA / "stories.jsonl")], spec.input)
        kept, stage_rejects, tallies = stories | Paragraphs(
            spec.paragraph, spec.sentences, spec.coherence, spec.sample, spec.seed)
        assert_that(kept | "Rows" >> beam.Map(lambda q: normalise(q.row())), equal_to(paragraphs), label="Paragraphs")
        assert_that([read_rejects, *stage_rejects] | "AllRejects" >> beam.Flatten()
                    | "RejectRows" >> beam.Map(lambda r: normalise(r.row())), equal_to(rejects), label="Rejects")


@pytest.mark.parametrize("per_blog", [1, 50])
def test_all_mode_equals_the_earlier_stage_1(per_blog):
    run_all_mode("overlap", per_blog)


@pytest.mark.slow
@pytest.mark.parametrize("per_blog", [1, 50])
def test_all_mode_equals_the_earlier_stage_1_with_minilm(per_blog):
    run_all_mode("minilm", per_blog)
