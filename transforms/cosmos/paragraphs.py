"""Cosmos QA stage 1 (paper §2.1, Appendix A) in Beam: spaCy sentences, coherence of each gap, paragraphs, one per blog.

Both models are loaded once per worker process (`apache_beam.utils.shared`) and fed
`BatchElements` batches of stories; a batch that fails is retried story by story, and a story
that still fails becomes a reject. A story longer than spaCy's `max_length` never reaches spaCy:
the reader rejects stories over `input.max_chars` (`text_too_long`, default = spaCy's limit), and
should that be raised above the model's limit, `sentences` rejects them as `text_too_long` too.

**Which stories are segmented** (`sample.mode`). Sentence splitting and coherence scoring are
the expensive steps, and `sample.per_blog` (1) paragraphs a blog are kept, so by default
(`before_scoring`) the sample is drawn before they run:

1. A blog's stories (those long enough for a paragraph) are ranked by sha1(seed, "story", id)
   (`transforms.cosmos.story_sample`, which carries ids through the rounds, not texts).
2. Round 1 splits, scores and segments the first `per_blog` stories of each blog. A blog whose
   candidates gave fewer than `per_blog` paragraphs sends its next stories, as many as
   paragraphs are still missing, to the next round; after `sample.rounds` such rounds, all
   remaining stories of the blogs still short go through one last pass.
3. The stories never split are `not_sampled` rejects of the `story_sample` stage.
4. The kept paragraphs are a blog's first `per_blog` paragraphs in (story rank, paragraph rank)
   order, paragraph rank = sha1(seed, "paragraph", paragraph id): all paragraphs of the
   first-ranked story that has any, in their hash order, then the next story's, and so on. The
   others are `not_sampled` rejects of the `sample` stage.

A story is only skipped once the stories ranked before it already gave `per_blog` paragraphs,
so the kept paragraphs do not depend on `sample.rounds` (it only changes how much is scored).
`all` splits, scores and segments every story and keeps the `per_blog` paragraphs of a blog with
the smallest sha1(seed, "paragraph", paragraph id), as stage 1 always did; with a large
`per_blog` it keeps every paragraph.
"""
from __future__ import annotations

import hashlib
import logging
from functools import partial
from typing import Any, Callable, Iterator, Optional

import apache_beam as beam
from apache_beam.metrics import Metrics
from apache_beam.utils import shared

from data_specs import load_dataset_spec
from data_specs.models import (
    CoherenceSection,
    CosmosInputSection,
    CosmosSpec,
    ParagraphSection,
    SampleSection,
    SentencesSection,
)
from filters import cosmos as cosmos_filters
from transforms.core.accounting import NAMESPACE, REJECTS, TALLIES, Reject
from transforms.core.models.loading import load_spacy
from transforms.core.models.zones import ZonedPipeline
from transforms.core.resume.checkpoint import after_done
from transforms.core.resume.memo import MemoizedModel, WorkLike, step_memo
from transforms.core.stages import Ledger, Stage, route
from transforms.cosmos.blog_sample import (
    SAMPLE_STAGE,
    SampleFromParts,
    sample_paragraphs,
    work_folder,
)
from transforms.cosmos.read import TEXT_TOO_LONG, Story, read_stories_again
from transforms.cosmos.scorers import make_coherence_scorer
from transforms.cosmos.segment import STAGE as SEGMENT_STAGE
from transforms.cosmos.segment import (
    Paragraph,
    ScoredStory,
    SentencedStory,
    segment_story,
    split_long_sentence,
)
from transforms.cosmos.story_sample import STORY_SAMPLE_STAGE, sample_stories

STORY_STAGE = "story_filter"
SENTENCE_STAGE = "sentences"
COHERENCE_STAGE = "coherence"
_LOG = logging.getLogger(__name__)
# The components each `sentences.component` runs (the parser listens to tok2vec).
_SENTENCE_PIPES = {"senter": ["senter"], "parser": ["tok2vec", "parser"]}


def load_sentencizer(model: str, component: str):
    """A spaCy pipeline that only splits sentences (`senter`, or the dependency `parser`)."""
    return load_spacy(model, require=[component], only=_SENTENCE_PIPES[component],
                      option="sentences.model")


def filter_story(story: Story, min_words: int) -> Iterator[Any]:
    """Stories shorter than a paragraph's minimum are rejected before spaCy sees them."""
    n = len(story.text.split())
    reason = cosmos_filters.story_length(n, min_words)
    yield Reject(STORY_STAGE, reason, story.id, f"{n} words; {story.origin}") if reason else story


