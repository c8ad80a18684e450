"""The one text-decoding policy of every reader (news stories, JSONL rows, blog files, questions).

1. UTF-8, with a leading byte-order mark stripped: `encoding = "utf-8"` (`"utf-8-sig"` when a
   BOM was there).
2. Otherwise, under the `lenient` policy (the default), Windows-1252 when every byte maps in it
   (`encoding = "cp1252"`), else latin-1 for the five bytes cp1252 leaves undefined and cp1252 for
   the rest (`encoding = "latin-1"`; it never fails); the encoding is kept per record so users can
   filter. Under `strict`, the record is rejected as `not_utf8`.
3. Control characters (NUL and the other C0/C1 controls except tab, newline and carriage return;
   also a BOM inside the text) are removed (`remove`, the default: the record is kept and its
   `control_chars` count says how many were dropped) or make the record a reject (`reject`:
   reason `control_characters`).
"""
from __future__ import annotations

import codecs
import re
from dataclasses import dataclass
from typing import Literal

Policy = Literal["lenient", "strict"]
ControlPolicy = Literal["remove", "reject"]

NOT_UTF8 = "not_utf8"
CONTROL_CHARACTERS = "control_characters"

_BOM = b"\xef\xbb\xbf"
_LATIN1_HANDLER = "csdata-latin-1"


def _as_latin1(error: UnicodeError) -> tuple[str, int]:
    assert isinstance(error, UnicodeDecodeError)
    return error.object[error.start:error.end].decode("latin-1"), error.end


codecs.register_error(_LATIN1_HANDLER, _as_latin1)
# C0 controls but \t \n \r, DEL, C1 controls, and a stray BOM / zero-width no-break space.
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ufeff]")


@dataclass(frozen=True)
class Decoded:
    """A decoded payload: its text, the encoding it was read with, and the controls removed."""

    text: str
    encoding: str
    control_chars: int = 0


@dataclass(frozen=True)
class Undecodable:
    """Why a payload was not turned into text: a reject reason and a one-line detail."""

    reason: str
    detail: str


def decode_bytes(payload: bytes, policy: Policy = "lenient") -> Decoded | Undecodable:
    """Bytes to text by the policy above (control characters untouched)."""
    bom = payload.startswith(_BOM)
    if bom:   # dropped whatever the rest turns out to be
        payload = payload[len(_BOM):]
    try:
        return Decoded(payload.decode("utf-8"), "utf-8-sig" if bom else "utf-8")
    except UnicodeDecodeError as error:
        first_error = error
    if policy == "strict":
        return Undecodable(NOT_UTF8, str(first_error)[:200])
    try:
        return Decoded(payload.decode("cp1252"), "cp1252")
    except UnicodeDecodeError:
        # The five bytes cp1252 leaves undefined (0x81 0x8d 0x8f 0x90 0x9d) read as latin-1; every
        # other byte keeps its cp1252 meaning, so 0x92 stays a quote rather than a C1 control.
        return Decoded(payload.decode("cp1252", errors=_LATIN1_HANDLER), "latin-1")


def clean_controls(decoded: Decoded, policy: ControlPolicy = "remove") -> Decoded | Undecodable:
    """Remove the control characters of decoded text, or refuse it, by `policy`."""
    found = len(_CONTROL.findall(decoded.text))
    if not found:
        return decoded
    if policy == "reject":
        return Undecodable(CONTROL_CHARACTERS, f"{found} control characters (e.g. NUL)")
    return Decoded(_CONTROL.sub("", decoded.text), decoded.encoding, decoded.control_chars + found)


def decode_text(payload: bytes, policy: Policy = "lenient",
                controls: ControlPolicy = "remove") -> Decoded | Undecodable:
    """`decode_bytes` then `clean_controls`: what every reader calls on a raw record."""
    decoded = decode_bytes(payload, policy)
    if isinstance(decoded, Undecodable):
        return decoded
    return clean_controls(decoded, controls)


def clean_string(value: str, controls: ControlPolicy = "remove") -> Decoded | Undecodable:
    """`clean_controls` for a string that is already text (a JSON field)."""
    return clean_controls(Decoded(value, "utf-8"), controls)
