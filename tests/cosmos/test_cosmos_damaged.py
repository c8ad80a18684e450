"""Cosmos QA readers on damaged inputs (issue #10): every damaged record is a named `read` reject
or a kept, flagged story, and the run goes on. Inputs: tests/data/cosmos/damaged (invented)."""
from __future__ import annotations

import io
import logging
from pathlib import Path

import apache_beam as beam
import pytest
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.testing.util import assert_that, equal_to

from data_specs import load_spec
from pipeline.cli.main import main
from tests.conftest import beam_test_pipeline
from transforms.core.accounting import Reject
from transforms.core.io.tables import read_summary, read_table
from transforms.cosmos.paragraphs import SplitSentences
from transforms.cosmos.read import (
    ReadStories,
    Story,
    find_posts,
    iter_raw_records,
    parse_raw_record,
)

DAMAGED = Path(__file__).resolve().parents[1] / "data" / "cosmos" / "damaged"
UNCLOSED = DAMAGED / "2000001.female.22.Student.Aries.xml"
BOM_NUL = DAMAGED / "2000002.male.30.Engineering.Leo.xml"
CP1252 = DAMAGED / "2000003.female.45.Arts.Libra.xml"
LATIN1 = DAMAGED / "2000004.male.52.Religion.Virgo.xml"
NOT_XML = DAMAGED / "2000005.female.33.indUnk.Pisces.xml"
LONG = DAMAGED / "2000006.male.27.Technology.Cancer.xml"
JSONL = DAMAGED / "stories_damaged.jsonl"
TEXT = DAMAGED / "story-bom.txt"
INPUTS = [str(DAMAGED / "*.xml"), str(JSONL), str(TEXT)]


def read(path: Path, **options):
    out = []
    policy = {k: options.pop(k) for k in ("policy", "controls") if k in options}
    for raw in iter_raw_records(str(path), io.BytesIO(path.read_bytes()), **policy):
        out.extend(parse_raw_record(raw, ("urlLink",), encoding=policy.get("policy", "lenient"),
                                    controls=policy.get("controls", "remove"), **options))
    return out


def reasons(outcomes) -> list[tuple[str, str]]:
    return [(r.reason, r.record_id) for r in outcomes if isinstance(r, Reject)]


# ---------------------------------------------------------------------------- plain functions

def test_find_posts_closes_an_unclosed_post_at_the_next_tag():
    text = ("<Blog><date>d1</date><post>one</post><date>d2</date><post>two<date>d3</date>"
            "<post>three</post><post>four<post>five</Blog>")
    posts = [(text[s:e], date, closed) for s, e, date, closed in find_posts(text)]
    assert posts == [("one", "d1", True), ("two", "d2", False), ("three", "d3", True),
                     ("four", "d3", False), ("five", "d3", False)]
    unended = "<post>no end at all"
    assert [unended[s:e] for s, e, _, _ in find_posts(unended)] == ["no end at all"]
    assert find_posts("<Blog></Blog>") == [] and find_posts("</post> stray") == []


def test_unclosed_posts_are_kept_apart_and_flagged():
    stories = read(UNCLOSED)
    assert [s.id for s in stories] == [f"2000001/000{i}" for i in range(5)]
    assert [s.flags for s in stories] == [(), ("unclosed_post",), (), ("unclosed_post",), ("unclosed_post",)]
    assert stories[1].text.startswith("My grandmother taught me to knit")
    assert stories[1].text.endswith("show it off to somebody.")          # not merged with the next post
    assert stories[2].text.startswith("We moved the couch")
    assert stories[1].origin.endswith("#post1 (02,June,2004, utf-8, unclosed_post)")
    assert stories[4].origin.endswith("#post4 (03,June,2004, utf-8, unclosed_post)")
    assert stories[0].origin.endswith("#post0 (01,June,2004, utf-8)")   # unchanged for a good post


def test_bom_and_nul_bytes_are_removed():
    first, second = read(BOM_NUL)
    assert first.encoding == "utf-8-sig" and "\x00" not in first.text
    assert "would not rise until we moved" in first.text
    assert second.id == "2000002/0001" and "stood on the jetty" in second.text   # NUL inside <post>


def test_cp1252_and_latin1_files():
    (story,) = read(CP1252)
    assert story.encoding == "cp1252"
    assert "caf\u00e9" in story.text and "\u20ac3" in story.text and "owner\u2019s" in story.text
    (story,) = read(LATIN1)
    assert story.encoding == "latin-1"
    assert "Se\u00f1or" in story.text and "pi\u00f1ata" in story.text
    assert "for the party, and" in story.text          # the C1 byte 0x8d (no cp1252 character) removed


def test_not_xml_is_a_reject():
    assert reasons(read(NOT_XML)) == [("not_blog_xml", "2000005")]


