"""Compact deterministic Beam coders for the per-element types that cross steps in volume.

Beam codes an element of an untyped PCollection with its `FastPrimitivesCoder`, which pickles
any class it does not know, each element carrying the class's path, the field names and
pickle's opcodes. `RejectCoder` writes only the four strings, and is registered for `Reject` when
this module is imported, so a PCollection declared to hold `Reject`s
(`.with_output_types(Reject)`) is coded with it: the local runner moves a fused stage's whole
output as one data-channel message, and rejects are many at corpus scale (sizes:
docs/benchmarks.md#what-keeps-a-workers-memory-flat). ReCoRD's generators write each stage's
rejects in that stage (`sinks.WriteTables` parts); they cross steps, with this coder, where a
fixed `output.num_shards` flattens them.
"""
from __future__ import annotations

from typing import Any

from apache_beam import coders
from apache_beam.coders import coder_impl
from apache_beam.coders.coders import FastCoder

from transforms.core.accounting import Reject


class _RejectCoderImpl(coder_impl.StreamCoderImpl):
    """A `Reject` as the tuple of its four strings, each UTF-8 with a length prefix."""

    def __init__(self) -> None:
        self._strings = coders.TupleCoder([coders.StrUtf8Coder()] * 4).get_impl()

    def encode_to_stream(self, value: Reject, stream: Any, nested: bool) -> None:
        self._strings.encode_to_stream((value.stage, value.reason, value.record_id, value.detail),
                                       stream, nested)

    def decode_from_stream(self, stream: Any, nested: bool) -> Reject:
        stage, reason, record_id, detail = self._strings.decode_from_stream(stream, nested)
        return Reject(stage, reason, record_id, detail)


class RejectCoder(FastCoder):
    """Deterministic coder of `Reject`: its stage, reason, record id and detail as strings."""

    def _create_impl(self) -> _RejectCoderImpl:
        return _RejectCoderImpl()

    def is_deterministic(self) -> bool:
        return True

    def to_type_hint(self) -> type:
        return Reject

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other)

    def __hash__(self) -> int:
        return hash(type(self))


coders.registry.register_coder(Reject, RejectCoder)
