"""The last sample through parts (`transforms.cosmos.blog_sample`): the per-blog grouping carries
places, and the kept paragraphs are read back from the parts they were written to."""
from __future__ import annotations

import apache_beam as beam
from apache_beam.testing.util import assert_that, equal_to

from tests.conftest import beam_test_pipeline
from tests.groupings import assert_no_grouping_carries
from transforms.core.accounting import Reject
from transforms.cosmos.blog_sample import PlacedParagraph, SampleFromParts, decide_blog, sample_paragraphs
from transforms.cosmos.segment import Paragraph

SEED = 11


def paragraph(blog: str, story: str, number: int, text: str = "") -> Paragraph:
    pid = f"{story}#p{number}"
    return Paragraph(blog, story, pid, text or f"The text of {pid}.", 0, 2, 0.1, 0.2, f"{blog}.xml")


def test_a_blog_keeps_its_first_places_in_order():
    # Hand-made order keys: c (0.1) and a (0.3) come first; b (0.5) is not sampled.
    placed = [PlacedParagraph((0.3, "a"), "a", "part-1", 0), PlacedParagraph((0.5, "b"), "b", "part-1", 1),
              PlacedParagraph((0.1, "c"), "c", "part-2", 4)]
    outcomes = list(decide_blog(("blog", placed), per_blog=2))
    assert outcomes[:2] == [("part-2", 4), ("part-1", 0)]
    assert isinstance(outcomes[2], Reject) and (outcomes[2].reason, outcomes[2].record_id) == ("not_sampled", "b")


def test_the_parts_give_the_rows_of_the_grouped_sample(tmp_path):
    # 30 blogs of 1 to 6 paragraphs, and a byte-identical copy of one blog's paragraphs (the
    # Blog Authorship Corpus has identical files): the same kept paragraphs as grouping them,
    # each copy kept at most once per kept place, and in = kept + rejected.
    paragraphs = [paragraph(f"b{b}", f"b{b}/s{s}", n) for b in range(30) for s in range(1 + b % 3)
                  for n in range(1 + b % 2)]
    paragraphs += [p for p in paragraphs if p.blog_id == "b5"]
    expected = []
    for blog in sorted({p.blog_id for p in paragraphs}):
        for mode in ("before_scoring",):
            expected += [p for p in sample_paragraphs((blog, [p for p in paragraphs if p.blog_id == blog]), SEED, 2, mode)
                         if isinstance(p, Paragraph)]
    p = beam_test_pipeline()
    kept, rejects, tallies = (p | beam.Create(paragraphs)
                              | SampleFromParts(str(tmp_path / "work"), SEED, 2, "before_scoring"))
    assert_that(kept, equal_to(expected), label="Kept")
    assert_that(tallies | beam.CombinePerKey(sum) | beam.combiners.ToDict()
                | beam.Map(lambda t: (t[("sample", "in")], t[("sample", "kept")] + t[("sample", "rejected.not_sampled")])),
                equal_to([(len(paragraphs), len(paragraphs))]), label="Balanced")
    checked = assert_no_grouping_carries(p, "The text of", skip=("Create", "Kept", "Balanced"))
    p.run().wait_until_finish()
    assert checked >= 2     # by blog, by part (and the tallies)
    assert len(expected) == 2 * 30 - sum(1 for b in range(30) if (1 + b % 3) * (1 + b % 2) < 2)
