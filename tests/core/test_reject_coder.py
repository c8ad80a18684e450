"""`RejectCoder`: the compact, deterministic Beam coder of `Reject`."""
import pickle

import apache_beam as beam
import pytest
from apache_beam import coders
from apache_beam.testing.util import assert_that, equal_to

from transforms.core.accounting import Reject
from transforms.core.coders import RejectCoder

REJECTS = [
    Reject("read", "undecodable", "a" * 40, "cnn/stories/x.story"),
    Reject("sentence_filter", "no_entity", "0f3a#s12", "Mr Smith said \u201cno\u201d \u2014 caf\u00e9 \U0001F600"),
    Reject("annotate", "annotation_error", "id", ""),          # empty detail (the default)
    Reject("", "", "", ""),
    Reject("s", "r", "with\0nul", "line\nbreak\ttab " * 300),  # NUL, control characters, long
]


@pytest.mark.parametrize("reject", REJECTS)
def test_round_trip_exact(reject):
    coder = RejectCoder()
    assert coder.decode(coder.encode(reject)) == reject
    impl = coder.get_impl()
    assert impl.decode_nested(impl.encode_nested(reject)) == reject


def test_nested_values_keep_their_boundaries():
    """Inside a tuple or a list each reject is length-delimited: neighbours decode intact."""
    pair = coders.TupleCoder([RejectCoder(), RejectCoder()])
    assert pair.decode(pair.encode((REJECTS[1], REJECTS[3]))) == (REJECTS[1], REJECTS[3])
    listed = coders.IterableCoder(RejectCoder())
    assert list(listed.decode(listed.encode(REJECTS))) == REJECTS


def test_encoding_is_the_four_strings():
    """By hand: each string as a varint length and its UTF-8 bytes; the last one, outside any
    nesting, without its length (Beam's tuple coding)."""
    assert RejectCoder().encode(Reject("a", "bb", "ccc", "dé")) == b"\x01a\x02bb\x03cccd\xc3\xa9"
    assert RejectCoder().get_impl().encode_nested(Reject("a", "", "c", "")) == b"\x01a\x00\x01c\x00"


def test_smaller_than_pickling_a_sentence_reject():
    reject = Reject("sentence_filter", "no_entity", "0123456789abcdef0123456789abcdef01234567#s12", "x" * 140)
    # 15 + 9 + 44 + 140 characters and three one-byte lengths
    assert len(RejectCoder().encode(reject)) == 15 + 9 + 44 + 140 + 3
    assert len(RejectCoder().encode(reject)) < len(pickle.dumps(reject)) - 90


def test_registered_and_deterministic():
    coder = coders.registry.get_coder(Reject)
    assert isinstance(coder, RejectCoder)
    assert coder.is_deterministic()
    assert coder == RejectCoder() and hash(coder) == hash(RejectCoder())
    assert pickle.loads(pickle.dumps(coder)) == coder
    assert coder.to_type_hint() is Reject


def test_typed_flatten_uses_it_and_rejects_arrive_intact(test_pipeline):
    """A Flatten declared to hold `Reject`s gets the coder, and every reject arrives, equal to what was sent, after crossing a
    grouping."""
    with test_pipeline as p:
        first = p | "First" >> beam.Create(REJECTS[:2])
        second = p | "Second" >> beam.Create(REJECTS[2:])
        flat = (first, second) | beam.Flatten().with_output_types(Reject)
        assert isinstance(coders.registry.get_coder(flat.element_type), RejectCoder)
        regrouped = (flat | beam.Map(lambda r: (r.stage, r)) | beam.GroupByKey()
                     | beam.FlatMap(lambda kv: kv[1]))
        assert_that(regrouped, equal_to(REJECTS))
