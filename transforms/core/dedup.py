"""Near-duplicate removal by MinHash LSH, shared by ReCoRD's articles and ProtoQA's questions.

Each element's signature is cut into bands, elements meeting in a band bucket are compared, and
an element is dropped when it is similar to one with a smaller id. The global step groups by
band bucket, so no worker ever holds the corpus.

The band buckets carry ids, not signatures: an element is in one bucket per band (9 at the
shipped threshold), so a signature in each of them would put 9 signatures an element into one
grouping (Beam's in-process runner holds a grouping's input whole in its driver, decoded, while
it sends it on). So the signatures meet only in the buckets that hold two ids or more: the buckets are
grouped with ids (`shared_bucket` names each member of a shared one), each element's signature
is joined with the shared buckets it is in, by id, once (`signed_in_shared_buckets`), and only
those buckets are grouped again with their members' signatures and compared. The verdicts are
those of comparing every bucket: a bucket of one id has no pair.
"""
from __future__ import annotations

import functools
import hashlib
import heapq
from typing import Any, Callable, Iterable, Iterator, Optional, Sequence

import apache_beam as beam
import numpy as np
from apache_beam.metrics import Metrics

from transforms.core.accounting import NAMESPACE, Reject
from transforms.core.stages import ChainedStages, Stage, StageStep, split_sides

DEDUP_NEAR = "dedup_near"

@functools.cache
def lsh_bands(threshold: float, num_perm: int) -> tuple[int, int]:
    """(bands, rows) that datasketch's MinHashLSH picks for this threshold and permutation count
    (once per process: it integrates the false positive and negative rates numerically)."""
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

    def from_values(self, values: Sequence[int]) -> np.ndarray:
        """A signature stored as plain integers, in the dtype `signature` gives (the band keys
        hash its bytes)."""
        from datasketch import MinHash

        if self._template is None:
            self._template = MinHash(num_perm=self.num_perm, seed=self.seed)
        return np.asarray(values, dtype=self._template.hashvalues.dtype)

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

def near_duplicates_in_bucket(members: Iterable[Member], threshold: float, max_bucket: int,
                              confirm: Optional[Callable[[Any, Any], bool]] = None,
                              overflow: Optional[Callable[[int], None]] = None
                              ) -> Iterator[tuple[str, str]]:
    """(dropped id, kept id) for each member similar to a member with a smaller id.

    Similar: estimated Jaccard >= threshold and, when given, `confirm(payload, other payload)`.
    Each member is compared, in id order, with the members of smaller id among the bucket's
    `max_bucket` smallest ids (the references), so one degenerate bucket can go neither
    quadratic nor into memory: `members` is read twice (a grouped value can be), once to keep
    the references and once to compare, and only the references are held. `overflow(n)` is
    told how many members had more smaller-id members than the references hold. A member met
    twice (one id) gives its pairs twice.
    """
    smallest: dict[str, Member] = {}
    for member in members:
        if member[0] in smallest:
            continue
        smallest[member[0]] = member
        if len(smallest) > 2 * max_bucket:          # trim now and then, not per member
            smallest = dict(heapq.nsmallest(max_bucket, smallest.items(), key=lambda kv: kv[0]))
    references = sorted(smallest.values(), key=lambda m: m[0])[:max_bucket]
    full = len(references) == max_bucket
    last = references[-1][0] if references else ""
    cut = 0
    for doc_id, signature, payload in members:
        if full and doc_id > last:
            cut += 1
        for other_id, other, other_payload in references:
            if other_id >= doc_id:
                break
            if similarity(signature, other) >= threshold and (
                    confirm is None or confirm(payload, other_payload)):
                yield doc_id, other_id
                break
    if cut and overflow is not None:
        overflow(cut)

ELEMENT, SIMILAR_TO, SIGNATURE_SIDE = 0, 1, 2     # which side of a join a keyed value comes from
SIGNED, SHARED_BUCKET = 3, 4    # the sides of the join of signatures with their shared buckets
KEYED = "keyed"
SIGNATURES = "signatures"


def banded(hasher: MinHasher, record_id: str, signature: Optional[np.ndarray], payload: Any) -> Iterator[Any]:
    """`(band key, id)` for each LSH band of `signature`, and `(id, (SIGNED, (signature,
    payload)))` once on the SIGNATURES output (nothing without a signature)."""
    if signature is None:
        return
    yield beam.pvalue.TaggedOutput(SIGNATURES, (record_id, (SIGNED, (signature, payload))))
    for band_key in hasher.band_keys(signature):
        yield band_key, record_id


