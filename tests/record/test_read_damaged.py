"""Damaged inputs at the read stage: cut archives, files that are not what they say, odd
encodings, control characters, wrong JSON field types, over-long texts. Each is a named reject
of stage `read`; nothing crashes and nothing vanishes."""
from __future__ import annotations

import gzip
import io
import json
import logging

import apache_beam as beam
import pytest
from apache_beam.testing.util import assert_that, equal_to

from data_specs import load_spec
from tests.conftest import beam_test_pipeline
from tests.record.damaged import (
    DAMAGED,
    GZIP_CUT_SHORT,
    gzip_cut_after,
    long_row,
    member_offsets,
    story_files,
    tar_bytes,
    write_cut_tgz,
)
from transforms.record.formats import read_url_list, url_to_id
from transforms.record.raw_records import iter_raw_records
from transforms.record.read import ReadArticles, parse_raw_record

STORY = b"First paragraph.\n\nSecond paragraph.\n\n@highlight\n\nA highlight"


def section(*overrides: str):
    return load_spec("record", list(overrides)).input


def split(path: str, data: bytes) -> tuple[list[str], list[tuple[str, str]]]:
    """The origins of the story / JSON records of a file, and its (reason, detail) rejects."""
    kept, rejected = [], []
    for kind, origin, payload in iter_raw_records(path, io.BytesIO(data)):
        if kind == "reject":
            assert origin == path
            rejected.append(tuple(json.loads(payload)))
        else:
            kept.append(origin)
    return kept, rejected


def parse(kind: str, origin: str, payload: bytes, *overrides: str) -> list:
    return list(parse_raw_record((kind, origin, payload), section(*overrides)))


def one_reject(results: list) -> tuple[str, str, str, str]:
    [reject] = results
    return reject.stage, reason_of(reject), reject.record_id, reject.detail


def reason_of(result) -> str:
    return getattr(result, "reason", "kept")


# ---- archives ---------------------------------------------------------------------------------


MEMBERS = ["cnn/stories/kiln-reopens.story", "cnn/stories/marathon-volunteers.story",
           "cnn/stories/observatory-dome.story"]


def test_a_sound_archive_gives_every_story_and_no_reject():
    raw = tar_bytes(story_files())
    assert split("a.tgz", gzip.compress(raw)) == ([f"a.tgz!{m}" for m in MEMBERS], [])
    assert split("a.tar", raw) == ([f"a.tar!{m}" for m in MEMBERS], [])


def test_a_gzip_cut_short_keeps_the_stories_before_the_cut():
    kept, rejected = split("cut.tgz", gzip_cut_after(tar_bytes(story_files()), keep=2))
    assert kept == [f"cut.tgz!{m}" for m in MEMBERS[:2]]
    assert rejected == [("truncated_archive",
                         f"2 members read before the damage (2 stories kept): EOFError: {GZIP_CUT_SHORT}")]


def test_a_gzip_cut_before_the_first_member_is_one_reject():
    data = gzip.compress(tar_bytes(story_files()))
    assert split("cut.tgz", data[:40]) == ([], [(
        "truncated_archive", f"0 members read before the damage (0 stories kept): EOFError: {GZIP_CUT_SHORT}")])


def test_a_gzip_missing_only_its_trailer_keeps_all_stories_and_says_so():
    data = gzip.compress(tar_bytes(story_files()))
    kept, rejected = split("cut.tgz", data[:-4])     # the 4-byte length of the gzip trailer gone
    assert kept == [f"cut.tgz!{m}" for m in MEMBERS]
    assert rejected == [("truncated_archive",
                         f"3 members read before the damage (3 stories kept): EOFError: {GZIP_CUT_SHORT}")]


def test_a_plain_tar_cut_between_members_is_not_taken_for_a_complete_archive():
    raw = tar_bytes(story_files())
    cut = raw[: member_offsets(raw)[1]]              # tarfile alone would end quietly here
    assert split("cut.tar", cut) == ([f"cut.tar!{MEMBERS[0]}"], [(
        "truncated_archive", "1 member read before the damage (1 story kept): "
                             "ReadError: the archive ends without its end-of-archive blocks")])


def test_a_plain_tar_cut_inside_a_story():
    raw = tar_bytes(story_files())
    cut = raw[: member_offsets(raw)[1] + 512 + 100]  # the header of member 2 and 100 bytes of it
    assert split("cut.tar", cut) == ([f"cut.tar!{MEMBERS[0]}"], [(
        "truncated_archive", "1 member read before the damage (1 story kept): ReadError: unexpected end of data")])