def test_jsonl_rows():
    rows = read(JSONL)
    stories = {s.id: s for s in rows if isinstance(s, Story)}
    assert sorted(stories) == ["j-good", "j-latin1", "j-nul", "j-rawnul"]
    assert stories["j-good"].encoding == "utf-8-sig"                  # the BOM of line 1
    assert stories["j-latin1"].encoding == "cp1252" and stories["j-latin1"].text.startswith("Caf\u00e9 The")
    assert "new job. I have" in stories["j-nul"].text                 # escaped \u0000 removed
    assert "It is lumpy and" in stories["j-rawnul"].text              # raw NUL byte removed
    path = str(JSONL)
    assert reasons(rows) == [("bad_field_type", f"{path}:5"), ("bad_field_type", f"{path}:6"),
                             ("malformed_json", f"{path}:7"), ("malformed_json", f"{path}:8")]
    details = [r.detail for r in rows if isinstance(r, Reject)]
    assert details[:2] == ["text must be a string, got int", "id must be a string, got list"]


def test_text_file_with_bom_and_nul():
    (story,) = read(TEXT)
    assert story.id == "story-bom" and story.encoding == "utf-8-sig"
    assert story.text.startswith("I found a caf\u00e9") and story.text.endswith("until spring.")


def test_over_long_story_is_a_reject():
    short, long = read(LONG, max_chars=200)
    assert isinstance(short, Story) and short.id == "2000006/0000"
    assert isinstance(long, Reject) and (long.stage, long.reason, long.record_id) == (
        "read", "text_too_long", "2000006/0001")
    assert long.detail.startswith("532 characters > input.max_chars 200;")


def test_strict_encoding_and_rejected_controls():
    assert reasons(read(CP1252, policy="strict")) == [("not_utf8", "2000003")]
    assert reasons(read(LATIN1, policy="strict")) == [("not_utf8", "2000004")]
    assert [s.encoding for s in read(UNCLOSED, policy="strict")] == ["utf-8"] * 5
    assert [s.reason for s in read(JSONL, policy="strict") if isinstance(s, Reject)][0] == "not_utf8"
    # a NUL inside a tag: the file's markup cannot be trusted
    assert reasons(read(BOM_NUL, controls="reject")) == [("control_characters", "2000002")]
    rows = read(JSONL, controls="reject")
    assert {r.record_id.rsplit(":", 1)[1] for r in rows if isinstance(r, Reject)
            and r.reason == "control_characters"} == {"3", "4"}
    assert reasons(read(TEXT, controls="reject")) == [("control_characters", "story-bom")]


def test_nul_inside_one_post_rejects_only_that_post(tmp_path):
    path = tmp_path / "3000001.male.20.Student.Leo.xml"
    path.write_bytes(b"<Blog><date>x</date><post>fine words</post><post>bad\x00 words</post></Blog>")
    outcomes = read(path, controls="reject")
    assert [s.id for s in outcomes if isinstance(s, Story)] == ["3000001/0000"]
    assert reasons(outcomes) == [("control_characters", "3000001/0001")]
    assert [s.text for s in read(path)] == ["fine words", "bad words"]


def test_whitespace_controls_still_separate_words(tmp_path):
    path = tmp_path / "3000002.male.20.Student.Leo.xml"
    path.write_bytes("<Blog><post>one\u0085two\x0cthree\x1ffour\x00five</post></Blog>".encode("utf-8"))
    assert [s.text for s in read(path)] == ["one two three fourfive"]


# ------------------------------------------------------------------------------ Beam transforms

def test_read_stories_transform_accounts_for_every_record():
    spec = load_spec("cosmos")
    p = beam_test_pipeline()
    stories, rejects, tallies = p | ReadStories(INPUTS, spec.input)
    assert_that(stories | "Ids" >> beam.Map(lambda s: (s.id, s.flags)), equal_to(
        [("2000001/0000", ()), ("2000001/0001", ("unclosed_post",)), ("2000001/0002", ()),
         ("2000001/0003", ("unclosed_post",)), ("2000001/0004", ("unclosed_post",)),
         ("2000002/0000", ()), ("2000002/0001", ()), ("2000003/0000", ()), ("2000004/0000", ()),
         ("2000006/0000", ()), ("2000006/0001", ()), ("j-good", ()), ("j-latin1", ()), ("j-nul", ()),
         ("j-rawnul", ()), ("story-bom", ())]), label="Stories")
    assert_that(rejects | "Reasons" >> beam.Map(lambda r: r.reason), equal_to(
        ["not_blog_xml", "bad_field_type", "bad_field_type", "malformed_json", "malformed_json"]),
        label="Rejects")
    counts = tallies | "Sum" >> beam.CombinePerKey(sum)
    assert_that(counts, equal_to([(("read", "in"), 21), (("read", "kept"), 16),
                                  (("read", "rejected.not_blog_xml"), 1),
                                  (("read", "rejected.bad_field_type"), 2),
                                  (("read", "rejected.malformed_json"), 2)]), label="Tallies")
    result = p.run()
    result.wait_until_finish()
    counters: dict[str, int] = {}          # summed over the steps that bump them
    for counter in result.metrics().query(MetricsFilter().with_namespace("csdata"))["counters"]:
        name = counter.key.metric.name
        counters[name] = counters.get(name, 0) + counter.committed
    assert counters["read.flagged.unclosed_post"] == 3
    assert counters["read.rejected.not_blog_xml"] == 1
    assert counters["read.encoding.cp1252"] == 3     # the cp1252 file, the not-XML one, the latin-1 JSONL line
    assert counters["read.encoding.latin-1"] == 1
    assert counters["read.control_chars_removed"] >= 5    # NULs, the C1 byte, the controls of the not-XML file


