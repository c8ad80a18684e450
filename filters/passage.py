"""Passage filters of ReCoRD stage 1 (§3.1)."""
from __future__ import annotations

from typing import Iterable

from filters import KEEP, Verdict


def min_body_tokens(tokens: int, minimum: int) -> Verdict:
    """Keep passages whose body has at least `minimum` tokens."""
    return KEEP if tokens >= minimum else "passage_too_short"


def min_distinct_entities(chains: Iterable[int], minimum: int) -> Verdict:
    """Keep passages naming at least `minimum` different entities (coreference chains)."""
    return KEEP if len(set(chains)) >= minimum else "too_few_entities"
