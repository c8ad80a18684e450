"""ReCoRD predicates: the passage filters (§3.1) and the query-sentence filters (§3.2)."""
from __future__ import annotations

from typing import Collection, Iterable, Sequence

from filters import KEEP, Verdict
from filters.text import word_ngrams


def min_body_tokens(tokens: int, minimum: int) -> Verdict:
    """Keep passages whose body has at least `minimum` tokens."""
    return KEEP if tokens >= minimum else "passage_too_short"


def min_distinct_entities(chains: Iterable[int], minimum: int) -> Verdict:
    """Keep passages naming at least `minimum` different entities (coreference chains)."""
    return KEEP if len(set(chains)) >= minimum else "too_few_entities"


def min_tokens(tokens: list[str], minimum: int) -> Verdict:
    """Keep sentences with at least `minimum` tokens."""
    return KEEP if len(tokens) >= minimum else "too_short"

QUESTION_RULES = ("final", "final_quoted", "any")


def not_question(text: str, rule: str = "final_quoted") -> Verdict:
    """Reject questions. `rule`: `final`, a sentence whose last character is '?' (a CoreNLP
    sentence whose last token is '?'; a question quoted at the end, `... ?"`, is kept);
    `final_quoted`, also with closing quotes and brackets after the '?'; `any`, a '?' anywhere."""
    if rule == "any":
        return "question" if "?" in text else KEEP
    if rule == "final":
        return "question" if text.rstrip().endswith("?") else KEEP
    if rule == "final_quoted":
        return "question" if text.rstrip(" \"'’”)]").endswith("?") else KEEP
    raise ValueError(f"unknown question rule {rule!r}; known: {', '.join(QUESTION_RULES)}")

def no_shared_ngram(text: str, passage_grams: Collection[tuple[str, ...]], n: int,
                    entity_spans: Sequence[tuple[int, int]] = (),
                    stopwords: Collection[str] = ()) -> Verdict:
    """Reject sentences sharing a lowercased word `n`-gram with the passage (see `word_ngrams`).

    Words inside `entity_spans` are left out: a query's entities must be named in the passage,
    so multi-word names ("West Bromwich Albion") are shared by design; the released queries
    keep such sentences.
    """
    grams = word_ngrams(text, n, entity_spans, stopwords)
    return "shares_ngram" if not grams.isdisjoint(passage_grams) else KEEP

def min_entities(chains: list[int], minimum: int) -> Verdict:
    """Keep sentences with at least `minimum` entity mentions."""
    return KEEP if len(chains) >= minimum else "no_entity"

def entities_in_passage(chains: Iterable[int], passage_chains: Collection[int]) -> Verdict:
    """Keep sentences whose every entity is coreferent with a mention in the passage."""
    return KEEP if all(c in passage_chains for c in chains) else "entity_not_in_passage"
