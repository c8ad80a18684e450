"""Cosmos QA stage 1, `sample.mode: before_scoring`: which stories of a blog are segmented.

The rule (see `transforms.cosmos.paragraphs`): a blog's stories are ranked by sha1(seed,
"story", id); round 1 segments the first `per_blog`; a blog still short of paragraphs sends as
many next stories as paragraphs are missing to the next round, and after `sample.rounds` rounds
all its remaining stories go through one last pass; the stories never segmented are
`not_sampled` rejects of the `story_sample` stage.

**No grouping carries a story's text.** The rule only needs a story's rank and identity, so the
per-blog steps see `Entry`s (rank, id, key and the input file it came from) and a waiting blog
is a `BlogQueue` of those. What waits in the grouping by blog is smaller still: one string a
story (`packed_entry`: tie, key, id and file, about 140 bytes encoded; the rank is sha1 of the
seed and the id, computed again after the grouping), since the in-process runner's driver holds
every value of a grouping decoded, one Python object each, and this grouping holds every story
of the corpus; a `BlogQueue` is one string a blog (about 45 bytes a story). `hold` (the stories'
checkpoint) holds back the grouped blogs, not the entries: what waits for a side input is held
whole in that driver too, so the entries go straight from the reading to the grouping.

A round's chosen stories are not joined with their texts: the decisions are grouped by input
file (`ReadChosen`), and each file with a chosen story is read again by the worker it is dealt
to, which emits the chosen stories (those whose `story_key` was decided). A story's `kept` is
counted there, where the decision meets its text again, so a decision whose story is not found
(an input changed under the run) leaves the stage unbalanced instead of passing unseen. The
texts are read once more per round, from the files with a chosen story; nothing that grows with
the corpus's text waits in a grouping.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import partial
from typing import Any, Callable, Collection, Iterable, Iterator, NamedTuple, Union

import apache_beam as beam
from apache_beam.metrics import Metrics
from apache_beam.transforms.window import GlobalWindows

from transforms.core.accounting import NAMESPACE, REJECTS, TALLIES, Reject
from transforms.core.hashing import unit_hash
from transforms.core.resume.checkpoint import after_done
from transforms.core.stages import count_reject
from transforms.cosmos.read import Story

STORY_SAMPLE_STAGE = "story_sample"
NOT_SAMPLED = "not_sampled"
QUEUE = "queue"
PENDING = "pending"


# Hex digits kept of a digest: a key tells the chosen stories of one file apart (80 bits), a
# tie orders stories of one blog that share an id; every entry of the corpus waits in a grouping.
KEY_DIGITS, TIE_DIGITS = 20, 16


def story_key(story: Story) -> str:
    """A story's identity when its file is read again: sha1 of its blog, id, text and origin
    (two records equal in all four are interchangeable), its first `KEY_DIGITS` hex digits."""
    parts = (story.blog_id, story.id, story.text, story.origin)
    return hashlib.sha1("\x00".join(parts).encode("utf-8", "surrogatepass")).hexdigest()[:KEY_DIGITS]


class Entry(NamedTuple):
    """What the per-blog steps know of a story: its rank, its id, its `story_key` and the input
    file it is read from."""

    rank: float
    story_id: str
    tie: str
    key: str
    source: str


def entry(seed: int, story: Story) -> Entry:
    """A story's `Entry`: rank sha1(seed, "story", id); ties by id, then a digest of the text."""
    tie = hashlib.sha1(story.text.encode("utf-8", "surrogatepass")).hexdigest()[:TIE_DIGITS]
    return Entry(unit_hash(seed, "story", story.id), story.id, tie, story_key(story), story.source)


def packed_entry(story: Story) -> str:
    """What a story's `Entry` waits in the grouping by blog as: its tie and key (fixed widths),
    the length of its id, the id and its input file, in one string (no rank: `unpacked_entry`
    computes it again)."""
    tie = hashlib.sha1(story.text.encode("utf-8", "surrogatepass")).hexdigest()[:TIE_DIGITS]
    return f"{tie}{story_key(story)}{len(story.id)}:{story.id}{story.source}"


def unpacked_entry(seed: int, packed: str) -> Entry:
    """The `Entry` of a `packed_entry`: the same one `entry(seed, story)` gives."""
    tie, rest = packed[:TIE_DIGITS], packed[TIE_DIGITS:]
    key, rest = rest[:KEY_DIGITS], rest[KEY_DIGITS:]
    length, rest = rest.split(":", 1)
    story_id, source = rest[:int(length)], rest[int(length):]
    return Entry(unit_hash(seed, "story", story_id), story_id, tie, key, source)


Queued = tuple[str, str, str]   # a story waiting in a `BlogQueue`: (story id, story key, source)


