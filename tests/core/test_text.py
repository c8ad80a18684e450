"""The decoding policy shared by every reader (hand-made byte strings)."""
from transforms.core.io.text import Decoded, Undecodable, clean_string, decode_bytes, decode_text


def test_utf8_and_bom():
    assert decode_bytes("café".encode()) == Decoded("café", "utf-8")
    assert decode_bytes(b"\xef\xbb\xbfcaf\xc3\xa9") == Decoded("café", "utf-8-sig")
    assert decode_bytes(b"\xef\xbb\xbfcaf\xe9") == Decoded("café", "cp1252")   # BOM, then not UTF-8


def test_cp1252_then_latin1_unless_strict():
    assert decode_bytes(b"it\x92s") == Decoded("it’s", "cp1252")          # 0x92: right quote in cp1252
    assert decode_bytes(b"caf\xe9 \x81") == Decoded("café \x81", "latin-1")  # 0x81 is undefined in cp1252
    assert decode_bytes(b"it\x92s \x81") == Decoded("it’s \x81", "latin-1")   # 0x92 still a quote
    assert decode_text(b"it\x92s \x81") == Decoded("it’s ", "latin-1", 1)      # the C1 byte removed
    refused = decode_bytes(b"caf\xe9", "strict")
    assert isinstance(refused, Undecodable) and refused.reason == "not_utf8"


def test_control_characters_removed_or_rejected():
    assert decode_text(b"a\x00b\tc\r\nd\x1b") == Decoded("ab\tc\r\nd", "utf-8", 2)
    refused = decode_text(b"a\x00b", controls="reject")
    assert isinstance(refused, Undecodable) and refused.reason == "control_characters"
    assert clean_string("x\ufeffy\u00a0z") == Decoded("xy\u00a0z", "utf-8", 1)   # NBSP is text, a BOM is not
