"""`csdata report`: the HTML builder (transforms.core.reporting.report, .plots) and, per dataset, that the
page's Table 1 shows exactly the numbers `csdata stats` prints for the same run.

The runs are small tables written by hand (the tiny_* fixtures of tests/core/conftest.py), so
every expected figure below is counted by hand from those rows (or is the paper's, from its Table 1).
"""
from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from pipeline.cli.main import main
from tests.cosmos.crowd_sets import import_simulated
from transforms.core.accounting import stage_entry
from transforms.core.reporting.plots import Line, Shade, bars_svg, histogram_svg
from transforms.core.reporting.report import (
    FunnelStage,
    Plot,
    Report,
    Section,
    Table,
    funnel,
    read_rejects,
    render_html,
    truncate,
)

# ---------------------------------------------------------------- a tiny page, parsed back


class Page(HTMLParser):
    """Tables (caption -> rows of cell texts), headings, SVG facts and every link of a page."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.tables: dict[str, list[list[str]]] = {}
        self.headings: list[tuple[str, str]] = []
        self.svgs: list[dict] = []
        self.links: list[str] = []
        self.tags: set[str] = set()
        self._caption: str | None = None
        self._cell: list[str] | None = None
        self._heading: str | None = None
        self._text: list[str] = []
        self._rows: list[list[str]] = []
        self._in_caption = False
        self._svg_depth = 0
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.add(tag)
        for key in ("href", "src", "xlink:href"):
            if key in a and tag not in ("svg",):
                self.links.append(a[key])
        if tag == "svg":
            if self._svg_depth == 0:
                self.svgs.append({"attrs": a, "paths": 0, "title": None})
            self._svg_depth += 1
        elif self._svg_depth and tag == "path":
            self.svgs[-1]["paths"] += 1
        elif self._svg_depth and tag == "title":
            self._text = []
        if tag == "table":
            self._rows, self._caption = [], None
        elif tag == "caption":
            self._in_caption, self._text = True, []
        elif tag == "tr":
            self._rows.append([])
        elif tag in ("td", "th"):
            self._cell = []
        elif tag in ("h1", "h2"):
            self._heading, self._text = tag, []

    def handle_endtag(self, tag):
        if tag == "svg":
            self._svg_depth -= 1
        elif self._svg_depth and tag == "title" and self.svgs[-1]["title"] is None:
            self.svgs[-1]["title"] = "".join(self._text)
        if tag == "caption":
            self._in_caption, self._caption = False, "".join(self._text).strip()
        elif tag in ("td", "th") and self._cell is not None:
            self._rows[-1].append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "table":
            self.tables[self._caption or f"table {len(self.tables)}"] = self._rows
        elif tag in ("h1", "h2") and self._heading:
            self.headings.append((tag, "".join(self._text).strip()))
            self._heading = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)
        if self._in_caption or self._heading or self._svg_depth:
            self._text.append(data)


def test_page_is_self_contained_and_accessible():
    bars = bars_svg([("a", 2), ("b", 5)], "bars", "Two bars", "letter", shade=Shade(0, 1, "paper band"))
    hist = histogram_svg([1, 2, 2, 3, 9], "hist", "Five values", "value", bins=4, lines=[Line(2.0, "paper: mean 2", paper=True)])
    report = Report(
        title="A <run> & report", run_dir="/tmp/x", description="invented",
        table1=Table("Table one", ("statistic", "this run", "paper"), (("queries", "3", "100730"),)),
        sections=(Section("Length distributions", "lengths", plots=(Plot(bars, "bars"), Plot(hist, "hist"))),),
        funnel=(FunnelStage("read", "articles", 4, 3, {"bad_row": 1}, True, {"bad_row": (("id9", "line 3"),)}),),
    )
    text = render_html(report)
    page = Page(text)
    assert ("h1", "A <run> & report") in page.headings          # escaped, then read back as text
    assert [h for tag, h in page.headings if tag == "h2"] == [
        "Table 1 beside the paper's", "Length distributions", "Stage funnel"]
    assert page.tables["Table one"] == [["statistic", "this run", "paper"], ["queries", "3", "100730"]]
    # two charts + the funnel chart, each an accessible SVG with drawn paths
    assert len(page.svgs) == 3
    for svg in page.svgs:
        assert svg["attrs"].get("role") == "img" and svg["attrs"].get("aria-label")
        assert svg["title"] == svg["attrs"]["aria-label"] and svg["paths"] > 0
    assert [s["title"] for s in page.svgs] == ["Two bars", "Five values", "Kept and rejected per stage"]
    # offline: no script, no external style sheet, only in-page or data: links
    assert "script" not in page.tags and 'rel="stylesheet"' not in text
    assert all(link.startswith(("#", "data:")) for link in page.links), page.links
    assert '<meta name="viewport"' in text
    # the reason opens (no script: <details>) to its example reject
    assert re.search(r'<details id="reject-read-bad-row" class="reason"><summary>bad_row: 1</summary>'
                     r"<ul><li><code>id9</code> line 3</li></ul></details>", text)


def test_svg_ids_differ_between_charts_of_one_page():
    one = bars_svg([("a", 1)], "one", "One", "x")
    two = bars_svg([("a", 1)], "two", "Two", "x")
    ids = lambda svg: set(re.findall(r'id="([^"]+)"', svg))  # noqa: E731
    assert not ids(one) & ids(two)


def test_charts_are_deterministic():
    assert histogram_svg([1, 2, 3], "h", "T", "x") == histogram_svg([1, 2, 3], "h", "T", "x")


def test_funnel_examples_smallest_ids_first_capped_and_optional_details():
    stages = {"read": stage_entry(10, 5, {"bad": 4, "empty": 1}), "split": stage_entry(5, 5, {})}
    rejects = [{"stage": "read", "reason": "bad", "record_id": rid, "detail": f"d{rid}"}
               for rid in ("c", "a", "d", "b")] + [{"stage": "read", "reason": "empty", "record_id": "z", "detail": ""}]
    read, split = funnel(stages, rejects, {"read": "rows"})
    assert (read.n_in, read.kept, dict(read.rejected), read.unit) == (10, 5, {"bad": 4, "empty": 1}, "rows")
    assert read.examples["bad"] == (("a", "da"), ("b", "db"), ("c", "dc"))
    assert read.examples["empty"] == (("z", ""),)
    assert (split.rejected, split.examples, split.unit) == ({}, {}, "")
    bare, _ = funnel(stages, rejects, {}, details=False)
    assert bare.examples["bad"] == (("a", ""), ("b", ""), ("c", ""))
    text = render_html(Report("t", "r", "d", Table("c", ("a",), ()), funnel=(read,)))
    assert "1 more not shown" in text         # 4 rejects, 3 shown


def test_unbalanced_stage_is_flagged():
    stage = FunnelStage("read", "", 3, 1, {"bad": 1}, False)
    assert "in ≠ kept + rejected" in render_html(Report("t", "r", "d", Table("c", ("a",), ()), funnel=(stage,)))


def test_truncate():
    assert truncate("a  b\nc") == "a b c"
    assert truncate("abcdefghij", 5) == "abcd…"


# ---------------------------------------------------------------- ReCoRD


def _report(run: Path, out: Path, *flags: str) -> Page:
    assert main(["report", str(run), "--output", str(out), *flags]) == 0
    return Page((out / "index.html").read_text(encoding="utf-8"))


def _stats(run: Path, capsys) -> str:
    capsys.readouterr()
    assert main(["stats", str(run)]) == 0
    return capsys.readouterr().out


def test_record_table1_equals_csdata_stats_and_hand_counts(tiny_record_run, tmp_path, capsys):
    printed = _stats(tiny_record_run, capsys)
    stats_rows = [re.split(r"\s{2,}", line.strip()) for line in printed.split("-\n", 1)[1].strip().splitlines()]
    page = _report(tiny_record_run, tmp_path / "rep")
    table = page.tables["ReCoRD statistics beside the paper's Table 1 (training split)"]
    assert table[0] == ["statistic", "this run", "paper"]
    assert table[1:] == stats_rows
    # by hand: passages p1 (5 + 2 whitespace tokens, 3 entities) and p2 (6 + 2, 2); queries of 4,
    # 5, 5 tokens; vocabularies of lowercased words and marks (14 in the passages, 9 in the
    # queries); paper's Table 1
    assert table[1:] == [["queries", "3", "100730"], ["unique passages", "2", "65709"],
                         ["passage vocab", "14", "352491"], ["query vocab", "9", "119069"],
                         ["tokens/passage", "7.5", "169.5"], ["entities/passage", "2.5", "17.8"],
                         ["tokens/query", "4.7", "21.3"]]


def test_record_lengths_labels_and_funnel(tiny_record_run, tmp_path):
    from transforms.record.report import entity_labels, lengths

    assert lengths(tiny_record_run) == {"passage_tokens": [7, 8], "passage_entities": [3, 2], "query_tokens": [4, 5, 5]}
    assert entity_labels(tiny_record_run) == {"passage mentions": [("PERSON", 4), ("GPE", 1)],
                                         "query placeholders": [("PERSON", 2), ("GPE", 1)]}
    page = _report(tiny_record_run, tmp_path / "rep")
    assert page.tables["Entity labels: passage mentions"][1:] == [["PERSON", "4"], ["GPE", "1"]]
    funnel_rows = page.tables["Per-stage accounting"]
    assert [r[:5] for r in funnel_rows[1:]] == [["read", "articles", "5", "5", "0"],
                                                ["dedup_exact", "articles", "5", "3", "2"],
                                                ["sentence_filter", "sentences", "7", "3", "4"]]
    assert "duplicate_id: 2" in funnel_rows[2][6] and "dup1" in funnel_rows[2][6]
    titles = [s["title"] for s in page.svgs]
    assert titles == ["Tokens per passage", "Tokens per query", "Entities per passage",
                      "Kept and rejected per stage", "Entity labels: passage mentions",
                      "Entity labels: query placeholders"]
    assert all(s["paths"] for s in page.svgs)


def test_sample_rows(tiny_record_run, tmp_path):
    page = _report(tiny_record_run, tmp_path / "five")
    assert page.tables["The first 3 of 3 queries by id"][1] == ["p1-a-0", "@placeholder met Bob .", "Anna", "PERSON"]
    one = _report(tiny_record_run, tmp_path / "one", "--sample-rows", "1")
    assert len(one.tables["The first 1 of 3 queries by id"]) == 2


def test_sample_rows_zero_shows_no_text_of_the_inputs(tiny_record_run, tmp_path):
    _report(tiny_record_run, tmp_path / "none", "--sample-rows", "0")
    text = (tmp_path / "none" / "index.html").read_text(encoding="utf-8")
    for needle in ("met Bob", "Paris.", "swam in", "SECRET-DETAIL", "3 tokens"):
        assert needle not in text
    assert "dup1" in text and "duplicate_id: 2" in text     # ids and counts stay


def test_report_errors(tiny_record_run, tmp_path, capsys):
    assert main(["report", str(tmp_path / "missing"), "--output", str(tmp_path / "r")]) == 2
    with pytest.raises(SystemExit) as usage:
        main(["report", str(tiny_record_run), "--output", str(tmp_path / "r"), "--sample-rows", "-1"])
    assert usage.value.code == 2
    (tmp_path / "file").write_text("x")
    assert main(["report", str(tiny_record_run), "--output", str(tmp_path / "file")]) == 2
    assert "is a file" in capsys.readouterr().err


# ---------------------------------------------------------------- Cosmos QA


def _cosmos_rows(capsys, run: Path) -> list[list[str]]:
    """(statistic, this run, paper) of `csdata stats`' fixed-width rows (cosmos.stats._row)."""
    lines = _stats(run, capsys).splitlines()
    body = lines[3:lines.index("")] if "" in lines else lines[3:]
    return [[line[:34].strip(), line[34:50].strip(), line[52:].strip()] for line in body]