def test_bzip2_and_xz_archives_are_read_and_their_cuts_found():
    import bz2
    import lzma

    raw = tar_bytes(story_files())
    for name, compress in (("a.tar.bz2.tgz", bz2.compress), ("a.tar.xz.tgz", lzma.compress)):
        data = compress(raw)
        assert split(name, data) == ([f"{name}!{m}" for m in MEMBERS], [])
        kept, [(reason, detail)] = split(name, data[:-10])
        assert reason == "truncated_archive" and "EOFError" in detail


@pytest.mark.parametrize("data, detail", [
    ((DAMAGED / "cnn_stories_plain.tgz").read_bytes(), "not a tar archive"),
    (b"", "not a tar archive (empty file)"),
    (b"short", "not a tar archive"),
    (gzip.compress(b"plain words, gzip-compressed, but no tar inside " * 30, mtime=0),
     "not a tar archive (gzip data that is not tar)"),
], ids=["plain-tar", "empty", "short", "gzip-not-tar"])
def test_a_file_named_tgz_that_is_no_archive_is_unsupported(data, detail):
    assert split("cnn_stories.tgz", data) == ([], [("unsupported_file", detail)])


def test_a_sound_archive_without_stories_is_an_empty_archive():
    only_questions = tar_bytes([("cnn/questions/a.question", b"not a story")])
    assert split("q.tgz", gzip.compress(only_questions)) == (
        [], [("empty_archive", "no .story member among 1 member")])
    assert split("none.tar", tar_bytes([])) == ([], [("empty_archive", "no .story member among 0 members")])


def test_an_io_error_of_the_file_system_is_raised_not_taken_for_damage():
    class Failing(io.BytesIO):
        def read(self, size=-1):
            raise OSError("connection reset")

    with pytest.raises(OSError, match="connection reset"):
        list(iter_raw_records("a.tgz", Failing(gzip.compress(tar_bytes(story_files())))))
    with pytest.raises(OSError, match="connection reset"):
        list(iter_raw_records("a.jsonl.gz", Failing(b"")))


def test_a_jsonl_gz_cut_short_keeps_its_lines():
    lines = b"".join(json.dumps({"id": f"r{i}", "article": "Words. " * 40}).encode() + b"\n"
                     for i in range(3))
    kept, rejected = split("rows.jsonl.gz", gzip_cut_short_lines(lines, 2))
    assert kept == ["rows.jsonl.gz:1", "rows.jsonl.gz:2"]
    assert rejected == [("truncated_file", f"2 lines read before the damage: EOFError: {GZIP_CUT_SHORT}")]
    assert split("rows.jsonl.gz", b"plain text, not gzip\n") == (
        [], [("unsupported_file", "not gzip data (Not a gzipped file (b'pl'))")])


def gzip_cut_short_lines(data: bytes, keep: int) -> bytes:
    import zlib

    at = sum(len(line) for line in data.splitlines(keepends=True)[:keep])
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    head = compressor.compress(data[:at]) + compressor.flush(zlib.Z_FULL_FLUSH)
    return head + (compressor.compress(data[at:]) + compressor.flush())[:4]


def test_an_unknown_suffix_is_still_unsupported():
    assert split("notes.txt", b"hello") == ([], [
        ("unsupported_file", "expected one of ('.story', '.jsonl', '.jsonl.gz', '.json', '.tgz', '.tar.gz', '.tar')")])


# ---- decoding -----------------------------------------------------------------------------------


def test_clean_utf8_is_read_exactly_as_before():
    [article] = parse("story", "cnn/stories/abc.story", STORY)
    assert (article.id, article.paragraphs, article.highlights, article.source, article.encoding) == (
        "abc", ("First paragraph.", "Second paragraph."), ("A highlight",), "CNN", "utf-8")
    url = "http://www.cnn.com/2015/04/02/x/index.html"
    [row] = parse("json", "f.jsonl:1", json.dumps({"url": url, "article": "One. Two."}).encode())
    assert (row.id, row.url, row.paragraphs) == (url_to_id(url), url, ("One.", "Two."))


def test_a_bom_is_stripped_and_the_encoding_kept():
    [article] = parse("story", "s/library-bom.story", (DAMAGED / "cnn/stories/library-bom.story").read_bytes())
    assert article.encoding == "utf-8-sig"
    assert article.paragraphs[0].startswith("The city council of Lindholm voted")
    [row] = parse("json", "f.jsonl:1", b'\xef\xbb\xbf{"id": "r", "article": "Text."}')
    assert (row.id, row.paragraphs, row.encoding) == ("r", ("Text.",), "utf-8-sig")