def shared_bucket(bucket: tuple[str, Iterable[str]]) -> Iterator[tuple[str, tuple[int, str]]]:
    """`(id, (SHARED_BUCKET, band key))` for each member of a bucket that holds two ids or more
    (a member met twice, twice): only such a bucket can hold a pair. The ids are read twice (a
    grouped value can be), never held."""
    band_key, ids = bucket
    first = None
    for record_id in ids:
        if first is None:
            first = record_id
        elif record_id != first:
            break
    else:
        return
    for record_id in ids:
        yield record_id, (SHARED_BUCKET, band_key)


def signed_in_shared_buckets(grouped: tuple[str, Iterable[tuple[int, Any]]],
                             hasher: MinHasher) -> Iterator[tuple[str, Member]]:
    """`(band key, (id, signature, payload))` for each shared bucket (`shared_bucket`) an id's
    signature is in: an id's signatures joined with the shared buckets of that id. A bucket is
    matched with the signature's own band keys, so that two elements of one id go each to its
    own buckets."""
    record_id, values = grouped
    signed, buckets = split_sides(values, SIGNED)
    if not buckets:
        return
    shared = set(buckets)
    for signature, payload in signed:
        for band_key in hasher.band_keys(signature):
            if band_key in shared:
                yield band_key, (record_id, signature, payload)


class SignFn(beam.DoFn):
    """Emit `(band key, id)` for each LSH band of an element's MinHash, its signature once on the
    SIGNATURES output (`banded`), and `(id, (ELEMENT, element))` on the KEYED output, for the
    join with the verdicts (a DoFn for the tagged outputs: one step instead of keying steps)."""

    def __init__(self, hasher: MinHasher, shingles: Optional[Callable[[Any], set[bytes]]],
                 key: Callable[[Any], str], payload: Callable[[Any], Any],
                 signature: Optional[Callable[[Any], Optional[np.ndarray]]] = None):
        self._hasher, self._shingles, self._key, self._payload = hasher, shingles, key, payload
        self._signature = signature

    def process(self, element: Any) -> Iterator[Any]:
        record_id = self._key(element)
        yield beam.pvalue.TaggedOutput(KEYED, (record_id, (ELEMENT, element)))
        if self._signature is not None:
            signature = self._signature(element)
        else:
            assert self._shingles is not None
            signature = self._hasher.signature(self._shingles(element))
        yield from banded(self._hasher, record_id, signature,
                          None if signature is None else self._payload(element))


class SignWithStoredFn(beam.DoFn):
    """Like `SignFn`, on an id's element joined with signatures made earlier (`(SIGNATURE_SIDE,
    (content key, signature values))` values): a signature whose content key is the element's
    is used, otherwise the signature is computed. Emits what `SignFn` emits."""

    def __init__(self, hasher: MinHasher, shingles: Callable[[Any], set[bytes]],
                 key: Callable[[Any], str], payload: Callable[[Any], Any],
                 content_key: Callable[[Any], str]):
        self._hasher, self._shingles, self._key, self._payload = hasher, shingles, key, payload
        self._content_key = content_key

    def process(self, grouped: tuple[str, Iterable[tuple[int, Any]]]) -> Iterator[Any]:
        record_id, values = grouped
        elements, made = split_sides(values, ELEMENT)
        stored: dict[str, Sequence[int]] = dict(made)   # content key -> signature values
        for element in elements:
            yield beam.pvalue.TaggedOutput(KEYED, (record_id, (ELEMENT, element)))
            values_made = stored.get(self._content_key(element))
            if values_made:
                signature: Optional[np.ndarray] = self._hasher.from_values(values_made)
            else:
                signature = self._hasher.signature(self._shingles(element))
            yield from banded(self._hasher, record_id, signature,
                              None if signature is None else self._payload(element))


def _mark_or_keep(grouped: tuple[str, Iterable[tuple[int, Any]]], stage: str) -> Iterator[Any]:
    record_id, values = grouped
    elements, similar_to = split_sides(values, ELEMENT)
    for element in elements:
        if similar_to:
            yield Reject(stage, "near_duplicate", record_id, f"similar to {min(similar_to)}")
        else:
            yield element


def _element_count(grouped: tuple[str, Iterable[tuple[int, Any]]]) -> int:
    return sum(1 for side, _ in grouped[1] if side == ELEMENT)