def test_cosmos_paragraphs_table1_equals_csdata_stats(tiny_cosmos_run, tmp_path, capsys):
    stats_rows = _cosmos_rows(capsys, tiny_cosmos_run)
    page = _report(tiny_cosmos_run, tmp_path / "rep")
    table = page.tables["Cosmos QA statistics beside the paper's Table 1"]
    assert table[1:] == stats_rows
    # by hand: 30 and 45 whitespace words (44 words + "."), the same tokens; paper: Table 1 and §2.1
    assert table[1:] == [["paragraphs (blogs)", "2 (2)", "21866"],
                         ["words/paragraph (mean/max/min)", "37.5/45/30", "30-150 words"],
                         ["tokens/paragraph (mean/max)", "37.5/45", "70.3/152"]]
    assert [s["title"] for s in page.svgs][:2] == ["Words per paragraph", "Tokens per paragraph"]
    assert page.tables["The first 2 of 2 paragraphs by id"][1][:3] == ["b1/1#p000", "b1", "30"]


def test_cosmos_words_chart_shades_the_paper_range(tiny_cosmos_run):
    from transforms.cosmos.report import cosmos_report
    from transforms.cosmos.stats import histogram

    # stats' bins: 30-39, ..., 130-139, 140-150; every bin lies in the paper's range
    assert len(histogram([])) == 12
    page = render_html(cosmos_report(tiny_cosmos_run, _cosmos_spec().paper_table1, _cosmos_spec().nota))
    assert "paper: 30-150 words" in page


