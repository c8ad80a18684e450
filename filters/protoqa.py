"""Pure ProtoQA curation rules: keep-or-reason predicates and the question normalisation they
work on.

Predicates return None (keep) or a reason string, as every filter in `filters/` does.
"""
from __future__ import annotations

import re
from difflib import SequenceMatcher
from functools import lru_cache
from typing import Iterable, Mapping, Optional, Sequence

# Typographic characters the fan sites use, mapped as protoqa-data's `normalized` field does.
_TYPOGRAPHY = str.maketrans({
    "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'",
    "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u2033": '"',
    "\u00a0": " ", "\u2009": " ", "\u202f": " ", "\u2013": "-", "\u2014": "-",
})
_SPACES = re.compile(r"\s+")


def straighten_typography(text: str) -> str:
    """Typographic quotes, spaces and dashes replaced by their plain ASCII forms."""
    return text.translate(_TYPOGRAPHY)


def normalize_question(text: str) -> str:
    """protoqa-data's `question.normalized`: straight quotes, plain spaces, trimmed, lowercased.

    Reproduces the `normalized` field of every row of the released scraped dev file.
    """
    return _SPACES.sub(" ", straighten_typography(text)).strip().lower()


def excluded_class(normalized: str, classes: Mapping[str, Sequence[str]]) -> Optional[str]:
    """`excluded_{class}` when the question matches one of an excluded class's patterns."""
    for name, patterns in classes.items():
        if any(re.search(p, normalized) for p in patterns):
            return f"excluded_{name}"
    return None


def omitted(question_id: str, normalized: str, omitted_ids: Iterable[str],
            omitted_questions: Iterable[str] = ()) -> Optional[str]:
    """`omitted` when the id, or the normalised question, is on an omitted list."""
    if question_id in set(omitted_ids) or normalized in set(omitted_questions):
        return "omitted"
    return None


def answer_problem(answers: Mapping[str, int], min_answers: int,
                   max_total: Optional[int]) -> Optional[str]:
    """`too_few_answers`, `bad_count` (negative or not an integer) or `answers_over_total`."""
    if len(answers) < min_answers:
        return "too_few_answers"
    if any(not isinstance(c, int) or isinstance(c, bool) or c < 0 for c in answers.values()):
        return "bad_count"
    if max_total is not None and sum(answers.values()) > max_total:
        return "answers_over_total"
    return None


def flag_reason(question_id: str, normalized: str, flagged_ids: Iterable[str],
                patterns: Mapping[str, Sequence[str]]) -> str:
    """Why a question is potentially problematic ("" when it is not); it is kept either way."""
    reasons = []
    if question_id in set(flagged_ids):
        reasons.append("listed")
    reasons += [name for name, pats in patterns.items()
                if any(re.search(p, normalized) for p in pats)]
    return ",".join(reasons)


def coverage_problem(coverage: float, min_coverage: float) -> Optional[str]:
    """`low_coverage` unless the coverage is MORE than `min_coverage` (the paper's wording)."""
    return None if coverage > min_coverage else "low_coverage"


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.replace("'", ""))


@lru_cache(maxsize=1)
def _function_words() -> frozenset:
    from spacy.lang.en.stop_words import STOP_WORDS  # a word list only; no model is loaded

    return frozenset(w.replace("'", "") for w in STOP_WORDS)


def same_question(a: str, b: str, min_ratio: float = 0.6) -> bool:
    """Confirm a MinHash near-duplicate pair of normalised questions.

    Character shingles cannot tell "name a famous bob" from "name a famous joan", so the words
    that differ must be function words only ("at" / "in") or spelling variants of each other
    ("does not" / "doesnt": difflib ratio of the joined differing words >= `min_ratio`).
    """
    wa, wb = _words(a), _words(b)
    only_a = [w for w in wa if w not in set(wb)]
    only_b = [w for w in wb if w not in set(wa)]
    if not only_a and not only_b:
        return True
    function = _function_words()
    if all(w in function for w in only_a + only_b):
        return True
    return SequenceMatcher(None, "".join(only_a), "".join(only_b)).ratio() >= min_ratio
