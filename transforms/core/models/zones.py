"""spaCy calls whose memory does not grow with the corpus: `ZonedPipeline`.

spaCy keeps the string and the lexeme of every new word it meets in its vocabulary for the life
of the pipeline, so a worker that annotates a corpus grows with the corpus' vocabulary (on real
blog posts, en_core_web_sm's `senter` kept 107,000 new strings over 20,000 posts, and its process
grew 89 MiB and kept growing). Inside `nlp.memory_zone()` the words first seen in the zone are
freed when it ends, and every doc made inside becomes invalid: callers turn each doc into plain
values inside the call.
"""
from __future__ import annotations

import threading
from typing import Any, Callable, Optional, Sequence, TypeVar

T = TypeVar("T")


class ZonedPipeline:
    """A spaCy pipeline (`nlp`) run in memory zones once its tokenizer cache could be warm.

    spaCy fills its tokenizer cache only outside zones, and every word a zone frees is built
    again in the next one. So the first texts a process sees run outside zones until their
    distinct words could fill the cache (`nlp.tokenizer.max_cache_size`, a fixed size): the
    cache and the vocabulary are then warm, and what they keep is bounded by that size, not by
    the corpus. Every later call runs inside a zone.

    One instance may be shared by a worker's bundle threads: calls take a lock, because zones
    must not overlap.
    """

    def __init__(self, nlp: Any):
        self.nlp = nlp
        # The distinct words seen outside zones until they could fill the tokenizer cache;
        # None once they could.
        self._warm_words: Optional[set[str]] = set()
        self._lock = threading.Lock()

    def map(self, texts: Sequence[str], read: Callable[[str, Any], T], batch_size: int) -> list[T]:
        """`read(text, doc)` for each text in order, with `doc` spaCy's doc of `text`.

        `read` must return values that do not refer to the doc (texts, offsets, labels): a doc
        made inside a zone is invalid once the call returns.
        """
        with self._lock:
            warm, zoned = self._warm_split(texts)
            results = self._read(warm, read, batch_size)
            if zoned:
                with self.nlp.memory_zone():
                    results += self._read(zoned, read, batch_size)
        return results

    def _read(self, texts: Sequence[str], read: Callable[[str, Any], T], batch_size: int) -> list[T]:
        return [read(text, doc) for text, doc in zip(texts, self.nlp.pipe(texts, batch_size=batch_size))]

    def _warm_split(self, texts: Sequence[str]) -> tuple[Sequence[str], Sequence[str]]:
        """`texts` cut in two: those to run outside a zone, then those to run inside one."""
        seen = self._warm_words
        if seen is None:
            return (), texts
        budget = self.nlp.tokenizer.max_cache_size
        for i, text in enumerate(texts):
            seen.update(text.split())
            if len(seen) >= budget:
                self._warm_words = None
                return texts[: i + 1], texts[i + 1:]
        return texts, ()