def _cosmos_spec():
    from data_specs import load_dataset_spec
    from data_specs.models import CosmosSpec

    return load_dataset_spec(CosmosSpec, "cosmos")


def test_cosmos_qa_run_table1_equals_csdata_stats(tmp_path, cosmos_simulated, capsys):
    qa = import_simulated(cosmos_simulated, tmp_path / "qa")
    stats_rows = _cosmos_rows(capsys, qa)
    page = _report(qa, tmp_path / "rep")
    table = page.tables["Cosmos QA statistics beside the paper's Table 1"]
    assert table[1:] == stats_rows
    assert table[1][2] == "35588 (21866)"         # the paper's questions (paragraphs)
    assert [s["title"] for s in page.svgs][:4] == ["Tokens per paragraph", "Tokens per question",
                                                   "Tokens per correct answer", "Tokens per incorrect answer"]


# ---------------------------------------------------------------- ProtoQA



def test_protoqa_table1_equals_csdata_stats_and_hand_counts(tiny_protoqa_release, tmp_path, capsys):
    printed = _stats(tiny_protoqa_release, capsys).splitlines()
    stats_rows = []
    for line in printed[1:6]:
        note = line[38:].strip()
        stats_rows.append([line[:28].strip(), line[28:38].strip(), note[1:-1] if note else "-"])
    page = _report(tiny_protoqa_release, tmp_path / "rep")
    table = page.tables["ProtoQA statistics beside the paper's figures"]
    assert [row[:3] for row in table[1:]] == stats_rows
    # by hand: 3 and 9 clusters; 12 cluster sizes, median (5 + 10) / 2; top-8 covers 100 and 99 of 100
    assert table[1:] == [["questions", "2", "-", "154 (52 dev, 102 test)"],
                         ["clusters / question", "6.00", "median 6, min 3, max 9", "-"],
                         ["answers / cluster", "16.67", "median 7.5", "-"],
                         ["answers / question", "100.00", "-", "-"],
                         ["top-8 coverage (%)", "99.50", "> 85: 2 of 2", "-"]]
    assert [s["title"] for s in page.svgs][:3] == ["Clusters per question", "Answers per cluster",
                                                   "Top-8 coverage per question"]
    assert "paper figure not available" in (tmp_path / "rep" / "index.html").read_text(encoding="utf-8")
    assert page.tables["Per-stage accounting"][1][:5] == ["coverage", "questions", "3", "2", "1"]
    assert "q0" in page.tables["Per-stage accounting"][1][6]


