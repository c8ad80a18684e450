"""Stored annotations as Beam steps: the rows `csdata record annotate` writes for reuse (each with
the article's MinHash signature and its entities after the NER post-rules), and the one read of a
stored output that a generate run makes (the rows for `Annotate`'s join, the signatures for
near-duplicate removal).

What a row holds and when it matches an article is `transforms.record.annotate.store`.
"""
from __future__ import annotations

from typing import Any, Iterator, Optional

import apache_beam as beam

from transforms.core.dedup import SIGNATURE_SIDE, MinHasher
from transforms.record.annotate.store import TABLE
from transforms.record.annotate.stored import STORED_SIDE, UNIT_COLUMNS, matching_paths, parquet_rows
from transforms.record.article import Article
from transforms.record.curate import shingles

# The tagged output of `ReadStoredAnnotations` that carries the signatures.
SIGNATURE_OUTPUT = "signatures"


class ReadStoredAnnotations(beam.PTransform):
    """The rows stored under `path` (a `csdata record annotate` output), keyed for `Annotate`'s
    join (`stored.keyed_stored_rows`), and on the SIGNATURE_OUTPUT output the MinHash signatures made
    as `key` says, keyed for `DropNearDuplicates` (`stored.keyed_stored_signatures`): one read."""

    def __init__(self, path: str, key: str):
        super().__init__()
        self._path, self._key = path.rstrip("/"), key

    def expand(self, pbegin):
        # Listed when the pipeline is built: `Create` spreads several shards over workers itself.
        shards = matching_paths(f"{self._path}/{TABLE}/*.parquet")
        return (pbegin | "Shards" >> beam.Create(shards)
                | "Read" >> beam.FlatMap(stored_rows_and_signatures, self._key)
                .with_outputs(SIGNATURE_OUTPUT, main="rows"))


def stored_rows_and_signatures(path: str, key: str) -> Iterator[Any]:
    """`keyed_stored_rows` of one shard, and its `keyed_stored_signatures` on SIGNATURE_OUTPUT (the
    signature columns left out of the rows)."""
    for row in parquet_rows(path, (*UNIT_COLUMNS, "minhash_key", "minhash")):
        made, signature = row.pop("minhash_key", None), row.pop("minhash", None)
        if made == key and signature:
            yield beam.pvalue.TaggedOutput(SIGNATURE_OUTPUT, (row["article_id"], (SIGNATURE_SIDE, (row["text_hash"], signature))))
        yield row["article_id"], (STORED_SIDE, row)


def article_signature(article: Article, hasher: MinHasher, size: int) -> list[int]:
    """The MinHash signature near-duplicate removal computes for `article` ([] without words)."""
    signature = hasher.signature(shingles(article, size))
    return [] if signature is None else [int(v) for v in signature]


def article_minhash(article: Article, hasher: Optional[MinHasher], key: str, size: int
                    ) -> tuple[str, list[int]]:
    """`(minhash_key, signature)` of an article for its annotation row; `("", [])` without a
    hasher (near-duplicate removal off)."""
    return (key, article_signature(article, hasher, size)) if hasher is not None else ("", [])
