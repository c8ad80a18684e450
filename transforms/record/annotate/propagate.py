"""The names a small NER model missed, found again: later exact occurrences of a name it found
elsewhere in the article (`propagate_names`), and the bound on a passage's entities whatever the
rest of its article holds (`passage_entity_bound`), by which the spaCy backend skips rests that
cannot change any row.
"""
from __future__ import annotations

import bisect
import functools
import re
from typing import Sequence

from transforms.record.annotation import Mention


def propagate_names(mentions: list[Mention], segments: Sequence[str], surnames: bool = False,
                    contained: bool = False) -> list[Mention]:
    """Add the mentions the NER missed: later exact occurrences of a name it found elsewhere.

    ReCoRD lists every mention of the answer entity, and a small NER model tags "Cosby" in one
    sentence but not the next. Names are matched case-sensitively on word boundaries, longest
    first, never overlapping a mention; names of fewer than 3 characters or without a capital
    letter are not propagated. With `surnames` (NER rule `surnames`), the surnames of PERSON
    names (`person_surnames`) are propagated too, as PERSON. With `contained` (NER rule
    `contained`), an occurrence may replace mentions lying strictly inside it ("the Duchess of
    Cornwall" found elsewhere replaces "Cornwall" tagged alone), never one it only overlaps;
    it is a PERSON when a mention it replaces was.
    Returns the mentions in reading order.
    """
    by_segment: dict[int, list[Mention]] = {}
    for m in mentions:
        by_segment.setdefault(m.segment, []).append(m)
    names: dict[str, str] = {}
    for m in mentions:
        if _propagated(m.text):
            names.setdefault(m.text, m.label)
    if surnames:
        for name in person_surnames(mentions, segments):
            names.setdefault(name, "PERSON")
    occurrences = NameFinder(segments)
    for name in sorted(names, key=len, reverse=True):
        for segment, start, end in occurrences(name):
            present = by_segment.setdefault(segment, [])
            clashes = [m for m in present if not (end <= m.start or start >= m.end)]
            inside = all(start <= m.start and m.end <= end and m.end - m.start < end - start
                         for m in clashes)
            if not clashes or (contained and inside):
                present[:] = [m for m in present if m not in clashes]
                # A name with a person inside is a person's ("Wambui Njoroge" inside
                # "Grace Wambui Njoroge" tagged ORG elsewhere): keep PERSON for the chains.
                person = any(m.label == "PERSON" for m in clashes)
                present.append(Mention(segment, start, end, name,
                                       "PERSON" if person else names[name]))
    added = [m for ms in by_segment.values() for m in ms]
    return sorted(added, key=lambda m: (m.segment, m.start, m.end))


class NameFinder:
    """`finder(name)`: the occurrences of `name` in `segments` on word boundaries, as
    (segment, start, end) in reading order: what `_name_pattern(name).finditer` finds in each
    segment (non-overlapping, left to right; a word character is what `_WORD` matches). All
    segments are searched joined, with `str.find`, not with a regex per (name, segment) pair:
    an article has tens of names and of segments."""

    def __init__(self, segments: Sequence[str]):
        self._joined = "\n".join(segments)   # "\n" is not a word character: bounds stay bounds
        self._starts: list[int] = []
        self._ends: list[int] = []
        at = 0
        for text in segments:
            self._starts.append(at)
            self._ends.append(at + len(text))
            at += len(text) + 1

    def __call__(self, name: str) -> list[tuple[int, int, int]]:
        found: list[tuple[int, int, int]] = []
        joined, size = self._joined, len(name)
        at = joined.find(name)
        while at >= 0:
            end = at + size
            segment = bisect.bisect_right(self._starts, at) - 1
            if (end <= self._ends[segment] and not (at and _WORD.match(joined[at - 1]))
                    and not (end < len(joined) and _WORD.match(joined[end]))):
                start = self._starts[segment]
                found.append((segment, at - start, end - start))
                at = joined.find(name, end)
            else:
                at = joined.find(name, at + 1)
        return found