def packed_queue(stories: Iterable[Queued]) -> str:
    """Queued stories in one string: per story, the length of its id, `:`, the id, the length
    of its key, `:`, the key, then its source the same way, or `=` when it is the previous
    story's source (a blog file's stories share one)."""
    parts: list[str] = []
    last = None
    for story_id, key, source in stories:
        parts.append(f"{len(story_id)}:{story_id}{len(key)}:{key}")
        parts.append("=" if source == last else f"{len(source)}:{source}")
        last = source
    return "".join(parts)


def queued_stories(packed: str) -> list[Queued]:
    """The stories of a `packed_queue` string, in order."""
    stories: list[Queued] = []
    at, source = 0, ""

    def field() -> str:
        nonlocal at
        colon = packed.index(":", at)
        start = colon + 1
        at = start + int(packed[at:colon])
        return packed[start:at]

    while at < len(packed):
        story_id, key = field(), field()
        if packed[at] == "=":
            at += 1
        else:
            source = field()
        stories.append((story_id, key, source))
    return stories


@dataclass(frozen=True)
class BlogQueue:
    """A blog's stories not segmented yet, in rank order, and the paragraphs it still lacks.

    The stories are one `packed_queue` string (`stories()` gives them as `(story id, story key,
    source)`): every story of the corpus past a blog's first waits in the rounds' joins, and the
    in-process runner's driver holds those decoded, so one string a blog, not three a story."""

    blog_id: str
    missing: int
    packed: str

    @classmethod
    def of(cls, blog_id: str, missing: int, stories: Iterable[Queued]) -> BlogQueue:
        return cls(blog_id, missing, packed_queue(stories))

    def stories(self) -> list[Queued]:
        return queued_stories(self.packed)


class Decision(NamedTuple):
    """A story to segment in this round: its input file, id and `story_key`."""

    source: str
    story_id: str
    key: str


Outcome = Union[Decision, BlogQueue, Reject]


def first_candidates(grouped: tuple[str, Iterable[Entry]], per_blog: int) -> Iterator[Outcome]:
    """A blog's first-round decisions (its `per_blog` first-ranked stories) and the queue of the rest."""
    blog_id, entries = grouped
    ranked = sorted(entries)
    for chosen in ranked[:per_blog]:
        yield Decision(chosen.source, chosen.story_id, chosen.key)
    if len(ranked) > per_blog:
        yield BlogQueue.of(blog_id, per_blog, ((e.story_id, e.key, e.source) for e in ranked[per_blog:]))


def first_candidates_of_packed(grouped: tuple[str, Iterable[str]], seed: int, per_blog: int) -> Iterator[Outcome]:
    """`first_candidates` of a blog whose entries come as `packed_entry` strings."""
    blog_id, packed = grouped
    return first_candidates((blog_id, [unpacked_entry(seed, p) for p in packed]), per_blog)


def next_candidates(queue: BlogQueue, found: int, final: bool) -> Iterator[Outcome]:
    """After a round that gave the blog `found` paragraphs: nothing more when it has enough (the
    queue is `not_sampled`), else as many stories as paragraphs are missing (all of them in the
    `final` round) and the queue of the rest."""
    missing = queue.missing - found
    stories = queue.stories()
    if missing <= 0:
        for story_id, _, _ in stories:
            yield Reject(STORY_SAMPLE_STAGE, NOT_SAMPLED, story_id,
                         f"blog {queue.blog_id}: its paragraphs come from stories ranked before this one")
        return
    take = len(stories) if final else missing
    for story_id, key, source in stories[:take]:
        yield Decision(source, story_id, key)
    if stories[take:]:
        yield BlogQueue.of(queue.blog_id, missing, stories[take:])


def after_round(joined: tuple[str, dict], final: bool) -> Iterator[Outcome]:
    """`next_candidates` of a blog from its `{"queue": [queue], "found": [1 per paragraph]}`."""
    _, groups = joined
    found = sum(groups["found"])
    for queue in groups["queue"]:
        yield from next_candidates(queue, found, final)