def sentences_of(doc, long_sentence: str, max_words: int) -> tuple[str, ...]:
    """Whitespace-normalised sentence texts of a spaCy doc (long ones split when asked)."""
    sentences: list[str] = []
    for sent in doc.sents:
        text = " ".join(sent.text.split())
        if not text:
            continue
        if long_sentence == "split":
            sentences.extend(split_long_sentence(text, max_words))
        else:
            sentences.append(text)
    return tuple(sentences)


# ---- the models (loaded once per worker) -------------------------------------------------------

class _Handle:
    def __init__(self, model: Any):
        self.model = model


class RunBatchModelFn(beam.DoFn):
    """Apply a shared model to batches of elements; failures are retried one by one.

    The model is acquired on the first batch that needs it. With `memo`, batches hold
    `(element, stored result or None)` pairs and only the elements without one go through the
    model (`transforms.core.resume.memo`).
    """

    def __init__(self, stage: str, key: str, make: Callable[[], Any],
                 apply: Callable[[Any, list], list], element_id: Callable[[Any], str],
                 shared_handle: shared.Shared, memo: Optional[MemoizedModel] = None):
        self._stage, self._key, self._make, self._apply = stage, key, make, apply
        self._id, self._shared = element_id, shared_handle
        self._memo = memo
        self._handle: Optional[_Handle] = None

    def setup(self) -> None:
        self._kept = Metrics.counter(NAMESPACE, f"{self._stage}.kept")

    def _model(self) -> Any:
        if self._handle is None:
            # The handle is held, not just its model: `shared` keeps an object only while
            # someone holds it, and the later rounds acquire the same one.
            self._handle = self._shared.acquire(lambda: _Handle(self._make()), tag=self._key)
        return self._handle.model

    def _run(self, batch: list) -> list:
        """One result per element of `batch`, in order: the model's, or a `model_error` reject."""
        model = self._model()
        try:
            return self._apply(model, batch)
        except Exception:
            _LOG.exception("%s: a batch failed; retrying element by element", self._stage)
            results = []
            for element in batch:
                try:
                    results.extend(self._apply(model, [element]))
                except Exception as error:
                    results.append(Reject(self._stage, "model_error", self._id(element),
                                          f"{type(error).__name__}: {error}"[:300]))
            return results

    def process(self, batch: list) -> Iterator[Any]:
        results = self._run(batch) if self._memo is None else self._memo.results(batch, self._run)
        yield from route(self._stage, len(batch), results, self._kept)

    def finish_bundle(self) -> None:
        if self._memo is not None:
            self._memo.flush()

    def teardown(self) -> None:
        if self._memo is not None:
            self._memo.flush()


class BatchModel(beam.PTransform):
    """`BatchElements` of `min_batch`..`max_batch` elements through a model loaded once per worker
    process (`make()`, shared under `key` through `shared_handle`, so that every application
    given the same handle uses one model); returns `(kept, rejects, tallies)`. With `memo`, the
    results are kept in its folder and the elements whose results are there skip the model."""

    def __init__(self, stage: str, key: str, make: Callable[[], Any], apply: Callable[[Any, list], list],
                 element_id: Callable[[Any], str], min_batch: int, max_batch: int,
                 shared_handle: Optional[shared.Shared] = None, memo: Optional[MemoizedModel] = None):
        super().__init__()
        self._args = (stage, key, make, apply, element_id)
        self._min, self._max = min_batch, max_batch
        self._shared = shared_handle or shared.Shared()
        self._memo = memo

    def expand(self, pcoll):
        if self._memo is not None:
            pcoll = pcoll | "AttachStored" >> self._memo.attach()
        results = (pcoll
                   | "Batch" >> beam.BatchElements(min_batch_size=self._min, max_batch_size=self._max)
                   | "RunModel" >> beam.ParDo(RunBatchModelFn(*self._args, self._shared, self._memo))
                   .with_outputs(REJECTS, TALLIES, main="kept"))
        return results.kept, results[REJECTS], results[TALLIES]


