"""Cosmos QA stage 1, `sample.mode: before_scoring`: which stories of a blog are segmented.

The rule (see `transforms.cosmos.paragraphs`): a blog's stories are ranked by sha1(seed,
"story", id); round 1 segments the first `per_blog`; a blog still short of paragraphs sends as
many next stories as paragraphs are missing to the next round, and after `sample.rounds` rounds
all its remaining stories go through one last pass; the stories never segmented are
`not_sampled` rejects of the `story_sample` stage.

**Nothing here grows with a blog's text.** The rule only needs a story's rank and identity, so
the per-blog steps see `Entry`s (rank, id, key: about 100 bytes a story) and a waiting blog is
a `BlogQueue` of ids. The texts stay keyed by `story_key` and are joined back to the decisions
of each round (`JoinStories`), in groups of one story and its decision. A story's `kept` is
counted there, where the decision meets its text, so a decision whose story never arrived (or a
story never decided) leaves the stage unbalanced instead of passing unseen.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import partial
from typing import Any, Callable, Iterable, Iterator, NamedTuple, Union

import apache_beam as beam
from apache_beam.metrics import Metrics

from transforms.core.accounting import NAMESPACE, REJECTS, TALLIES, Reject
from transforms.core.hashing import unit_hash
from transforms.core.stages import count_reject
from transforms.cosmos.read import Story

STORY_SAMPLE_STAGE = "story_sample"
NOT_SAMPLED = "not_sampled"
QUEUE = "queue"
PENDING = "pending"
TAKE, DROP = "take", "drop"
DECISION, STORY = 0, 1          # which side of a `JoinStories` group a value comes from


def story_key(story: Story) -> str:
    """A story's identity for the join of decisions and texts: sha1 of its blog, id, text and
    origin (two records equal in all four are interchangeable)."""
    parts = (story.blog_id, story.id, story.text, story.origin)
    return hashlib.sha1("\x00".join(parts).encode("utf-8", "surrogatepass")).hexdigest()


class Entry(NamedTuple):
    """What the per-blog steps know of a story: its rank, its id and its `story_key`."""

    rank: float
    story_id: str
    tie: str
    key: str


def entry(seed: int, story: Story) -> Entry:
    """A story's `Entry`: rank sha1(seed, "story", id); ties by id, then a digest of the text."""
    tie = hashlib.sha1(story.text.encode("utf-8", "surrogatepass")).hexdigest()
    return Entry(unit_hash(seed, "story", story.id), story.id, tie, story_key(story))


@dataclass(frozen=True)
class BlogQueue:
    """A blog's stories not segmented yet, as `(story id, story key)` in rank order, and the
    paragraphs it still lacks."""

    blog_id: str
    missing: int
    stories: tuple[tuple[str, str], ...]


class Decision(NamedTuple):
    """`TAKE` (segment the story in this round) or `DROP` (a `not_sampled` reject) for a key."""

    key: str
    verdict: str


Outcome = Union[Decision, BlogQueue, Reject]


def first_candidates(grouped: tuple[str, Iterable[Entry]], per_blog: int) -> Iterator[Outcome]:
    """A blog's first-round decisions (its `per_blog` first-ranked stories) and the queue of the rest."""
    blog_id, entries = grouped
    ranked = sorted(entries)
    for chosen in ranked[:per_blog]:
        yield Decision(chosen.key, TAKE)
    if len(ranked) > per_blog:
        yield BlogQueue(blog_id, per_blog, tuple((e.story_id, e.key) for e in ranked[per_blog:]))


def next_candidates(queue: BlogQueue, found: int, final: bool) -> Iterator[Outcome]:
    """After a round that gave the blog `found` paragraphs: nothing more when it has enough (the
    queue is `not_sampled`), else as many stories as paragraphs are missing (all of them in the
    `final` round) and the queue of the rest."""
    missing = queue.missing - found
    if missing <= 0:
        for story_id, key in queue.stories:
            yield Reject(STORY_SAMPLE_STAGE, NOT_SAMPLED, story_id,
                         f"blog {queue.blog_id}: its paragraphs come from stories ranked before this one")
            yield Decision(key, DROP)
        return
    take = len(queue.stories) if final else missing
    for _, key in queue.stories[:take]:
        yield Decision(key, TAKE)
    if queue.stories[take:]:
        yield BlogQueue(queue.blog_id, missing, queue.stories[take:])


def after_round(joined: tuple[str, dict], final: bool) -> Iterator[Outcome]:
    """`next_candidates` of a blog from its `{"queue": [queue], "found": [1 per paragraph]}`."""
    _, groups = joined
    found = sum(groups["found"])
    for queue in groups["queue"]:
        yield from next_candidates(queue, found, final)