@pytest.mark.slow
def test_story_over_spacys_limit_is_a_quiet_sentences_reject(caplog):
    spec = load_spec("cosmos")
    long = Story("huge", "b", "word " * 200_001, "t")      # 1,000,005 characters > spaCy's 1,000,000
    short = Story("small", "b", "The kite flew. It landed on the roof.", "t")
    with caplog.at_level(logging.WARNING), beam_test_pipeline() as p:
        kept, rejects, _ = p | beam.Create([long, short]) | SplitSentences(spec.sentences, spec.paragraph)
        assert_that(kept | "Ids" >> beam.Map(lambda s: (s.story.id, len(s.sentences))),
                    equal_to([("small", 2)]), label="Kept")
        assert_that(rejects | "Reasons" >> beam.Map(lambda r: (r.stage, r.reason, r.record_id)),
                    equal_to([("sentences", "text_too_long", "huge")]), label="Rejects")
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


# ------------------------------------------------------------------------------- end to end

def _no_errors(caplog, capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    return err


@pytest.mark.slow
def test_paragraphs_run_on_damaged_inputs(tmp_path, caplog, capsys):
    out = tmp_path / "cosmos"
    argv = ["cosmos", "paragraphs", "--output", str(out), "--set", "coherence.name=overlap",
            "--set", "sample.per_blog=10"]
    for pattern in INPUTS:
        argv += ["--input", pattern]
    assert main(argv) == 0
    _no_errors(caplog, capsys)
    summary = read_summary(str(out / "summary.json"))
    assert all(stage["balanced"] for stage in summary["stages"].values())
    assert summary["stages"]["read"] == {"in": 21, "kept": 16, "balanced": True, "rejected": {
        "bad_field_type": 2, "malformed_json": 2, "not_blog_xml": 1}}
    assert summary["stages"]["story_filter"]["rejected"] == {"story_too_short": 1}   # 2000006/0000
    paragraphs = read_table(out, "paragraphs").to_pylist()
    assert {p["story_id"] for p in paragraphs} == {
        "2000001/0000", "2000001/0001", "2000001/0002", "2000001/0003", "2000001/0004",
        "2000002/0000", "2000002/0001", "2000003/0000", "2000004/0000", "2000006/0001",
        "j-good", "j-latin1", "j-nul", "j-rawnul", "story-bom"}
    assert all("\x00" not in p["text"] and "\ufeff" not in p["text"] for p in paragraphs)
    by_story = {p["story_id"]: p for p in paragraphs}
    assert "unclosed_post" in by_story["2000001/0001"]["origin"]
    assert "caf\u00e9" in by_story["2000003/0000"]["text"]
    rejects = {(r["stage"], r["reason"], r["record_id"]) for r in read_table(out, "rejects").to_pylist()}
    assert {("read", "not_blog_xml", "2000005"),
            ("read", "bad_field_type", f"{JSONL}:5"), ("read", "bad_field_type", f"{JSONL}:6"),
            ("read", "malformed_json", f"{JSONL}:7"), ("read", "malformed_json", f"{JSONL}:8"),
            ("story_filter", "story_too_short", "2000006/0000")} == rejects


@pytest.mark.slow
def test_over_long_post_is_a_read_reject_end_to_end(tmp_path, caplog, capsys):
    out = tmp_path / "cosmos"
    assert main(["cosmos", "paragraphs", "--input", str(LONG), "--output", str(out),
                 "--set", "coherence.name=overlap", "--set", "input.max_chars=200",
                 "--set", "paragraph.min_words=10"]) == 0
    _no_errors(caplog, capsys)
    summary = read_summary(str(out / "summary.json"))
    assert all(stage["balanced"] for stage in summary["stages"].values())
    assert summary["stages"]["read"]["rejected"] == {"text_too_long": 1}
    assert [p["story_id"] for p in read_table(out, "paragraphs").to_pylist()] == ["2000006/0000"]
    (reject,) = read_table(out, "rejects").to_pylist()
    assert (reject["stage"], reject["reason"], reject["record_id"]) == ("read", "text_too_long", "2000006/0001")
