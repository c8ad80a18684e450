"""External annotation backends the ReCoRD paper used: AllenNLP, stanza and DeepMind's metadata.

Each backend turns one tool's output for an article into a `DocumentAnnotation` whose character
offsets index `transforms.article.article_document(article)`. This module holds what they share:
attaching named-entity mentions to coreference clusters, and chain numbering.

The rule (used by `allennlp` and `stanza_backend`): an entity mention whose span equals or lies
inside a cluster mention takes that cluster's chain (the tightest enclosing cluster mention
wins; ties go to the earliest cluster). An entity mention in no cluster joins the cluster whose
entity mentions all share its normalised text (one such cluster only), else it is chained with
the other unclustered mentions of the same normalised text, else it stands alone.
"""
from __future__ import annotations

import re
from typing import Hashable, Iterable, Sequence

from transforms.record.annotation import DocumentAnnotation

Span = tuple[int, int]
LabelledSpan = tuple[int, int, str]

_SPACES = re.compile(r"\s+")
_EDGE_PUNCT = "\"'“”‘’`()[]{}.,;:!?-–— "
_POSSESSIVE = ("'s", "’s")


def normalise_text(text: str) -> str:
    """The key unclustered mentions are matched on: casefolded, spaces collapsed, no edge
    punctuation and no possessive ending ("Obama's" == "obama")."""
    key = _SPACES.sub(" ", text).strip().casefold()
    for suffix in _POSSESSIVE:
        if key.endswith(suffix) and len(key) > len(suffix):
            key = key[: -len(suffix)]
    return key.strip(_EDGE_PUNCT)


def renumber(keys: Sequence[Hashable]) -> tuple[int, ...]:
    """Chain ids 0.. in order of first appearance of each key."""
    ids: dict[Hashable, int] = {}
    return tuple(ids.setdefault(key, len(ids)) for key in keys)


def chain_mentions(text: str, mentions: Iterable[LabelledSpan],
                   clusters: Sequence[Sequence[Span]],
                   sentences: Sequence[Span] = ()) -> DocumentAnnotation:
    """Attach entity `mentions` (character spans in `text`) to coreference `clusters`.

    `clusters[k]` lists the character spans of cluster k. Returns mentions sorted by
    (start, end) and deduplicated, chains numbered by first appearance (see the module rule).
    """
    ordered = sorted(set(mentions), key=lambda m: (m[0], m[1], m[2]))
    # Drop the same span tagged twice with different labels: keep the first label.
    unique: list[LabelledSpan] = []
    for mention in ordered:
        if not unique or unique[-1][:2] != mention[:2]:
            unique.append(mention)
    keys: list[Hashable] = []
    for start, end, _ in unique:
        best = None  # (length, cluster index)
        for k, cluster in enumerate(clusters):
            for c_start, c_end in cluster:
                if c_start <= start and end <= c_end:
                    candidate = (c_end - c_start, k)
                    if best is None or candidate < best:
                        best = candidate
        keys.append(("cluster", best[1]) if best is not None else None)
    texts = [normalise_text(text[start:end]) for start, end, _ in unique]
    by_text: dict[str, set[Hashable]] = {}
    for key, norm in zip(keys, texts):
        if key is not None:
            by_text.setdefault(norm, set()).add(key)
    for i, (key, norm) in enumerate(zip(keys, texts)):
        if key is None:
            clustered = by_text.get(norm, set())
            if len(clustered) == 1 and norm:
                keys[i] = next(iter(clustered))
            else:
                keys[i] = ("text", norm) if norm else ("alone", i)
    return DocumentAnnotation(mentions=tuple(unique), chains=renumber(keys),
                              sentences=tuple(sentences))
