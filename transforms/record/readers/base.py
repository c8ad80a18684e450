"""What every machine reader shares: triples, candidates, the random baseline, the `Reader`
interface and pickled models (see `transforms.record.readers` for the readers themselves)."""
from __future__ import annotations

import io
import pickle
from dataclasses import dataclass
from typing import Any, Iterable, Optional, Protocol, Sequence

from transforms.core.progress.lines import TaskLog
from transforms.record.metric import normalize_answer

PLACEHOLDER = "@placeholder"


@dataclass(frozen=True)
class Triple:
    """A passage-query-answers triple with the passage's entity mentions (end inclusive)."""

    query_id: str
    passage_id: str
    passage: str
    body_end: int
    entities: tuple[tuple[int, int, str, str], ...]   # (start, end inclusive, text, label)
    query: str
    answers: tuple[str, ...]
    fold: int = 0


@dataclass(frozen=True)
class Candidate:
    """One candidate answer: the distinct (normalised) entity text with all its mentions."""

    text: str
    label: str
    mentions: tuple[tuple[int, int], ...]   # (start, end exclusive) in the passage


def candidates(triple: Triple) -> list[Candidate]:
    """The passage's candidate entities in order of first mention, merged by normalised text."""
    return merge_candidates(triple.entities)


def merge_candidates(entities: Iterable[tuple[int, int, str, str]]) -> list[Candidate]:
    """Candidates from `(start, end inclusive, text, label)` mentions, merged by normalised text."""
    merged: dict[str, list] = {}
    for start, end, text, label in sorted(entities):
        key = normalize_answer(text)
        if not key:
            continue
        entry = merged.setdefault(key, [text, label, []])
        entry[2].append((start, end + 1))
    return [Candidate(text, label, tuple(mentions)) for text, label, mentions in merged.values()]


def correct_flags(triple: Triple, cands: Sequence[Candidate]) -> list[bool]:
    """Which candidates are a correct answer (normalised exact match with any reference)."""
    gold = {normalize_answer(a) for a in triple.answers}
    return [normalize_answer(c.text) in gold for c in cands]


def random_baseline(triple: Triple) -> float:
    """Expected exact-match accuracy of a uniform guess among the triple's candidates."""
    cands = candidates(triple)
    return sum(correct_flags(triple, cands)) / len(cands) if cands else 0.0


class Reader(Protocol):
    """Trains on triples and answers queries by picking a candidate entity.

    `prepare` turns a triple into the compact example the reader trains and predicts on; it
    runs in parallel before the per-fold grouping, so groups carry examples, not passages.
    """

    name: str

    def prepare(self, triple: Triple) -> Any:
        ...

    def fit(self, examples: Sequence[Any], log: Optional[TaskLog] = None) -> Any:
        """Train on examples of the other folds; return the fitted model. A long training says
        what it does, and how far it got, through `log`."""
        ...

    def predict(self, model: Any, examples: Sequence[Any]) -> list[str]:
        """The chosen answer text per example."""
        ...

    def save(self, model: Any) -> bytes:
        ...

    def load(self, blob: bytes) -> Any:
        ...


class PickleModels:
    """`save`/`load` by pickling, for readers whose models are plain Python/scikit-learn objects."""

    def save(self, model: Any) -> bytes:
        return pickle.dumps(model, protocol=pickle.HIGHEST_PROTOCOL)

    def load(self, blob: bytes) -> Any:
        return pickle.load(io.BytesIO(blob))