def test_a_cp1252_story_is_read_not_rejected():
    [article] = parse("story", "s/choir-cp1252.story", (DAMAGED / "cnn/stories/choir-cp1252.story").read_bytes())
    assert article.encoding == "cp1252"
    assert article.paragraphs[0].startswith("Members of the Saint Aldric Choir in Rouen celebrated the "
                                            "choir\u2019s hundredth anniversary on Sunday with a concert "
                                            "at the \u00c9glise Saint-Ouen.")
    assert article.paragraphs[1] == "\u201cIt\u2019s the biggest night in our history,\u201d Renaud told the " \
                                    "audience before the final song."


def test_strict_decoding_rejects_what_is_not_utf8():
    payload = (DAMAGED / "cnn/stories/choir-cp1252.story").read_bytes()
    stage, reason, record_id, detail = one_reject(parse("story", "s/choir.story", payload, "input.encoding=strict"))
    assert (stage, reason, record_id) == ("read", "not_utf8", "s/choir.story")
    assert "0x92" in detail


def test_nul_bytes_are_removed_or_rejected_by_the_spec():
    payload = (DAMAGED / "cnn/stories/ferry-nul.story").read_bytes()
    [article] = parse("story", "s/ferry-nul.story", payload)
    assert article.paragraphs[0].startswith("The ferry operator Nordwave Lines cancelled all crossings")
    assert article.paragraphs[0].endswith("before sailing again.")
    assert article.highlights == ("Nordwave Lines cancels crossings as storm hits the Baltic Sea",)
    assert one_reject(parse("story", "s/ferry-nul.story", payload, "input.control_chars=reject")) == (
        "read", "control_characters", "s/ferry-nul.story", "6 control characters (e.g. NUL)")


def test_json_strings_are_cleaned_after_parsing():
    line = json.dumps({"id": "r\u0000", "article": "One\u0000 two.\ufeff Three.", "highlights": ["h\x07"]})
    [row] = parse("json", "f:1", line.encode())
    assert (row.id, row.paragraphs, row.highlights) == ("r", ("One two.", "Three."), ("h",))
    assert one_reject(parse("json", "f:1", line.encode(), "input.control_chars=reject")) == (
        "read", "control_characters", "f:1", "1 control characters (e.g. NUL)")


# ---- JSONL field types --------------------------------------------------------------------------


@pytest.mark.parametrize("row, detail", [
    ({"id": "r", "article": 5, "highlights": None}, "article must be a string, got int"),
    ({"id": 42, "article": "Text."}, "id must be a string, got int"),
    ({"url": ["http://x"], "article": "Text."}, "url must be a string, got list"),
    ({"id": "r", "source": 1.5, "article": "Text."}, "source must be a string, got float"),
    ({"id": "r", "article_lines": ["One.", 7]}, "article_lines[1] must be a string, got int"),
    ({"id": "r", "article_lines": "One."}, "article_lines must be a list of strings, got str"),
    ({"id": "r", "article": "Text.", "highlights": {"a": "b"}},
     "highlights must be a string or a list of strings, got dict"),
    ({"id": "r", "article": "Text.", "highlights": ["h", None]}, "highlights[1] must be a string, got null"),
    ({"id": "r", "article": True}, "article must be a string, got bool"),
])
def test_wrong_field_types_are_named(row, detail):
    assert one_reject(parse("json", "f.jsonl:3", json.dumps(row).encode())) == (
        "read", "bad_field_type", "f.jsonl:3", detail)


def test_null_fields_count_as_absent():
    [row] = parse("json", "f:1", b'{"id": "r", "url": null, "article": "One. Two.", "highlights": null}')
    assert (row.id, row.url, row.paragraphs, row.highlights) == ("r", "", ("One.", "Two."), ())
    [row] = parse("json", "f:1", b'{"id": "r", "article_lines": null, "article": "One."}')
    assert row.paragraphs == ("One.",)
    assert one_reject(parse("json", "f:1", b'{"id": "r", "article": null}')) == (
        "read", "empty_article", "r", "f:1")


# ---- over-long texts ----------------------------------------------------------------------------


def test_an_over_long_article_is_a_quiet_reject(caplog):
    caplog.set_level(logging.DEBUG)
    results = parse("json", "long.jsonl:1", long_row(3000).encode(), "input.max_chars=3000")
    stage, reason, record_id, detail = one_reject(results)
    assert (stage, reason, record_id) == ("read", "text_too_long", "row-too-long")
    assert detail.startswith("long.jsonl:1: ") and detail.endswith(" characters, more than input.max_chars (3000)")
    assert int(detail.split(": ")[1].split()[0]) > 3000
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    # the article's story layout is measured (here the file itself): at the limit it is kept
    [article] = parse("story", "s/a.story", STORY, f"input.max_chars={len(STORY)}")
    assert article.id == "a"
    assert reason_of(parse("story", "s/a.story", STORY, f"input.max_chars={len(STORY) - 1}")[0]) == "text_too_long"


