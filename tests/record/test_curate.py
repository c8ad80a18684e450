"""Stage 1 transforms: duplicate ids, MinHash LSH near duplicates, passage split rejects."""
import apache_beam as beam
import numpy as np
from apache_beam.pipeline import PipelineVisitor
from apache_beam.testing.util import assert_that, equal_to

from tests.conftest import beam_test_pipeline
from transforms.core.accounting import Reject
from transforms.core.dedup import (
    SHARED_BUCKET,
    SIGNED,
    DropNearDuplicates,
    MinHasher,
    lsh_bands,
    near_duplicates_in_bucket,
    shared_bucket,
    signed_in_shared_buckets,
)
from transforms.core.stages import StageStep, Summarize
from transforms.record.article import Article
from transforms.record.curate import DropDuplicateIds, shingles, split_article

WORDS = ("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november "
         "oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu").split()


def article(article_id: str, words, origin: str = "") -> Article:
    return Article(id=article_id, paragraphs=(" ".join(words),), highlights=("h",), origin=origin)


def test_shingles_are_lowercased_word_ngrams():
    assert shingles(article("a", ["A", "b", "C", "d"]), 3) == {b"a b c", b"b c d"}


def test_lsh_bands_cover_the_signature():
    bands, rows = lsh_bands(0.8, 128)
    assert bands * rows <= 128 and bands > 1


def test_bucket_comparison_keeps_the_smallest_id():

    same = np.arange(10, dtype=np.uint64)
    other = np.arange(10, 20, dtype=np.uint64)
    pairs = list(near_duplicates_in_bucket([("c", same, "x"), ("a", same, "y"), ("b", other, "z")], 0.8, 100))
    assert pairs == [("c", "a")]
    vetoed = near_duplicates_in_bucket([("c", same, "x"), ("a", same, "y")], 0.8, 100, confirm=str.__eq__)
    assert list(vetoed) == []


def test_a_big_bucket_compares_with_its_smallest_ids_only_and_counts_the_cut():
    same = np.arange(10, dtype=np.uint64)
    other = np.arange(10, 20, dtype=np.uint64)
    # Ids m0..m5, arriving out of order; references: the 2 smallest ids (m0, m1). m0 is unlike
    # the rest, so m1 matches nothing before it; m2..m5 match m1. m2..m5 had more smaller ids
    # than the 2 references: 4 members cut.
    members = [(f"m{i}", other if i == 0 else same, None) for i in (5, 3, 0, 4, 1, 2)]
    cut: list[int] = []
    pairs = sorted(near_duplicates_in_bucket(members, 0.8, 2, overflow=cut.append))
    assert pairs == [("m2", "m1"), ("m3", "m1"), ("m4", "m1"), ("m5", "m1")]
    assert cut == [4]
    # Within the bound nothing is cut.
    cut.clear()
    assert sorted(near_duplicates_in_bucket(members, 0.8, 100, overflow=cut.append)) == pairs
    assert cut == []


def test_duplicate_ids_keep_one_copy_and_take_url_metadata():
    with beam_test_pipeline() as p:
        arts = p | beam.Create([article("x", WORDS, "f1"), article("x", WORDS, "f2"),
                                article("y", WORDS[:5], "f3")])
        urls = p | "Urls" >> beam.Create([("x", ("http://www.cnn.com/x", "CNN", "train"))])
        kept, rejects, _ = arts | DropDuplicateIds(urls)
        assert_that(kept | beam.Map(lambda a: (a.id, a.url, a.split)),
                    equal_to([("x", "http://www.cnn.com/x", "train"), ("y", "", "")]))
        assert_that(rejects | "R" >> beam.Map(lambda r: (r.stage, r.reason, r.record_id)),
                    equal_to([("dedup_exact", "duplicate_id", "x")]), label="rejects")


def test_near_duplicates_drop_the_larger_id_only():
    base = WORDS * 3
    edited = list(base)
    edited[40] = "changed"
    unrelated = list(reversed(WORDS)) * 3
    with beam_test_pipeline() as p:
        arts = p | beam.Create([article("b", edited), article("a", base), article("c", unrelated)])
        kept, rejects, _ = arts | DropNearDuplicates(0.8, 128, 1, shingles=lambda a: shingles(a, 5),
                                                     key=lambda a: a.id)
        assert_that(kept | beam.Map(lambda a: a.id), equal_to(["a", "c"]))
        assert_that(rejects | "R" >> beam.Map(lambda r: (r.reason, r.record_id, r.detail)),
                    equal_to([("near_duplicate", "b", "similar to a")]), label="rejects")