def person_surnames(mentions: Sequence[Mention], segments: Sequence[str]) -> list[str]:
    """Surnames worth propagating: the last word of each PERSON mention of two words or more
    (titles aside), capitalised and alphabetic, 3 letters or more, and never written in lower
    case in the article (so "Young" or "Rose" as plain words are left alone)."""
    lowered = "\n".join(segments)
    out: dict[str, None] = {}
    for m in mentions:
        if m.label != "PERSON":
            continue
        words = m.text.split()
        if len(words) < 2:
            continue
        last = words[-1]
        # The substring test first: the regex only where the lower-case word occurs at all.
        if (last not in out and len(last) >= 3 and last.isalpha() and last[0].isupper()
                and not last.isupper() and (last.lower() not in lowered
                                            or not _name_pattern(last.lower()).search(lowered))):
            out[last] = None
    return list(out)


@functools.lru_cache(maxsize=4096)
def _name_pattern(name: str) -> re.Pattern:
    """`name` on word boundaries (not inside a longer word)."""
    return re.compile(r"(?<!\w)" + re.escape(name) + r"(?!\w)")


def _propagated(name: str) -> bool:
    """Whether `propagate_names` propagates a name (3 characters or more, a capital letter)."""
    return len(name) >= 3 and any(ch.isupper() for ch in name)


_WORD = re.compile(r"\w")


def _free(spans: Sequence[tuple[int, int]], start: int, end: int) -> bool:
    return all(end <= a or start >= b for a, b in spans)


def passage_entity_bound(passage: Sequence[str], mentions: Sequence[Mention], rest: Sequence[str],
                         propagate: bool, surnames: bool = False) -> int:
    """An upper bound on the passage's distinct chains, whatever the NER finds in the rest.

    `passage` are the passage segments (body, highlights) and `mentions` their mentions. Chains
    are at most the passage mentions: these plus, with `propagate`, the names `propagate_names`
    adds. Each added mention is a span of a passage segment, on word boundaries, free of
    mentions, of 3 characters or more with a capital, that is the name of a passage mention or
    occurs in the rest (a rest mention's text). Such spans do not overlap, and each one starts
    with a minimal such span (the shortest one from its start occurring in the rest, or the
    name itself), so the most non-overlapping minimal spans bound them.
    """
    if not propagate:
        return len(mentions)
    rest_text = "\n".join(rest)
    names = {m.text for m in mentions if _propagated(m.text)}
    if surnames:   # the surnames of the passage's names (those of the rest occur in the rest)
        names |= set(person_surnames(mentions, passage))
    candidates: list[tuple[int, int, int]] = []   # (end, start, segment)
    taken_in = [[(m.start, m.end) for m in mentions if m.segment == segment]
                for segment in range(len(passage))]
    occurrences = NameFinder(passage)
    for name in names:
        for segment, start, end in occurrences(name):
            if _free(taken_in[segment], start, end):
                candidates.append((end, start, segment))
    for segment, text in enumerate(passage):
        taken = taken_in[segment]
        for start in range(len(text)):
            if start and _WORD.match(text[start - 1]):
                continue
            for end in range(start + 1, len(text) + 1):
                if end < len(text) and _WORD.match(text[end]):
                    continue
                piece = text[start:end]
                if len(piece) < 3:
                    continue
                # A longer span from `start` holds this one: it overlaps and occurs no more.
                if not _free(taken, start, end) or piece not in rest_text:
                    break
                if any(ch.isupper() for ch in piece):
                    candidates.append((end, start, segment))
                    break
    chosen = 0
    last_end: dict[int, int] = {}
    for end, start, segment in sorted(candidates):
        if start >= last_end.get(segment, 0):
            chosen += 1
            last_end[segment] = end
    return len(mentions) + chosen
