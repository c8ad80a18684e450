"""The spec sections every dataset shares: near-duplicate removal (ReCoRD's articles, ProtoQA's
questions), the size limits on files other people made, and the output tables' sharding."""
from __future__ import annotations

from pydantic import model_validator

from data_specs.models.base import Count, Flag, Fraction, Positive, SpecModel, min_le_max


class NearDuplicatesSection(SpecModel):
    """MinHash-LSH near-duplicate removal: ReCoRD §3.1 (news article curation: article bodies as
    word shingles) and ProtoQA's question curation (scraped questions as character shingles of
    the normalised text). Of items judged similar, the one with the smallest id is kept and the
    others are `near_duplicate` rejects."""

    enabled: Flag
    """Run near-duplicate removal at all; `false` keeps every near duplicate."""
    threshold: Fraction
    """Estimated Jaccard similarity of two items' shingle sets at or above which they are near
    duplicates (also the LSH banding's target threshold)."""
    num_perm: Positive
    """MinHash permutations per signature: more estimate the Jaccard similarity more closely, at
    more hashing work and memory."""
    shingle_size: Positive
    """Length of a shingle: lowercased words in ReCoRD, characters in ProtoQA (questions are
    short)."""
    max_bucket: Positive
    """Members of one LSH bucket compared with every later member; past it, later members are
    compared only against the first `max_bucket`, so a degenerate bucket cannot go quadratic."""


class OutputSection(SpecModel):
    """Sharding of the Parquet / JSONL tables a run writes, and how often a run keeps its model
    results for a rerun after a kill (engineering only, no paper rule)."""

    num_shards: Count
    """Files per output table; 0 lets the runner decide, a fixed number writes exactly that many
    shards per table (empty ones added when needed)."""
    resume_every: Positive
    """Model results per piece of resumable work (docs/storage.md, Resume after a kill): a worker
    writes a piece when it holds this many, or 30 s after its first; a kill loses at most that
    much of each worker's model work."""


class LimitsSection(SpecModel):
    """Size limits on files other people made (crowd results CSV / JSON, annotator sheets,
    protoqa-data JSONL): a field or record beyond them is a reject with its reason
    (`field_too_large`, `record_too_large`) and the rest of the file is still read; a file read
    whole beyond `max_file_bytes` is one error. Real crowd answers stay far below (under 2 KB)."""

    max_field_bytes: Positive
    """Largest single CSV cell or JSON string, in UTF-8 bytes; must not exceed `max_record_bytes`."""
    max_record_bytes: Positive
    """Largest single CSV row, JSONL line or Label Studio task, in bytes; must not exceed
    `max_file_bytes`."""
    max_file_bytes: Positive
    """Largest file read whole (a JSON export, an .xlsx workbook uncompressed), in bytes."""

    @model_validator(mode="after")
    def _bounds(self) -> LimitsSection:
        min_le_max(self, "max_field_bytes", "max_record_bytes")
        min_le_max(self, "max_record_bytes", "max_file_bytes")
        return self

