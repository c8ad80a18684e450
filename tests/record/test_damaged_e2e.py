"""End to end: `csdata record generate` on the damaged corpus (tests/data/record/damaged/) and a
cut archive and an over-long row made here. The run must finish (exit 0) without a traceback or
an ERROR log; every good story reaches the passages; every damaged input is a named reject of
stage `read`; every stage of `summary.json` balances."""
from __future__ import annotations

import contextlib
import io
import json
import logging
from pathlib import Path

import pytest

from pipeline.cli.main import main
from tests.record.damaged import DAMAGED, GZIP_CUT_SHORT, long_row, write_cut_tgz
from transforms.core.io.tables import read_table

pytestmark = pytest.mark.slow

ROWS = DAMAGED / "rows.jsonl"
PLAIN_TGZ = DAMAGED / "cnn_stories_plain.tgz"
STORIES = DAMAGED / "cnn" / "stories"
# Short invented stories: the passage and entity minimums are lowered to fit them.
SETTINGS = ["input.max_chars=3000", "passage.min_tokens=30", "passage.min_entities=2"]

GOOD_STORIES = ["choir-cp1252", "ferry-nul", "harbour-bridge", "library-bom", "orchard-festival"]
# kept at read; row-null-highlights has no highlight, so the passage split rejects it
GOOD_ROWS = ["row-good", "row-nul-escape"]
ARCHIVE_STORIES = ["kiln-reopens", "marathon-volunteers"]   # the two before the cut


class _Records(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record):
        self.records.append(record)


@pytest.fixture(scope="module")
def damaged_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("damaged")
    cut = write_cut_tgz(tmp / "cnn_stories_cut.tgz", keep=2)
    long_rows = tmp / "long_rows.jsonl"
    long_rows.write_text(long_row(3000) + "\n", encoding="utf-8")
    out = tmp / "out"
    argv = ["record", "generate", "--output", str(out)]
    for path in (DAMAGED / "cnn", ROWS, PLAIN_TGZ, cut, long_rows):
        argv += ["--input", str(path)]
    for setting in SETTINGS:
        argv += ["--set", setting]
    handler, stderr = _Records(), io.StringIO()
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        with contextlib.redirect_stderr(stderr):
            code = main(argv)
    finally:
        root.removeHandler(handler)
    return {"code": code, "out": out, "cut": cut, "long": long_rows,
            "stderr": stderr.getvalue(), "logs": handler.records}


def test_the_run_finishes_quietly(damaged_run):
    assert damaged_run["code"] == 0, damaged_run["stderr"][-3000:]
    assert "Traceback" not in damaged_run["stderr"]
    errors = [r for r in damaged_run["logs"] if r.levelno >= logging.ERROR]
    assert not errors, [r.getMessage()[:300] for r in errors]


def test_every_stage_balances(damaged_run):
    stages = json.loads((damaged_run["out"] / "summary.json").read_text())["stages"]
    assert all(stage["balanced"] for stage in stages.values()), stages
    assert stages["passage_split"]["rejected"] == {"no_highlights": 1}


def read_rejects(run) -> dict[tuple[str, str], str]:
    return {(r["reason"], r["record_id"]): r["detail"]
            for r in read_table(str(run["out"]), "rejects").to_pylist() if r["stage"] == "read"}


def test_every_damaged_input_is_a_named_read_reject(damaged_run):
    rows = str(ROWS)
    found = read_rejects(damaged_run)
    found.pop(("text_too_long", "row-too-long"), None)    # see the next test
    assert found == {
        ("bad_field_type", f"{rows}:2"): "article must be a string, got int",
        ("bad_field_type", f"{rows}:3"): "id must be a string, got int",
        ("bad_field_type", f"{rows}:4"): "url must be a string, got list",
        ("bad_field_type", f"{rows}:5"): "article_lines[1] must be a string, got int",
        ("bad_field_type", f"{rows}:6"): "highlights must be a string or a list of strings, got dict",
        ("bad_field_type", f"{rows}:7"): "article_lines must be a list of strings, got str",
        ("malformed_json", f"{rows}:9"): "Invalid control character at: line 1 column 68 (char 67)",
        ("empty_article", "blank"): str(STORIES / "blank.story"),
        ("unsupported_file", str(PLAIN_TGZ)): "not a tar archive",
        ("truncated_archive", str(damaged_run["cut"])):
            f"2 members read before the damage (2 stories kept): EOFError: {GZIP_CUT_SHORT}",
    }


def test_the_spec_input_section_reaches_the_read_stage(damaged_run):
    stages = json.loads((damaged_run["out"] / "summary.json").read_text())["stages"]
    # 6 loose stories + 10 JSONL lines + 1 plain-text .tgz + 2 archived stories and the cut + 1 long row
    assert stages["read"] == {
        "in": 21, "kept": 10, "balanced": True,
        "rejected": {"bad_field_type": 6, "empty_article": 1, "malformed_json": 1, "text_too_long": 1,
                     "truncated_archive": 1, "unsupported_file": 1}}
    # 22 sentences of 136 characters joined by blank lines, then "\n\n@highlight\n\n" + 19 characters
    assert read_rejects(damaged_run)[("text_too_long", "row-too-long")] == (
        f"{damaged_run['long']}:1: 3067 characters, more than input.max_chars (3000)")


def test_good_stories_reach_the_passages_clean_and_with_their_encoding(damaged_run):
    passages = {p["passage_id"]: p for p in read_table(str(damaged_run["out"]), "passages").to_pylist()}
    later = {r["record_id"]: (r["stage"], r["reason"])
             for r in read_table(str(damaged_run["out"]), "rejects").to_pylist() if r["stage"] != "read"}
    for article_id in GOOD_STORIES + GOOD_ROWS + ARCHIVE_STORIES:
        assert article_id in passages or article_id in later, article_id
    assert set(GOOD_STORIES) <= set(passages)
    assert {i: passages[i]["encoding"] for i in GOOD_STORIES} == {
        "choir-cp1252": "cp1252", "ferry-nul": "utf-8", "harbour-bridge": "utf-8",
        "library-bom": "utf-8-sig", "orchard-festival": "utf-8"}
    for row in passages.values():
        assert "\x00" not in row["text"] and "\ufeff" not in row["text"], row["passage_id"]
    assert passages["choir-cp1252"]["text"].startswith(
        "Members of the Saint Aldric Choir in Rouen celebrated the choir\u2019s hundredth anniversary")
    assert passages["ferry-nul"]["text"].endswith(
        "\n@highlight\nNordwave Lines cancels crossings as storm hits the Baltic Sea")
    assert passages["library-bom"]["text"].startswith("The city council of Lindholm voted on Monday")


def test_the_export_holds_no_bom_or_nul(damaged_run, tmp_path):
    out = tmp_path / "record.json"
    assert main(["record", "export", str(damaged_run["out"]), "--format", "record-json",
                 "--output", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert "\x00" not in text and "\ufeff" not in text
    assert "\\u0000" not in text and "\\ufeff" not in text.lower()


def test_the_passages_schema_has_the_encoding_column(damaged_run):
    table = read_table(str(Path(damaged_run["out"])), "passages")
    assert table.schema.field("encoding").type == "string"
