"""Cosmos QA paragraph segmentation: the dynamic programme against greedy and brute force."""
from __future__ import annotations

import math
import random

import pytest

from transforms.cosmos.read import Story
from transforms.cosmos.segment import (
    CONTINUED,
    Block,
    Paragraph,
    ScoredStory,
    baseline_of,
    cut_cost,
    greedy_segment,
    leftover_words,
    segment_run,
    segment_story,
    split_long_sentence,
)


def objective(blocks, words, gaps, baseline):
    return leftover_words(blocks, words), round(cut_cost(blocks, gaps, baseline), 9)


def valid(blocks, words, low, high):
    assert blocks[0].start == 0 and blocks[-1].end == len(words)
    for a, b in zip(blocks, blocks[1:]):
        assert a.end == b.start
    for b in blocks:
        size = sum(words[b.start:b.end])
        if b.paragraph:
            assert low <= size <= high
        else:
            assert b.end - b.start == 1


def test_dp_beats_greedy_on_a_constructed_story():
    # Nine 20-word sentences, paragraphs of 30-60 words, topic breaks after sentences 3 and 6
    # (gaps 0.48 and 0.05) and a milder dip after sentence 2 (0.45). Greedy takes the first dip
    # once it has 30 words, so its next paragraph overflows before the deep break: a forced cut
    # through a coherent stretch (0.9) and a stranded last sentence. The DP finds both breaks.
    words = [20] * 9
    gaps = [0.9, 0.45, 0.48, 0.9, 0.9, 0.05, 0.9, 0.9]
    baseline = 0.5
    dp = segment_run(words, gaps, baseline, 30, 60)
    greedy = greedy_segment(words, gaps, baseline, 30, 60)
    valid(dp, words, 30, 60)
    valid(greedy, words, 30, 60)
    assert [(b.start, b.end) for b in dp] == [(0, 3), (3, 6), (6, 9)]
    assert all(b.paragraph for b in dp)
    assert [(b.start, b.end, b.paragraph) for b in greedy] == [
        (0, 2, True), (2, 5, True), (5, 8, True), (8, 9, False)]
    assert leftover_words(dp, words) == 0 < leftover_words(greedy, words)
    assert cut_cost(dp, gaps, baseline) == pytest.approx(-0.47)
    assert cut_cost(greedy, gaps, baseline) > 0.5
    assert objective(dp, words, gaps, baseline) < objective(greedy, words, gaps, baseline)


def test_dp_beats_greedy_on_cut_cost_with_equal_coverage():
    # Greedy cuts at the first gap below the baseline; the DP waits for the much deeper one.
    words = [20, 20, 20, 30]
    gaps = [0.9, 0.45, 0.02]
    dp = segment_run(words, gaps, 0.5, 30, 80)
    greedy = greedy_segment(words, gaps, 0.5, 30, 80)
    assert leftover_words(dp, words) == leftover_words(greedy, words) == 0
    assert [(b.start, b.end) for b in greedy] == [(0, 2), (2, 4)]
    assert [(b.start, b.end) for b in dp] == [(0, 3), (3, 4)]
    assert cut_cost(dp, gaps, 0.5) == pytest.approx(-0.48)
    assert cut_cost(greedy, gaps, 0.5) == pytest.approx(-0.05)


def test_dp_covers_more_than_greedy_when_greedy_strands_a_sentence():
    # Greedy grows 40+40 words and cuts at the low gap, stranding the last 25 words; the DP
    # cuts 40 | 40+25 and leaves nothing over.
    words = [40, 40, 25]
    gaps = [0.9, 0.1]
    greedy = greedy_segment(words, gaps, 0.5, 30, 80)
    dp = segment_run(words, gaps, 0.5, 30, 80)
    assert leftover_words(greedy, words) == 25
    assert leftover_words(dp, words) == 0
    assert [(b.start, b.end, b.paragraph) for b in dp] == [(0, 1, True), (1, 3, True)]