def test_protoqa_summary_rejects_are_read(tiny_protoqa_release):
    assert read_rejects(tiny_protoqa_release) == [
        {"stage": "coverage", "reason": "low_coverage", "record_id": "q0", "detail": "80.0"}]


def test_protoqa_agreement_run(tmp_path, capsys):
    run = tmp_path / "agree"
    run.mkdir()
    (run / "csdata-run.json").write_text(json.dumps({"dataset": "protoqa", "command": "protoqa sheets import"}),
                                         encoding="utf-8")   # a finished run
    (run / "agreement.json").write_text(json.dumps({
        "annotators": ["A", "B"], "mentions": "strings", "questions": 1, "macro_blanc": 70.0, "micro_blanc": 71.5,
        "per_question": {"q1": {"blanc": 70.0, "recall": 80.0, "precision": 60.0, "clusters_a": 3, "clusters_b": 4}},
        "paper_blanc": 83.17}), encoding="utf-8")
    printed = _stats(run, capsys)
    assert "macro 70.00, micro 71.50" in printed
    page = _report(run, tmp_path / "rep")
    assert page.tables["BLANC between A and B (x100)"][1:] == [
        ["questions", "1", "-"], ["macro BLANC", "70.00", "83.17"], ["micro BLANC", "71.50", "-"]]
    assert page.tables["BLANC per question"][1] == ["q1", "70.00", "80.00", "60.00", "3/4"]


# ---------------------------------------------------------------- start-up


def test_report_loads_no_beam_or_models(tiny_record_run, tiny_protoqa_release, tmp_path):
    from tests.core.test_startup import MODELS, loaded_by

    assert loaded_by("report", "--help") == set()
    for run in (tiny_record_run, tiny_protoqa_release):
        assert not MODELS & loaded_by("report", str(run), "--output", str(tmp_path / run.name))


def test_paper_overlays_are_drawn_in_the_paper_colour():
    from transforms.core.reporting.plots import PAPER_COLOUR

    ours = histogram_svg([1, 2, 3], "a", "T", "x", lines=[Line(2.0, "this run: mean 2")])
    paper = histogram_svg([1, 2, 3], "b", "T", "x", lines=[Line(2.0, "paper: mean 2", paper=True)])
    band = bars_svg([("a", 1), ("b", 2)], "c", "T", "x", shade=Shade(0, 1, "paper range"))
    assert PAPER_COLOUR not in ours and PAPER_COLOUR in paper and PAPER_COLOUR in band
    assert "paper: mean 2" in paper and "paper range" in band          # legend entries