class DecideFn(beam.DoFn):
    """One decision step of the `story_sample` stage: `Decision`s on the main output, `BlogQueue`s
    keyed by blog on `queue`, `not_sampled` rejects, and the tallies of the stories that came in
    (`units`) and of the rejects, summed per bundle (a DoFn for the tagged outputs and the
    bundle; half a million rejects would otherwise send as many tallies). `kept` is tallied by
    `ReadChosenFn`."""

    def __init__(self, fn: Callable[[Any], Iterable[Outcome]], units: Callable[[Any], int]):
        self._fn, self._units = fn, units
        self._counts: dict[str, int] = {}

    def start_bundle(self) -> None:
        self._counts = {}

    def process(self, element: Any) -> Iterator[Any]:
        counts = self._counts
        units = self._units(element)
        if units:
            counts["in"] = counts.get("in", 0) + units
        for outcome in self._fn(element):
            if isinstance(outcome, BlogQueue):
                yield beam.pvalue.TaggedOutput(QUEUE, (outcome.blog_id, outcome))
            elif isinstance(outcome, Reject):
                count_reject(outcome)
                yield beam.pvalue.TaggedOutput(REJECTS, outcome)
                key = "rejected." + outcome.reason
                counts[key] = counts.get(key, 0) + 1
            else:
                yield outcome.source, (outcome.story_id, outcome.key)

    def finish_bundle(self) -> Iterator[Any]:
        counts, self._counts = self._counts, {}
        for outcome, n in sorted(counts.items()):
            yield beam.pvalue.TaggedOutput(
                TALLIES, GlobalWindows.windowed_value(((STORY_SAMPLE_STAGE, outcome), n)))


def decide(pcoll, label: str, fn: Callable[[Any], Iterable[Outcome]], units: Callable[[Any], int]) -> tuple:
    """`(decisions, queues, rejects, tallies)` of a `DecideFn` step."""
    results = pcoll | label >> beam.ParDo(DecideFn(fn, units)).with_outputs(
        REJECTS, TALLIES, QUEUE, main="decisions")
    return results.decisions, results[QUEUE], results[REJECTS], results[TALLIES]


Reader = Callable[[str, Collection[str]], Iterable[Story]]   # (source, ids) -> those stories


def chosen_stories(source: str, chosen: Iterable[tuple[str, str]], read: Reader) -> Iterator[Story]:
    """The stories of the input file `source` that were chosen, as `(story id, story key)`
    pairs, read again with `read(source, ids)` (the file's stories with those ids, as the reader
    made them). A key chosen n times (the same record matched twice) gives its story n times."""
    wanted: dict[str, int] = {}
    ids: set[str] = set()
    for story_id, key in chosen:
        wanted[key] = wanted.get(key, 0) + 1
        ids.add(story_id)
    for story in read(source, ids):
        if story.id in ids:
            times = wanted.pop(story_key(story), 0)
            for _ in range(times):
                yield story
            if not wanted:
                return


class ReadChosenFn(beam.DoFn):
    """A file's chosen stories, read again (`chosen_stories`): the stage's `kept` (a DoFn for
    the tagged tallies)."""

    def __init__(self, read: Reader):
        self._read = read

    def setup(self) -> None:
        self._kept = Metrics.counter(NAMESPACE, f"{STORY_SAMPLE_STAGE}.kept")

    def process(self, grouped: tuple[str, Iterable[tuple[str, str]]]) -> Iterator[Any]:
        source, chosen = grouped
        kept = 0
        for story in chosen_stories(source, chosen, self._read):
            kept += 1
            yield story
        if kept:
            self._kept.inc(kept)
            yield beam.pvalue.TaggedOutput(TALLIES, ((STORY_SAMPLE_STAGE, "kept"), kept))


class ReadChosen(beam.PTransform):
    """Decisions `(source, (story id, story key))` -> `(chosen stories, tallies)`: grouped by
    input file, each file read again where it is dealt (`read(source, ids)`)."""

    def __init__(self, read: Reader):
        super().__init__()
        self._read = read

    def expand(self, decisions):
        chosen = (decisions | "BySource" >> beam.GroupByKey()
                  | "Read" >> beam.ParDo(ReadChosenFn(self._read)).with_outputs(TALLIES, main="chosen"))
        return chosen.chosen, chosen[TALLIES]


def sample_stories(stories, seed: int, per_blog: int, rounds: int,
                   segment: Callable[[Any, int], Any], ledger: Any,
                   read: Reader, hold: Any = None) -> list:
    """The rounds on `stories`; `segment(candidates, round)` gives a round's paragraphs (its
    rejects and tallies go to `ledger` there); `read(source, ids)` reads an input file's
    stories again. With `hold` (a one-element PCollection), the blogs' grouped entries wait for
    it before the rounds start. Returns each round's paragraphs."""
    entries = stories | "RankStories" >> beam.Map(lambda s: (s.blog_id, packed_entry(s)))
    grouped = entries | "GroupEntriesByBlog" >> beam.GroupByKey()
    if hold is not None:
        grouped = after_done(grouped, hold, "AfterHold")
    decisions, queues, rejects, tallies = decide(
        grouped, "FirstCandidates", lambda g: first_candidates_of_packed(g, seed, per_blog),
        lambda g: sum(1 for _ in g[1]))
    ledger.rejects.append(rejects)
    ledger.tallies.append(tallies)
    found = []
    for number in range(1, rounds + 2):
        candidates, chosen_tallies = decisions | f"ReadChosen{number}" >> ReadChosen(read)
        ledger.tallies.append(chosen_tallies)
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
