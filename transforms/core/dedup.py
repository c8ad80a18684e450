"""Near-duplicate removal by MinHash LSH, shared by ReCoRD's articles and ProtoQA's questions.

Each element's signature is cut into bands, elements meeting in a band bucket are compared, and
an element is dropped when it is similar to one with a smaller id. The global step groups by
band bucket, so no worker ever holds the corpus.
"""
from __future__ import annotations

import hashlib
from typing import Any, Callable, Iterator, Optional, Sequence

import apache_beam as beam
import numpy as np

from transforms.core.accounting import Reject
from transforms.core.stages import Stage

DEDUP_NEAR = "dedup_near"

def lsh_bands(threshold: float, num_perm: int) -> tuple[int, int]:
    """(bands, rows) that datasketch's MinHashLSH picks for this threshold and permutation count."""
    from datasketch import MinHashLSH

    lsh = MinHashLSH(threshold=threshold, num_perm=num_perm)
    return lsh.b, lsh.r

class MinHasher:
    """MinHash signatures and LSH band keys of shingle sets (datasketch, seeded by the spec)."""

    def __init__(self, threshold: float, num_perm: int, seed: int):
        self.threshold = threshold
        self.num_perm = num_perm
        self.seed = seed
        self.bands, self.rows = lsh_bands(threshold, num_perm)
        self._template: Any = None

    def signature(self, grams: set[bytes]) -> Optional[np.ndarray]:
        from datasketch import MinHash

        if not grams:
            return None
        if self._template is None:  # permutations are derived from the seed once, then reused
            self._template = MinHash(num_perm=self.num_perm, seed=self.seed)
        minhash = self._template.copy()
        minhash.update_batch(sorted(grams))
        return minhash.hashvalues

    def band_keys(self, signature: np.ndarray) -> list[str]:
        keys = []
        for band in range(self.bands):
            chunk = signature[band * self.rows : (band + 1) * self.rows]
            keys.append(f"{band}:{hashlib.sha1(chunk.tobytes()).hexdigest()[:20]}")
        return keys

def similarity(a: np.ndarray, b: np.ndarray) -> float:
    """Estimated Jaccard similarity of two MinHash signatures."""
    return float(np.mean(a == b))

Member = tuple[str, np.ndarray, Any]   # (id, signature, payload for `confirm`)

def near_duplicates_in_bucket(members: Sequence[Member], threshold: float, max_bucket: int,
                              confirm: Optional[Callable[[Any, Any], bool]] = None
                              ) -> Iterator[tuple[str, str]]:
    """(dropped id, kept id) for each member similar to a member with a smaller id.

    Similar: estimated Jaccard >= threshold and, when given, `confirm(payload, other payload)`.
    Members are compared with the smaller ids before them; past `max_bucket` members only the
    first `max_bucket` are used as references, so one degenerate bucket cannot go quadratic.
    """
    ordered = sorted({m[0]: m for m in members}.values(), key=lambda m: m[0])
    for j, (doc_id, signature, payload) in enumerate(ordered):
        for other_id, other, other_payload in ordered[: min(j, max_bucket)]:
            if similarity(signature, other) >= threshold and (
                    confirm is None or confirm(payload, other_payload)):
                yield doc_id, other_id
                break

class SignFn(beam.DoFn):
    """Emit (band key, (id, signature, payload)) for each LSH band of an element's MinHash."""

    def __init__(self, hasher: MinHasher, shingles: Callable[[Any], set[bytes]],
                 key: Callable[[Any], str], payload: Callable[[Any], Any]):
        self._hasher, self._shingles, self._key, self._payload = hasher, shingles, key, payload

    def process(self, element: Any) -> Iterator[tuple[str, Member]]:
        signature = self._hasher.signature(self._shingles(element))
        if signature is None:
            return
        for band_key in self._hasher.band_keys(signature):
            yield band_key, (self._key(element), signature, self._payload(element))

def _mark_or_keep(grouped: tuple[str, dict[str, list]], stage: str) -> Iterator[Any]:
    record_id, groups = grouped
    for element in groups["elements"]:
        if groups["similar_to"]:
            yield Reject(stage, "near_duplicate", record_id, f"similar to {min(groups['similar_to'])}")
        else:
            yield element

class DropNearDuplicates(beam.PTransform):
    """MinHash LSH near-duplicate removal keeping the smallest id of each similar pair.

    `shingles(element)` gives the element's shingle set and `key(element)` its id; `confirm`
    (on `payload(element)`s) can veto a pair the estimate calls similar. Returns
    `(kept, rejects, tallies)` of stage `stage`.
    """

    def __init__(self, threshold: float, num_perm: int, seed: int,
                 shingles: Callable[[Any], set[bytes]], key: Callable[[Any], str],
                 stage: str = DEDUP_NEAR, max_bucket: int = 2000,
                 payload: Callable[[Any], Any] = lambda _: None,
                 confirm: Optional[Callable[[Any, Any], bool]] = None):
        super().__init__()
        self._hasher = MinHasher(threshold, num_perm, seed)
        self._shingles, self._key, self._payload, self._confirm = shingles, key, payload, confirm
        self._stage, self._max_bucket = stage, max_bucket

    def expand(self, elements):
        threshold, max_bucket, confirm = self._hasher.threshold, self._max_bucket, self._confirm
        key, stage = self._key, self._stage
        similar = (
            elements
            | "SignAndBand" >> beam.ParDo(SignFn(self._hasher, self._shingles, key, self._payload))
            | "GroupByBand" >> beam.GroupByKey()
            | "CompareInBucket" >> beam.FlatMap(
                lambda kv: near_duplicates_in_bucket(list(kv[1]), threshold, max_bucket, confirm))
        )
        grouped = ({"elements": elements | "KeyById" >> beam.Map(lambda e: (key(e), e)),
                    "similar_to": similar}
                   | "JoinMarks" >> beam.CoGroupByKey())
        return grouped | "Decide" >> Stage(stage, lambda g: _mark_or_keep(g, stage),
                                           units=lambda g: len(g[1]["elements"]))