def brute_force(words, gaps, baseline, low, high):
    n = len(words)
    best = None
    for mask in range(2 ** (n - 1)):
        cuts = [i + 1 for i in range(n - 1) if mask >> i & 1]
        bounds = [0, *cuts, n]
        blocks = []
        for a, b in zip(bounds, bounds[1:]):
            size = sum(words[a:b])
            if low <= size <= high:
                blocks.append(Block(a, b, True))
            elif b - a == 1:
                blocks.append(Block(a, b, False))
            else:
                break
        else:
            key = objective(blocks, words, gaps, baseline)
            if best is None or key < best:
                best = key
    return best


@pytest.mark.parametrize("seed", range(40))
def test_dp_is_optimal_against_brute_force(seed):
    rng = random.Random(seed)
    n = rng.randint(1, 10)
    words = [rng.randint(3, 60) for _ in range(n)]
    gaps = [round(rng.random(), 3) for _ in range(n - 1)]
    baseline = baseline_of(gaps, "median")
    blocks = segment_run(words, gaps, baseline, 30, 100)
    valid(blocks, words, 30, 100)
    assert objective(blocks, words, gaps, baseline) == brute_force(words, gaps, baseline, 30, 100)


def test_baseline_median_and_number():
    assert baseline_of([0.1, 0.5, 0.9], "median") == 0.5
    assert baseline_of([], "median") == 0.0
    assert baseline_of([0.1], 0.3) == 0.3
    with pytest.raises(ValueError):
        baseline_of([0.1], "mean")


def test_split_long_sentence_into_even_chunks():
    sentence = " ".join(f"w{i}" for i in range(320))
    chunks = split_long_sentence(sentence, 150)
    assert [len(c.split()) for c in chunks] == [107, 107, 106]
    assert " ".join(chunks) == sentence
    assert split_long_sentence("a short one", 150) == ["a short one"]


def make_story(sentences, gaps):
    story = Story("s1", "blog", " ".join(sentences), "origin")
    return ScoredStory(story, tuple(sentences), tuple(gaps))


def sentence(n, word="word"):
    return " ".join([word] * (n - 1) + ["end."])


def test_segment_story_one_outcome_per_sentence_and_long_sentence_rejected():
    sentences = [sentence(20), sentence(20), sentence(200), sentence(15), sentence(20), sentence(10)]
    gaps = [0.8, 0.5, 0.5, 0.7, 0.2]
    outcomes = list(segment_story(make_story(sentences, gaps), 30, 150))
    assert len(outcomes) == len(sentences)
    paragraphs = [o for o in outcomes if isinstance(o, Paragraph)]
    rejects = {o.record_id: o.reason for o in outcomes if hasattr(o, "reason")}
    assert rejects == {"s1#s2": "sentence_too_long"}
    assert [p.paragraph_id for p in paragraphs] == ["s1#p000", "s1#p003"]
    assert [len(p.text.split()) for p in paragraphs] == [40, 45]
    assert outcomes[1] == CONTINUED
    assert paragraphs[0].cut_before != paragraphs[0].cut_before  # NaN at the story start
    assert paragraphs[0].cut_after == 0.5
    assert math.isnan(paragraphs[1].cut_after)
    row = paragraphs[1].row()
    assert row["n_words"] == 45 and row["blog_id"] == "blog" and row["n_sentences"] == 3


def test_segment_story_leftover_sentence_is_a_reject():
    sentences = [sentence(10), sentence(140)]   # 150 words together fit; 10 + 145 would not
    outcomes = list(segment_story(make_story(sentences, [0.5]), 30, 150))
    assert isinstance(outcomes[0], Paragraph) and outcomes[1] == CONTINUED
    outcomes = list(segment_story(make_story([sentence(15), sentence(145)], [0.5]), 30, 150))
    assert outcomes[0].reason == "not_in_paragraph" and outcomes[0].record_id == "s1#s0"
    assert isinstance(outcomes[1], Paragraph) and len(outcomes[1].text.split()) == 145


def test_every_paragraph_within_bounds_on_random_stories():
    rng = random.Random(7)
    for _ in range(30):
        n = rng.randint(1, 25)
        sentences = [sentence(rng.randint(2, 170)) for _ in range(n)]
        gaps = [rng.random() for _ in range(n - 1)]
        outcomes = list(segment_story(make_story(sentences, gaps), 30, 150))
        assert len(outcomes) == n
        for o in outcomes:
            if isinstance(o, Paragraph):
                assert 30 <= len(o.text.split()) <= 150