class DecideFn(beam.DoFn):
    """One decision step of the `story_sample` stage: `Decision`s on the main output, `BlogQueue`s
    keyed by blog on `queue`, `not_sampled` rejects, and the tallies of the stories that came in
    (`units`) and of the rejects (a DoFn for the tagged outputs). `kept` is tallied by
    `JoinStoriesFn`."""

    def __init__(self, fn: Callable[[Any], Iterable[Outcome]], units: Callable[[Any], int]):
        self._fn, self._units = fn, units

    def process(self, element: Any) -> Iterator[Any]:
        units = self._units(element)
        if units:
            yield beam.pvalue.TaggedOutput(TALLIES, ((STORY_SAMPLE_STAGE, "in"), units))
        for outcome in self._fn(element):
            if isinstance(outcome, BlogQueue):
                yield beam.pvalue.TaggedOutput(QUEUE, (outcome.blog_id, outcome))
            elif isinstance(outcome, Reject):
                count_reject(outcome)
                yield beam.pvalue.TaggedOutput(REJECTS, outcome)
                yield beam.pvalue.TaggedOutput(TALLIES, ((STORY_SAMPLE_STAGE, "rejected." + outcome.reason), 1))
            else:
                yield outcome.key, (DECISION, outcome.verdict)


def decide(pcoll, label: str, fn: Callable[[Any], Iterable[Outcome]], units: Callable[[Any], int]) -> tuple:
    """`(decisions, queues, rejects, tallies)` of a `DecideFn` step."""
    results = pcoll | label >> beam.ParDo(DecideFn(fn, units)).with_outputs(
        REJECTS, TALLIES, QUEUE, main="decisions")
    return results.decisions, results[QUEUE], results[REJECTS], results[TALLIES]


def pair_stories(values: Iterable[tuple[int, Any]]) -> tuple[list[Story], list[Story]]:
    """The stories of one `story_key` group: those taken (one per `TAKE`) and those still
    waiting (no decision yet); stories met by a `DROP` were rejected where it was made."""
    verdicts: list[str] = []
    stories: list[Story] = []
    for side, value in values:
        (verdicts if side == DECISION else stories).append(value)
    taken = min(verdicts.count(TAKE), len(stories))
    decided = min(len(verdicts), len(stories))
    return stories[:taken], stories[decided:]


class JoinStoriesFn(beam.DoFn):
    """Stories meet their decisions: taken ones on the main output (the stage's `kept`), waiting
    ones `(key, story)` on `pending` for the next round (a DoFn for the tagged outputs)."""

    def setup(self) -> None:
        self._kept = Metrics.counter(NAMESPACE, f"{STORY_SAMPLE_STAGE}.kept")

    def process(self, grouped: tuple[str, Iterable[tuple[int, Any]]]) -> Iterator[Any]:
        key, values = grouped
        taken, waiting = pair_stories(values)
        for story in taken:
            self._kept.inc()
            yield story
        if taken:
            yield beam.pvalue.TaggedOutput(TALLIES, ((STORY_SAMPLE_STAGE, "kept"), len(taken)))
        for story in waiting:
            yield beam.pvalue.TaggedOutput(PENDING, (key, (STORY, story)))


class JoinStories(beam.PTransform):
    """`(decisions, pending)` -> `(taken stories, still pending, tallies)`; both inputs keyed by
    `story_key`, pending values `(STORY, story)`."""

    def expand(self, inputs):
        decisions, pending = inputs
        joined = ((decisions, pending) | "Flatten" >> beam.Flatten() | "ByStory" >> beam.GroupByKey()
                  | "Pair" >> beam.ParDo(JoinStoriesFn()).with_outputs(PENDING, TALLIES, main="taken"))
        return joined.taken, joined[PENDING], joined[TALLIES]


def sample_stories(stories, seed: int, per_blog: int, rounds: int,
                   segment: Callable[[Any, int], Any], ledger: Any) -> list:
    """The rounds on `stories`; `segment(candidates, round)` gives a round's paragraphs (its
    rejects and tallies go to `ledger` there). Returns each round's paragraphs."""
    keyed = stories | "KeyStories" >> beam.Map(lambda s: (story_key(s), (STORY, s)))
    grouped = (stories
               | "RankStories" >> beam.Map(lambda s: (s.blog_id, entry(seed, s)))
               | "GroupEntriesByBlog" >> beam.GroupByKey())
    decisions, queues, rejects, tallies = decide(
        grouped, "FirstCandidates", lambda g: first_candidates(g, per_blog), lambda g: sum(1 for _ in g[1]))
    ledger.rejects.append(rejects)
    ledger.tallies.append(tallies)
    pending = keyed
    found = []
    for number in range(1, rounds + 2):
        candidates, pending, joined_tallies = (decisions, pending) | f"JoinStories{number}" >> JoinStories()
        ledger.tallies.append(joined_tallies)
        paragraphs = segment(candidates, number)
        found.append(paragraphs)
        if number > rounds:
            break
        counts = paragraphs | f"CountRound{number}" >> beam.Map(lambda p: (p.blog_id, 1))
        final = number == rounds
        decisions, queues, rejects, tallies = decide(
            {"queue": queues, "found": counts} | f"JoinRound{number}" >> beam.CoGroupByKey(),
            f"NextCandidates{number}", partial(after_round, final=final), lambda _: 0)
        ledger.rejects.append(rejects)
        ledger.tallies.append(tallies)
    return found
