"""Cosmos QA stage 1 (paper §2.1, Appendix A) in Beam: spaCy sentences, coherence of each gap, paragraphs, one per blog.

Both models are loaded once per worker process (`apache_beam.utils.shared`) and fed
`BatchElements` batches of stories; a batch that fails is retried story by story, and a story
that still fails becomes a reject. A story longer than spaCy's `max_length` never reaches spaCy:
the reader rejects stories over `input.max_chars` (`text_too_long`, default = spaCy's limit), and
should that be raised above the model's limit, `sentences` rejects them as `text_too_long` too.
"""
from __future__ import annotations

import logging
from typing import Any, Callable, Iterator, Sequence

import apache_beam as beam
from apache_beam.metrics import Metrics
from apache_beam.utils import shared

from data_specs.models import CoherenceSection, ParagraphSection, SampleSection, SentencesSection
from filters import cosmos as cosmos_filters
from transforms.core.accounting import NAMESPACE, REJECTS, TALLIES, Reject
from transforms.core.hashing import unit_hash
from transforms.core.models import load_spacy
from transforms.core.stages import Ledger, Stage, route
from transforms.cosmos.read import TEXT_TOO_LONG, Story
from transforms.cosmos.scorers import make_coherence_scorer
from transforms.cosmos.segment import (
    CONTINUED,
    Paragraph,
    ScoredStory,
    SentencedStory,
    segment_story,
    split_long_sentence,
)
from transforms.cosmos.segment import STAGE as SEGMENT_STAGE

STORY_STAGE = "story_filter"
SENTENCE_STAGE = "sentences"
COHERENCE_STAGE = "coherence"
SAMPLE_STAGE = "sample"
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


class _Handle:
    def __init__(self, model: Any):
        self.model = model


class RunBatchModelFn(beam.DoFn):
    """Apply a shared model to batches of elements; failures are retried one by one."""

    def __init__(self, stage: str, key: str, make: Callable[[], Any],
                 apply: Callable[[Any, list], list], element_id: Callable[[Any], str],
                 shared_handle: shared.Shared):
        self._stage, self._key, self._make, self._apply = stage, key, make, apply
        self._id, self._shared = element_id, shared_handle

    def setup(self) -> None:
        self._model = self._shared.acquire(lambda: _Handle(self._make()), tag=self._key).model
        self._kept = Metrics.counter(NAMESPACE, f"{self._stage}.kept")

    def process(self, batch: list) -> Iterator[Any]:
        try:
            results = self._apply(self._model, batch)
        except Exception:
            _LOG.exception("%s: a batch failed; retrying element by element", self._stage)
            results = []
            for element in batch:
                try:
                    results.extend(self._apply(self._model, [element]))
                except Exception as error:
                    results.append(Reject(self._stage, "model_error", self._id(element),
                                          f"{type(error).__name__}: {error}"[:300]))
        yield from route(self._stage, len(batch), results, self._kept)


class BatchModel(beam.PTransform):
    """`BatchElements` of `min_batch`..`max_batch` elements through a model loaded once per worker
    process (`make()`, shared under `key`); returns `(kept, rejects, tallies)`."""

    def __init__(self, stage: str, key: str, make: Callable[[], Any], apply: Callable[[Any, list], list],
                 element_id: Callable[[Any], str], min_batch: int, max_batch: int):
        super().__init__()
        self._args = (stage, key, make, apply, element_id)
        self._min, self._max = min_batch, max_batch

    def expand(self, pcoll):
        results = (pcoll
                   | "Batch" >> beam.BatchElements(min_batch_size=self._min, max_batch_size=self._max)
                   | "RunModel" >> beam.ParDo(RunBatchModelFn(*self._args, shared.Shared()))
                   .with_outputs(REJECTS, TALLIES, main="kept"))
        return results.kept, results[REJECTS], results[TALLIES]


def too_long(story: Story, limit: int) -> Reject:
    """A story over spaCy's `max_length` (only when `input.max_chars` was raised above it): a
    quiet `text_too_long` reject instead of spaCy's error and a failed batch."""
    return Reject(SENTENCE_STAGE, TEXT_TOO_LONG, story.id,
                  f"{len(story.text)} characters > spaCy's max_length {limit}; {story.origin}")


