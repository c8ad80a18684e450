"""Cosmos QA predicates (paper §2): keep (`None`) or a reason string. Pure, Beam-free."""
from __future__ import annotations

from typing import Sequence

from filters import KEEP, Verdict


def story_length(n_words: int, minimum: int) -> Verdict:
    """A story needs at least `minimum` whitespace words to hold one paragraph."""
    if n_words == 0:
        return "empty_story"
    return KEEP if n_words >= minimum else "story_too_short"


def sentence_length(n_words: int, maximum: int) -> Verdict:
    """A sentence longer than a whole paragraph may be cannot be placed in one."""
    return KEEP if n_words <= maximum else "sentence_too_long"


def paragraph_length(n_words: int, minimum: int, maximum: int) -> Verdict:
    """Paragraphs hold `minimum`..`maximum` whitespace words (paper: 30-150)."""
    if n_words < minimum:
        return "paragraph_too_short"
    return KEEP if n_words <= maximum else "paragraph_too_long"


def question_set(question: str, correct: Sequence[str], incorrect: Sequence[str],
                 max_correct: int, n_incorrect: int) -> Verdict:
    """A written set: a question, 1..max_correct correct and exactly n_incorrect incorrect answers."""
    if not question.strip():
        return "empty_question"
    if not correct:
        return "no_correct_answer"
    if len(correct) > max_correct:
        return "too_many_correct_answers"
    if len(incorrect) < n_incorrect:
        return "too_few_incorrect_answers"
    if len(incorrect) > n_incorrect:
        return "too_many_incorrect_answers"
    keys = [a.strip().lower() for a in (*correct, *incorrect)]
    if len(set(keys)) != len(keys):
        return "duplicate_answers"
    return KEEP


def validation(judgements: int, required: int, intended: int, min_intended: int,
               all_satisfied: bool) -> Verdict:
    """Paper §2.3: valid when >= min_intended workers chose an intended answer and every worker
    judged the paragraph sensible and the question sensible and related."""
    if judgements < required:
        return "too_few_validations"
    if not all_satisfied:
        return "judged_unsatisfactory"
    return KEEP if intended >= min_intended else "answer_not_agreed"
