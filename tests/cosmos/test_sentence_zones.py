"""`ZonedPipeline` on Cosmos QA's sentence splitter: spaCy's vocabulary stays bounded and the
sentences stay the same (the ReCoRD annotator's own zone tests are in tests/record/test_annotate.py)."""
from __future__ import annotations

import contextlib
import threading
import time

import apache_beam as beam
import pytest
from apache_beam.testing.util import assert_that, equal_to
from apache_beam.utils import shared

from data_specs import load_spec
from tests.conftest import beam_test_pipeline
from transforms.core.models.zones import ZonedPipeline
from transforms.cosmos.paragraphs import SplitSentences, load_sentencizer, sentences_of
from transforms.cosmos.read import Story

TEXTS = ["Our cat Bramblewhisk sat on the porch. It rained all day.",
         "We drove to Quentorby on Sunday. The roads were empty and the sky was grey.",
         "Grandma baked a Florrinade cake. Everyone asked for the recipe."]
# Hand-split: spaCy's senter cuts these plain texts at each full stop.
SENTENCES = [("Our cat Bramblewhisk sat on the porch.", "It rained all day."),
             ("We drove to Quentorby on Sunday.", "The roads were empty and the sky was grey."),
             ("Grandma baked a Florrinade cake.", "Everyone asked for the recipe.")]


def sentencizer() -> ZonedPipeline:
    return ZonedPipeline(load_sentencizer(load_spec("cosmos").sentences.model, "senter"))


def read(_: str, doc) -> tuple[str, ...]:
    return sentences_of(doc, "reject", 150)


def test_zones_free_the_new_words_and_split_as_before():
    zoned = sentencizer()
    zoned.nlp.tokenizer.max_cache_size = 4            # the warm-up budget: 4 distinct words
    strings = zoned.nlp.vocab.strings
    assert zoned.map(["Hello there, warm words."], read, 64) == [("Hello there, warm words.",)]
    assert zoned.map(TEXTS, read, 64) == SENTENCES
    assert not {"Bramblewhisk", "Quentorby", "Florrinade"} & set(strings)   # freed with the zone
    plain = [read(text, doc) for text, doc in zip(TEXTS, zoned.nlp.pipe(TEXTS))]
    assert plain == SENTENCES and "Quentorby" in strings                    # kept without one


def test_the_first_texts_run_outside_zones_until_their_words_could_fill_the_cache():
    zoned = sentencizer()
    zoned.nlp.tokenizer.max_cache_size = 20
    # 11 distinct words, then 13 more ("on" and "the" are seen): the cache could be full after the second text.
    assert zoned.map(TEXTS, read, 64) == SENTENCES
    strings = zoned.nlp.vocab.strings
    assert "Bramblewhisk" in strings and "Quentorby" in strings    # outside a zone: kept
    assert "Florrinade" not in strings                             # inside one: freed
    assert zoned.map(["Then Wobblecrest came by."], read, 64) == [("Then Wobblecrest came by.",)]
    assert "Wobblecrest" not in strings                            # every later call: zoned


class CountingNlp:
    """A stand-in for a spaCy pipeline that records how many memory zones are open at once and
    holds each `pipe` call until another thread could have entered."""

    class Tokenizer:
        max_cache_size = 0                  # zones from the first call's second text on

    tokenizer = Tokenizer()

    def __init__(self) -> None:
        self.open = self.most_open = 0
        self.entered = threading.Event()

    @contextlib.contextmanager
    def memory_zone(self):
        self.open += 1
        self.most_open = max(self.most_open, self.open)
        try:
            yield
        finally:
            self.open -= 1

    def pipe(self, texts, batch_size):
        self.entered.set()
        time.sleep(0.05)                    # the other threads are started and waiting by now
        return [text.upper() for text in texts]


def test_threads_sharing_one_pipeline_never_overlap_zones():
    nlp = CountingNlp()
    zoned = ZonedPipeline(nlp)
    results: dict[int, list] = {}

    def run(i: int) -> None:
        results[i] = zoned.map([f"text {i}", f"more {i}"], lambda _, doc: doc, 64)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert nlp.entered.is_set() and nlp.most_open == 1
    assert results == {i: [f"TEXT {i}", f"MORE {i}"] for i in range(4)}


@pytest.mark.slow
def test_split_sentences_gives_the_hand_split_sentences_in_a_pipeline():
    spec = load_spec("cosmos")
    stories = [Story(f"blog{i}:0", f"blog{i}", text, f"blog{i}.xml post 1") for i, text in enumerate(TEXTS)]
    with beam_test_pipeline() as p:
        kept, rejects, _ = (p | beam.Create(stories)
                            | SplitSentences(spec.sentences, spec.paragraph, shared.Shared()))
        assert_that(kept | beam.Map(lambda s: (s.story.id, s.sentences)),
                    equal_to([(f"blog{i}:0", SENTENCES[i]) for i in range(3)]), label="Kept")
        assert_that(rejects, equal_to([]), label="NoRejects")