def SplitSentences(sentences: SentencesSection, paragraph: ParagraphSection) -> beam.PTransform:  # noqa: N802
    """Stories -> `SentencedStory` with spaCy sentences; returns `(kept, rejects, tallies)`.

    (A transform factory.) `paragraph.long_sentence` / `max_words` say whether sentences longer
    than a paragraph are split into even chunks.
    """
    model, component, batch_size = sentences.model, sentences.component, sentences.batch_size
    long_sentence, max_words = paragraph.long_sentence, paragraph.max_words

    def apply(nlp, stories: list[Story]) -> list:
        limit = nlp.max_length
        docs = iter(nlp.pipe([s.text for s in stories if len(s.text) <= limit], batch_size=batch_size))
        return [SentencedStory(s, sentences_of(next(docs), long_sentence, max_words))
                if len(s.text) <= limit else too_long(s, limit) for s in stories]

    return BatchModel(SENTENCE_STAGE, repr(("spacy-sentences", model, component)),
                      lambda: load_sentencizer(model, component), apply, lambda s: s.id,
                      sentences.min_stories_per_call, sentences.max_stories_per_call)


def ScoreCoherence(coherence: CoherenceSection) -> beam.PTransform:  # noqa: N802
    """`SentencedStory` -> `ScoredStory` with the section's `CoherenceScorer` (a transform factory)."""

    def apply(scorer, stories: list[SentencedStory]) -> list:
        gaps = scorer.score([s.sentences for s in stories])
        return [ScoredStory(s.story, s.sentences, tuple(g)) for s, g in zip(stories, gaps)]

    return BatchModel(COHERENCE_STAGE, repr(("coherence", coherence)),
                      lambda: make_coherence_scorer(coherence), apply, lambda s: s.story.id,
                      coherence.min_stories_per_call, coherence.max_stories_per_call)


def segment_fn(paragraph: ParagraphSection) -> Callable[[ScoredStory], Iterator[Any]]:
    low, high, baseline = paragraph.min_words, paragraph.max_words, paragraph.cut_baseline
    return lambda scored: segment_story(scored, low, high, baseline)


def sample_paragraphs(grouped: tuple[str, Sequence[Paragraph]], seed: int, per_blog: int) -> Iterator[Any]:
    """Keep the `per_blog` paragraphs of a blog with the smallest sha1(seed, paragraph id)."""
    blog_id, paragraphs = grouped
    ranked = sorted(paragraphs, key=lambda p: (unit_hash(seed, "paragraph", p.paragraph_id), p.paragraph_id))
    for rank, p in enumerate(ranked):
        if rank < per_blog:
            yield p
        else:
            yield Reject(SAMPLE_STAGE, "not_sampled", p.paragraph_id, f"blog {blog_id}")


class Paragraphs(beam.PTransform):
    """Stories -> sampled `Paragraph`s; returns `(paragraphs, [rejects...], [tallies...])`.

    Stories too short for `paragraph.min_words` are dropped, the rest split into `sentences`,
    scored by `coherence`, segmented within `paragraph`'s bounds, and `sample.per_blog`
    paragraphs a blog kept in `seed`ed hash order.
    """

    def __init__(self, paragraph: ParagraphSection, sentences: SentencesSection,
                 coherence: CoherenceSection, sample: SampleSection, seed: int):
        super().__init__()
        self._paragraph, self._sentences, self._coherence = paragraph, sentences, coherence
        self._sample, self._seed = sample, seed

    def expand(self, stories):
        ledger = Ledger()
        collect = ledger.add

        min_words = self._paragraph.min_words
        stories = collect(stories | "FilterStories" >> Stage(STORY_STAGE, lambda s: filter_story(s, min_words)))
        sentenced = collect(stories | "SplitSentences" >> SplitSentences(self._sentences, self._paragraph))
        scored = collect(sentenced | "ScoreCoherence" >> ScoreCoherence(self._coherence))
        outcomes = collect(scored | "Segment" >> Stage(SEGMENT_STAGE, segment_fn(self._paragraph),
                                                       units=lambda s: len(s.sentences)))
        seed, per_blog = self._seed, self._sample.per_blog
        sampled = collect(
            outcomes
            | "DropContinued" >> beam.Filter(lambda o: o != CONTINUED)
            | "KeyByBlog" >> beam.Map(lambda p: (p.blog_id, p))
            | "GroupByBlog" >> beam.GroupByKey()
            | "SamplePerBlog" >> Stage(SAMPLE_STAGE, lambda g: sample_paragraphs(g, seed, per_blog),
                                       units=lambda g: len(list(g[1]))))
        return sampled, ledger.rejects, ledger.tallies