def test_only_a_bucket_of_two_ids_or_more_is_shared():
    assert list(shared_bucket(("0:k", ["a"]))) == []
    assert list(shared_bucket(("0:k", ["a", "a"]))) == []    # one id met twice has no pair
    assert list(shared_bucket(("0:k", ["b", "a", "b"]))) == [
        ("b", (SHARED_BUCKET, "0:k")), ("a", (SHARED_BUCKET, "0:k")), ("b", (SHARED_BUCKET, "0:k"))]


def test_a_signature_goes_to_its_own_shared_buckets_only():
    hasher = MinHasher(0.8, 128, 1)
    signature = hasher.signature(shingles(article("a", WORDS * 3), 5))
    other = hasher.signature(shingles(article("a", list(reversed(WORDS)) * 3), 5))
    keys = hasher.band_keys(signature)
    # Two elements of one id: the shared bucket (and a repeated mark of it) is the first's only.
    values = [(SHARED_BUCKET, keys[2]), (SIGNED, (signature, "p")), (SIGNED, (other, "q")),
              (SHARED_BUCKET, keys[2])]
    (found,) = signed_in_shared_buckets(("a", values), hasher)
    assert found[0] == keys[2] and found[1][0] == "a" and found[1][1] is signature and found[1][2] == "p"
    assert list(signed_in_shared_buckets(("a", [(SIGNED, (signature, None))]), hasher)) == []


class _Inputs(PipelineVisitor):
    """The inputs of the steps whose full label ends with `suffix`."""

    def __init__(self, suffix: str) -> None:
        self.suffix, self.inputs = suffix, []

    def visit_transform(self, node) -> None:
        if node.full_label.endswith(self.suffix):
            self.inputs.extend(node.inputs)


def test_the_band_buckets_carry_ids_not_signatures():
    base = WORDS * 3
    edited = list(base)
    edited[40] = "changed"
    p = beam_test_pipeline()
    arts = p | beam.Create([article("b", edited), article("a", base), article("c", list(reversed(WORDS)) * 3)])
    kept, _, _ = arts | "Near" >> DropNearDuplicates(0.8, 128, 1, shingles=lambda a: shingles(a, 5),
                                                     key=lambda a: a.id)
    found = _Inputs("/GroupByBand")
    p.visit(found)
    (bands,) = found.inputs
    # (band key, id): one per band of each article, never its signature.
    assert_that(bands | beam.Map(lambda kv: type(kv[1]).__name__), equal_to(["str"] * 3 * lsh_bands(0.8, 128)[0]),
                label="ids")
    assert_that(kept | beam.Map(lambda a: a.id), equal_to(["a", "c"]))
    p.run().wait_until_finish()


def test_stages_chained_after_the_near_duplicate_verdict_keep_their_own_accounting(tmp_path):
    import json

    base = WORDS * 3
    edited = list(base)
    edited[40] = "changed"
    path = str(tmp_path / "summary.json")
    second = StageStep("second", lambda a: [Reject("second", "unwanted", a.id)] if a.id == "c" else [a.id])
    with beam_test_pipeline() as p:
        arts = p | beam.Create([article("b", edited), article("a", base),
                                article("c", list(reversed(WORDS)) * 3)])
        kept, rejects, tallies = arts | DropNearDuplicates(
            0.8, 128, 1, shingles=lambda a: shingles(a, 5), key=lambda a: a.id, then=[second])
        assert_that(kept, equal_to(["a"]))
        assert_that(rejects | "R" >> beam.Map(lambda r: (r.stage, r.reason, r.record_id)),
                    equal_to([("dedup_near", "near_duplicate", "b"), ("second", "unwanted", "c")]),
                    label="rejects")
        tallies | Summarize(path, ["dedup_near", "second"], few=True)
    stages = json.load(open(path))["stages"]
    # b is a near duplicate of a; of the two kept, the chained stage rejects c.
    assert stages["dedup_near"] == {"in": 3, "kept": 2, "rejected": {"near_duplicate": 1}, "balanced": True}
    assert stages["second"] == {"in": 2, "kept": 1, "rejected": {"unwanted": 1}, "balanced": True}


def test_split_rejects_name_their_reason():
    short = Article(id="s", paragraphs=("too short",), highlights=("h",))
    no_highlights = Article(id="n", paragraphs=("x " * 200,), highlights=())
    only_passage = Article(id="o", paragraphs=("x " * 200,), highlights=("h",))
    reasons = [r.reason for a in (short, no_highlights, only_passage)
               for r in split_article(a, "shortest_leading", 100, 50)]
    assert reasons == ["passage_too_short", "no_highlights", "no_rest"]
    assert all(isinstance(r, Reject) for a in (short,) for r in split_article(a, "shortest_leading", 100, 50))