# ---- URL lists ----------------------------------------------------------------------------------


def test_url_lists_with_a_bom_give_the_same_ids(tmp_path):
    url = "http://www.cnn.com/2015/04/02/x/index.html"
    path = tmp_path / "all_train.txt"
    path.write_bytes(b"\xef\xbb\xbf" + url.encode() + b"\r\n\n" + url.encode() + b"2\n")
    assert list(read_url_list(str(path))) == [(url_to_id(url), (url, "CNN", "train")),
                                              (url_to_id(url + "2"), (url + "2", "CNN", "train"))]


# ---- the transform on the damaged corpus --------------------------------------------------------


GOOD_STORIES = ["choir-cp1252", "ferry-nul", "harbour-bridge", "library-bom", "orchard-festival"]
GOOD_ROWS = ["row-good", "row-nul-escape", "row-null-highlights"]
ROW_REJECTS = [
    ("bad_field_type", "2", "article must be a string, got int"),
    ("bad_field_type", "3", "id must be a string, got int"),
    ("bad_field_type", "4", "url must be a string, got list"),
    ("bad_field_type", "5", "article_lines[1] must be a string, got int"),
    ("bad_field_type", "6", "highlights must be a string or a list of strings, got dict"),
    ("bad_field_type", "7", "article_lines must be a list of strings, got str"),
]


def test_read_articles_on_the_damaged_corpus(tmp_path):
    cut = write_cut_tgz(tmp_path / "cnn_stories_cut.tgz")
    (tmp_path / "long.jsonl").write_text(long_row(3000) + "\n", encoding="utf-8")
    rows = str(DAMAGED / "rows.jsonl")
    inputs = [str(DAMAGED / "cnn"), rows, str(DAMAGED / "cnn_stories_plain.tgz"), str(cut),
              str(tmp_path / "long.jsonl")]
    expected_rejects = [("read", reason, f"{rows}:{line}", detail) for reason, line, detail in ROW_REJECTS] + [
        ("read", "malformed_json", f"{rows}:9", "Invalid control character at: line 1 column 68 (char 67)"),
        ("read", "empty_article", "blank", str(DAMAGED / "cnn" / "stories" / "blank.story")),
        ("read", "unsupported_file", str(DAMAGED / "cnn_stories_plain.tgz"), "not a tar archive"),
        ("read", "truncated_archive", str(cut),
         f"2 members read before the damage (2 stories kept): EOFError: {GZIP_CUT_SHORT}"),
        # 22 sentences of 136 characters joined by blank lines, then "\n\n@highlight\n\n" + 19
        ("read", "text_too_long", "row-too-long",
         f"{tmp_path / 'long.jsonl'}:1: 3067 characters, more than input.max_chars (3000)"),
    ]
    with beam_test_pipeline() as p:
        articles, rejects, tallies = p | ReadArticles(inputs, section("input.max_chars=3000"))
        assert_that(articles | beam.Map(lambda a: (a.id, a.encoding)), equal_to(
            [("choir-cp1252", "cp1252"), ("library-bom", "utf-8-sig")]
            + [(i, "utf-8") for i in ("ferry-nul", "harbour-bridge", "orchard-festival", *GOOD_ROWS,
                                      "kiln-reopens", "marathon-volunteers")]))
        assert_that(articles | "Texts" >> beam.FlatMap(lambda a: a.paragraphs + a.highlights)
                    | beam.Filter(lambda t: "\x00" in t or "\ufeff" in t), equal_to([]), label="clean")
        assert_that(rejects | beam.Map(lambda r: (r.stage, r.reason, r.record_id, r.detail)),
                    equal_to(expected_rejects), label="rejects")
        counts = tallies | beam.CombinePerKey(sum)
        assert_that(counts, equal_to([(("read", "in"), 21), (("read", "kept"), 10),
                                      (("read", "rejected.bad_field_type"), 6),
                                      (("read", "rejected.malformed_json"), 1),
                                      (("read", "rejected.empty_article"), 1),
                                      (("read", "rejected.unsupported_file"), 1),
                                      (("read", "rejected.truncated_archive"), 1),
                                      (("read", "rejected.text_too_long"), 1)]), label="tallies")