def text_key(story: Story) -> str:
    """What a story's model results are kept under in a work folder: its id and a digest of
    its text (all they depend on)."""
    digest = hashlib.sha1(story.text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{story.id}:{digest}"


def sentences_memo(work: WorkLike) -> Optional[MemoizedModel]:
    """How sentence splitting keeps its results under `work` (`sentences`): the sentences only."""
    memo = step_memo(work, SENTENCE_STAGE)
    return None if memo is None else MemoizedModel(
        memo, text_key, pack=lambda sentenced: sentenced.sentences,
        unpack=lambda story, sentences: SentencedStory(story, sentences))


def coherence_memo(work: WorkLike) -> Optional[MemoizedModel]:
    """How coherence scoring keeps its results under `work` (`coherence`): the gap scores only."""
    memo = step_memo(work, COHERENCE_STAGE)
    return None if memo is None else MemoizedModel(
        memo, lambda sentenced: text_key(sentenced.story), pack=lambda scored: scored.gaps,
        unpack=lambda sentenced, gaps: ScoredStory(sentenced.story, sentenced.sentences, gaps))


def too_long(story: Story, limit: int) -> Reject:
    """A story over spaCy's `max_length` (only when `input.max_chars` was raised above it): a
    quiet `text_too_long` reject instead of spaCy's error and a failed batch."""
    return Reject(SENTENCE_STAGE, TEXT_TOO_LONG, story.id,
                  f"{len(story.text)} characters > spaCy's max_length {limit}; {story.origin}")


def SplitSentences(sentences: SentencesSection, paragraph: ParagraphSection,  # noqa: N802
                   shared_handle: Optional[shared.Shared] = None, work: WorkLike = None) -> beam.PTransform:
    """Stories -> `SentencedStory` with spaCy sentences; returns `(kept, rejects, tallies)`.

    (A transform factory.) `paragraph.long_sentence` / `max_words` say whether sentences longer
    than a paragraph are split into even chunks. With `work`, the sentences are kept under
    `{work}/sentences` and a rerun splits only the stories whose sentences are not there.
    """
    model, component, batch_size = sentences.model, sentences.component, sentences.batch_size
    long_sentence, max_words = paragraph.long_sentence, paragraph.max_words

    def apply(zoned: ZonedPipeline, stories: list[Story]) -> list:
        limit = zoned.nlp.max_length
        found = iter(zoned.map([s.text for s in stories if len(s.text) <= limit],
                               lambda _, doc: sentences_of(doc, long_sentence, max_words), batch_size))
        return [SentencedStory(s, next(found)) if len(s.text) <= limit else too_long(s, limit)
                for s in stories]

    return BatchModel(SENTENCE_STAGE, repr(("spacy-sentences", model, component)),
                      lambda: ZonedPipeline(load_sentencizer(model, component)), apply, lambda s: s.id,
                      sentences.min_stories_per_call, sentences.max_stories_per_call, shared_handle,
                      sentences_memo(work))


def ScoreCoherence(coherence: CoherenceSection,  # noqa: N802
                   shared_handle: Optional[shared.Shared] = None, work: WorkLike = None) -> beam.PTransform:
    """`SentencedStory` -> `ScoredStory` with the section's `CoherenceScorer` (a transform
    factory); with `work`, the scores are kept under `{work}/coherence` as `SplitSentences`
    keeps its sentences."""

    def apply(scorer, stories: list[SentencedStory]) -> list:
        gaps = scorer.score([s.sentences for s in stories])
        return [ScoredStory(s.story, s.sentences, tuple(g)) for s, g in zip(stories, gaps)]

    return BatchModel(COHERENCE_STAGE, repr(("coherence", coherence)),
                      lambda: make_coherence_scorer(coherence), apply, lambda s: s.story.id,
                      coherence.min_stories_per_call, coherence.max_stories_per_call, shared_handle,
                      coherence_memo(work))


def segment_fn(paragraph: ParagraphSection) -> Callable[[ScoredStory], Iterator[Any]]:
    low, high, baseline = paragraph.min_words, paragraph.max_words, paragraph.cut_baseline
    return lambda scored: segment_story(scored, low, high, baseline)


class SegmentStories(beam.PTransform):
    """Stories -> their `Paragraph`s: spaCy sentences, coherence, the DP cut (stages `sentences`,
    `coherence`, `segment`); returns `(paragraphs, [rejects...], [tallies...])`.

    `models` holds the two `shared.Shared` handles, so that every round uses the same models;
    with `work` (a work folder), the two model steps keep their results there, in folders
    every round shares.
    """

    def __init__(self, paragraph: ParagraphSection, sentences: SentencesSection,
                 coherence: CoherenceSection, models: tuple[shared.Shared, shared.Shared],
                 work: WorkLike = None):
        super().__init__()
        self._paragraph, self._sentences, self._coherence = paragraph, sentences, coherence
        self._models = models
        self._work = work

    def expand(self, stories):
        ledger = Ledger()
        collect = ledger.add
        spacy_handle, scorer_handle = self._models
        sentenced = collect(stories | "SplitSentences" >> SplitSentences(
            self._sentences, self._paragraph, spacy_handle, self._work))
        scored = collect(sentenced | "ScoreCoherence" >> ScoreCoherence(self._coherence, scorer_handle, self._work))
        outcomes = collect(scored | "Segment" >> Stage(SEGMENT_STAGE, segment_fn(self._paragraph),
                                                       units=lambda s: len(s.sentences)))
        # The other outcomes are `CONTINUED` markers (sentences inside a paragraph).
        paragraphs = outcomes | "KeepParagraphs" >> beam.Filter(lambda o: isinstance(o, Paragraph))
        return paragraphs, ledger.rejects, ledger.tallies


def _add_all(ledger: Ledger, result: tuple) -> Any:
    """`Ledger.add` for a transform that returns lists of rejects and tallies."""
    kept, rejects, tallies = result
    ledger.rejects.extend(rejects)
    ledger.tallies.extend(tallies)
    return kept


class Paragraphs(beam.PTransform):
    """Stories -> sampled `Paragraph`s; returns `(paragraphs, [rejects...], [tallies...])`.

    Stories too short for `paragraph.min_words` are dropped; the stories `sample.mode` picks (see
    the module doc) are split into `sentences`, scored by `coherence` and segmented within
    `paragraph`'s bounds; `sample.per_blog` paragraphs a blog are kept in `seed`ed hash order.
    With `work` (a work folder), the sentences and coherence scores are kept there, and a rerun
    after a kill computes only those that are not (`transforms.core.resume.memo`). `read` is the input
    section the stories were read with: `before_scoring` reads a round's chosen stories again
    from their files with it. `hold` (a one-element PCollection, e.g. a checkpoint's
    `done.json`) holds the models back until it is there: under `before_scoring` the stories'
    ids wait for it, under `all` the stories. With `work`, the last sample groups the
    paragraphs' places, not their texts (`transforms.cosmos.blog_sample`).
    """

    def __init__(self, paragraph: ParagraphSection, sentences: SentencesSection,
                 coherence: CoherenceSection, sample: SampleSection, seed: int,
                 work: WorkLike = None, read: Optional[CosmosInputSection] = None, hold: Any = None):
        super().__init__()
        self._hold = hold
        self._paragraph, self._sentences, self._coherence = paragraph, sentences, coherence
        self._sample, self._seed = sample, seed
        self._work = work
        self._read = read or load_dataset_spec(CosmosSpec, "cosmos").input

    def _segment(self, models: tuple[shared.Shared, shared.Shared]) -> SegmentStories:
        return SegmentStories(self._paragraph, self._sentences, self._coherence, models, self._work)

    def expand(self, stories):
        ledger = Ledger()
        collect = ledger.add
        seed, per_blog, mode = self._seed, self._sample.per_blog, self._sample.mode
        models = (shared.Shared(), shared.Shared())

        min_words = self._paragraph.min_words
        stories = collect(stories | "FilterStories" >> Stage(STORY_STAGE, lambda s: filter_story(s, min_words)))
        if mode == "all":
            if self._hold is not None:
                stories = after_done(stories, self._hold, "AfterHold")
            candidates = collect(stories | "SampleStories" >> Stage(STORY_SAMPLE_STAGE, lambda s: [s]))
            found = [_add_all(ledger, candidates | "SegmentStories" >> self._segment(models))]
        else:
            found = self._rounds(stories, ledger, models)
        folder = work_folder(self._work)
        if folder is not None:   # only the paragraphs' places are flattened and grouped by blog
            return collect(tuple(found) | "Sample" >> SampleFromParts(folder, seed, per_blog, mode)), \
                ledger.rejects, ledger.tallies
        paragraphs = found | "FlattenParagraphs" >> beam.Flatten()
        sampled = collect(
            paragraphs
            | "KeyParagraphsByBlog" >> beam.Map(lambda p: (p.blog_id, p))
            | "GroupParagraphsByBlog" >> beam.GroupByKey()
            | "SamplePerBlog" >> Stage(SAMPLE_STAGE, lambda g: sample_paragraphs(g, seed, per_blog, mode),
                                       units=lambda g: len(list(g[1]))))
        return sampled, ledger.rejects, ledger.tallies

    def _rounds(self, stories, ledger: Ledger, models: tuple[shared.Shared, shared.Shared]) -> list:
        """`before_scoring`: the rounds of `transforms.cosmos.story_sample`; returns each
        round's paragraphs."""
        def segment(candidates, number: int):
            return _add_all(ledger, candidates | f"SegmentRound{number}" >> self._segment(models))

        return sample_stories(stories, self._seed, self._sample.per_blog, self._sample.rounds, segment, ledger,
                              partial(read_stories_again, section=self._read), hold=self._hold)