class DropNearDuplicates(beam.PTransform):
    """MinHash LSH near-duplicate removal keeping the smallest id of each similar pair.

    `shingles(element)` gives the element's shingle set and `key(element)` its id; `confirm`
    (on `payload(element)`s) can veto a pair the estimate calls similar. Returns
    `(kept, rejects, tallies)` of stage `stage`.

    `signatures`, `(id, (SIGNATURE_SIDE, (content key, signature values)))` pairs made earlier with the same
    threshold, permutations and seed (stored annotations), are used for the elements whose
    `content_key(element)` they carry, instead of hashing their shingles again.

    `signature(element)`, when given, is the element's signature made earlier with the same
    threshold, permutations and seed (None: no shingles), instead of `shingles`: for elements
    that carry their signature and not their text.

    `then`: stages applied to each kept element in the same step as the verdict (`ChainedStages`:
    one step fewer per stage); their rejects and tallies join this stage's, and the kept values
    are those of the last one.
    """

    def __init__(self, threshold: float, num_perm: int, seed: int,
                 shingles: Optional[Callable[[Any], set[bytes]]], key: Callable[[Any], str],
                 stage: str = DEDUP_NEAR, max_bucket: int = 2000,
                 payload: Callable[[Any], Any] = lambda _: None,
                 confirm: Optional[Callable[[Any, Any], bool]] = None,
                 signatures: Optional[beam.PCollection] = None,
                 content_key: Optional[Callable[[Any], str]] = None,
                 then: Sequence[StageStep] = (),
                 signature: Optional[Callable[[Any], Optional[np.ndarray]]] = None):
        super().__init__()
        self._signature = signature
        self._then = tuple(then)
        if signatures is not None and content_key is None:
            raise ValueError("stored signatures need content_key")
        if shingles is None and (signature is None or signatures is not None):
            raise ValueError("without shingles, every element needs its signature (signature=)")
        self._hasher = MinHasher(threshold, num_perm, seed)
        self._shingles, self._key, self._payload, self._confirm = shingles, key, payload, confirm
        self._stage, self._max_bucket = stage, max_bucket
        self._signatures, self._content_key = signatures, content_key

    def expand(self, elements):
        threshold, max_bucket, confirm = self._hasher.threshold, self._max_bucket, self._confirm
        key, stage = self._key, self._stage
        content_key = self._content_key
        hasher = self._hasher
        if self._signatures is None or content_key is None or self._shingles is None:
            signed = elements | "SignAndBand" >> beam.ParDo(
                SignFn(hasher, self._shingles, key, self._payload, self._signature)
            ).with_outputs(KEYED, SIGNATURES, main="bands")
        else:
            signed = ((elements | "KeyById" >> beam.Map(lambda e: (key(e), (ELEMENT, e))), self._signatures)
                      | "FlattenSignatures" >> beam.Flatten() | "JoinSignatures" >> beam.GroupByKey()
                      | "SignAndBand" >> beam.ParDo(SignWithStoredFn(
                          hasher, self._shingles, key, self._payload, content_key))
                      .with_outputs(KEYED, SIGNATURES, main="bands"))
        bands, keyed, signatures = signed.bands, signed[KEYED], signed[SIGNATURES]
        # Buckets of ids first; signatures go only to the buckets that hold two ids or more.
        shared = bands | "GroupByBand" >> beam.GroupByKey() | "SharedBuckets" >> beam.FlatMap(shared_bucket)
        similar = (
            (signatures, shared)
            | "FlattenShared" >> beam.Flatten()
            | "JoinShared" >> beam.GroupByKey()
            | "SignShared" >> beam.FlatMap(signed_in_shared_buckets, hasher)
            | "GroupBySharedBand" >> beam.GroupByKey()
            | "CompareInBucket" >> beam.FlatMap(
                lambda kv: ((dropped, (SIMILAR_TO, kept)) for dropped, kept in
                            near_duplicates_in_bucket(kv[1], threshold, max_bucket, confirm,
                                                      overflow=Metrics.counter(NAMESPACE, f"{stage}.bucket_overflow").inc)))
        )
        # A plain GroupByKey over both sides: what CoGroupByKey does, without its tagging steps.
        grouped = (keyed, similar) | "FlattenMarks" >> beam.Flatten() | "JoinMarks" >> beam.GroupByKey()
        decide = StageStep(stage, lambda g: _mark_or_keep(g, stage), units=_element_count)
        if not self._then:
            return grouped | "Decide" >> Stage(stage, decide.fn, units=decide.units)
        return grouped | "Decide" >> ChainedStages([decide, *self._then])
