"""`csdata report RUN --reference FILE` (a published release file beside the run) and the report
and `csdata stats` of a `record hits import` run (validated splits, no `queries/` table).

Every reference file here is invented and written by the test; the expected figures are counted
by hand from it (whitespace tokens per passage and query, lowercased words and marks for the
vocabularies, as `transforms.record.stats` says; Cosmos tokens are words and marks).
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pipeline.cli.main import main
from tests.core.conftest import protoqa_record
from tests.core.test_report import _report, _stats
from tests.cosmos.crowd_sets import import_simulated
from transforms.core.io.tables import write_rows
from transforms.core.reporting.plots import REFERENCE_COLOUR, SHARE_LABEL, bars_svg, histogram_svg, shares

RECORD_CAPTION = "ReCoRD statistics beside the paper's Table 1 (training split)"
COSMOS_CAPTION = "Cosmos QA statistics beside the paper's Table 1"
PROTOQA_CAPTION = "ProtoQA statistics beside the paper's figures"


# ---------------------------------------------------------------- the overlay itself

def test_shares_are_percentages_of_the_total():
    assert shares([1, 3]) == [25.0, 75.0]
    assert shares([0, 0]) == [0.0, 0.0] and shares([]) == []


def test_reference_overlay_is_drawn_as_shares_in_its_colour():
    plain = bars_svg([("a", 1), ("b", 3)], "p", "T", "x")
    over = bars_svg([("a", 1), ("b", 3)], "o", "T", "x", reference=[("a", 10), ("b", 0)])
    assert REFERENCE_COLOUR not in plain and SHARE_LABEL not in plain
    assert REFERENCE_COLOUR in over and SHARE_LABEL in over and "published" in over
    hist = histogram_svg([1, 2, 3], "h", "T", "x", reference=[1, 1, 5, 9])
    assert REFERENCE_COLOUR in hist and SHARE_LABEL in hist
    with pytest.raises(ValueError):
        bars_svg([("a", 1)], "bad", "T", "x", reference=[("b", 1)])


# ---------------------------------------------------------------- ReCoRD

OFFICIAL = {"version": "v1.0", "data": [
    {"id": "r1", "source": "CNN",
     "passage": {"text": "Zed met Yan in Oslo.\n@highlight\nYan won",
                 "entities": [{"start": 0, "end": 2}, {"start": 8, "end": 10}, {"start": 15, "end": 18}]},
     "qas": [{"id": "r1-a", "query": "@placeholder won the race",
              "answers": [{"start": 8, "end": 10, "text": "Yan"}]}]},
    {"id": "r2", "source": "Daily mail",
     "passage": {"text": "Xu left Rome today.\n@highlight\nXu flew home",
                 "entities": [{"start": 0, "end": 1}, {"start": 8, "end": 11}]},
     "qas": [{"id": "r2-a", "query": "@placeholder flew home", "answers": [{"start": 0, "end": 1, "text": "Xu"}]},
             {"id": "r2-b", "query": "Xu left @placeholder today",
              "answers": [{"start": 8, "end": 11, "text": "Rome"}]}]}]}
# By hand: 3 queries over 2 passages; passage tokens 7 and 7 (markers out); entities 3 and 2;
# query tokens 4, 3, 4 (11 / 3); passage vocabulary zed met yan in oslo . won xu left rome
# today flew home (13); query vocabulary @placeholder won the race flew home xu left today (9).
OFFICIAL_COLUMN = ["3", "2", "13", "9", "7.0", "2.5", "3.7"]


def official_json(folder: Path) -> Path:
    path = folder / "record_official.json"
    path.write_text(json.dumps(OFFICIAL, indent=2), encoding="utf-8")
    return path


def test_record_reference_column_and_overlays(tiny_record_run, tmp_path, capsys):
    plain = _report(tiny_record_run, tmp_path / "plain")
    page = _report(tiny_record_run, tmp_path / "ref", "--reference", str(official_json(tmp_path)))
    table = page.tables[RECORD_CAPTION]
    assert table[0] == ["statistic", "this run", "published", "paper"]
    assert [row[2] for row in table[1:]] == OFFICIAL_COLUMN
    # the run's and the paper's columns are those of the page without a reference
    assert [[r[0], r[1], r[3]] for r in table[1:]] == plain.tables[RECORD_CAPTION][1:]
    text = (tmp_path / "ref" / "index.html").read_text(encoding="utf-8")
    for slug in ("passage-tokens", "query-tokens", "passage-entities"):
        chart = re.search(rf'<svg[^>]*id="plot-{slug}".*?</svg>', text, re.S)
        assert chart and REFERENCE_COLOUR in chart.group(0), slug
    assert REFERENCE_COLOUR not in (tmp_path / "plain" / "index.html").read_text(encoding="utf-8")
    assert "Beside the published file" in text


def test_record_reference_as_jsonl_gives_the_same_column(tiny_record_run, tmp_path):
    lines = []
    for index, entry in enumerate(OFFICIAL["data"]):      # the SuperGLUE shape: idx, no ids
        qas = [{"query": q["query"], "answers": q["answers"], "idx": k} for k, q in enumerate(entry["qas"])]
        lines.append(json.dumps({"source": entry["source"], "passage": entry["passage"], "qas": qas, "idx": index}))
    path = tmp_path / "train.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    page = _report(tiny_record_run, tmp_path / "ref", "--reference", str(path))
    assert [row[2] for row in page.tables[RECORD_CAPTION][1:]] == OFFICIAL_COLUMN


def _refused(args: list[str], capsys) -> str:
    capsys.readouterr()
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err


def test_unreadable_or_wrong_dataset_reference_is_one_line_exit_2(
        tiny_record_run, tiny_protoqa_release, tiny_cosmos_run, tmp_path, capsys):
    out = str(tmp_path / "r")
    missing = _refused(["report", str(tiny_record_run), "--output", out, "--reference", str(tmp_path / "no.json")], capsys)
    assert "cannot read it" in missing
    (tmp_path / "binary.json").write_bytes(b"\xff\xfe\x00garbage\x81")
    assert "cannot read it" in _refused(["report", str(tiny_record_run), "--output", out, "--reference",
                                         str(tmp_path / "binary.json")], capsys)
    cosmos_csv = tmp_path / "valid.csv"
    cosmos_csv.write_text(COSMOS_CSV, encoding="utf-8")
    assert "not a published ReCoRD file" in _refused(
        ["report", str(tiny_record_run), "--output", out, "--reference", str(cosmos_csv)], capsys)
    official = official_json(tmp_path)
    assert "not a published ProtoQA file" in _refused(
        ["report", str(tiny_protoqa_release), "--output", out, "--reference", str(official)], capsys)
    assert "not a published Cosmos QA file" in _refused(
        ["report", str(tiny_cosmos_run), "--output", out, "--reference", str(official)], capsys)
    assert not (tmp_path / "r" / "index.html").exists()


# ---------------------------------------------------------------- Cosmos QA

COSMOS_CSV = (
    "id,context,question,answer0,answer1,answer2,answer3,label\n"
    "c1,We went to the park . It rained .,Why did they leave ?,It rained .,They were bored .,"
    "None of the above choices .,The park closed .,0\n"
    "c2,We went to the park . It rained .,What happened next ?,None of the above choices .,They ran .,"
    "They sang .,They ate .,0\n")


def test_cosmos_reference_beside_a_paragraphs_run(tiny_cosmos_run, tmp_path):
    path = tmp_path / "valid.csv"
    path.write_text(COSMOS_CSV, encoding="utf-8")
    page = _report(tiny_cosmos_run, tmp_path / "ref", "--reference", str(path))
    table = page.tables[COSMOS_CAPTION]
    assert table[0] == ["statistic", "this run", "published", "paper"]
    # by hand: one distinct context of 9 whitespace words (the marks are spaced), 9 tokens; the
    # file names no blogs
    assert [row[2] for row in table[1:]] == ["1 (-)", "9.0/9/9", "9.0/9"]
    text = (tmp_path / "ref" / "index.html").read_text(encoding="utf-8")
    for slug in ("words", "paragraph-tokens"):
        chart = re.search(rf'<svg[^>]*id="plot-{slug}".*?</svg>', text, re.S)
        assert chart and REFERENCE_COLOUR in chart.group(0), slug


def test_cosmos_reference_beside_a_qa_run(tmp_path, cosmos_simulated, capsys):
    qa = import_simulated(cosmos_simulated, tmp_path / "qa")
    path = tmp_path / "valid.jsonl"                       # the JSONL form of the same two rows
    header, *lines = COSMOS_CSV.strip().split("\n")
    keys = header.split(",")
    path.write_text("".join(json.dumps({k: (int(v) if k == "label" else v) for k, v in zip(keys, line.split(","))})
                            + "\n" for line in lines), encoding="utf-8")
    plain = _report(qa, tmp_path / "plain")
    page = _report(qa, tmp_path / "ref", "--reference", str(path))
    table = page.tables[COSMOS_CAPTION]
    assert [[r[0], r[1], r[3]] for r in table[1:]] == plain.tables[COSMOS_CAPTION][1:]
    # by hand: 2 questions on 1 paragraph, in the dev split ("valid"); 9 tokens; questions of 5
    # and 4 tokens; correct answers of 3 and 6 tokens (NOTA); incorrect of 4, 6, 4 and 3, 3, 3
    # (23 / 6); c2's correct answer is NOTA (unanswerable); no sets; NOTA in both
    assert [row[2] for row in table[1:]] == ["2 (1)", "-", "2 (1)", "-", "9.0/9", "4.5/5", "4.5/6", "3.8/6",
                                             "50.0", "-", "100.0"]


# ---------------------------------------------------------------- ProtoQA

def test_protoqa_reference_columns_and_overlays(tiny_protoqa_release, tmp_path):
    path = tmp_path / "dev.crowdsourced.jsonl"
    path.write_text("".join(json.dumps(protoqa_record(q, c)) + "\n" for q, c in
                            (("r1", [60, 40]), ("r2", [70, 20, 10]), ("r3", [90, 5, 3, 2]))), encoding="utf-8")
    page = _report(tiny_protoqa_release, tmp_path / "ref", "--reference", str(path))
    table = page.tables[PROTOQA_CAPTION]
    assert table[0] == ["statistic", "this run", "detail", "published", "published detail", "paper"]
    # by hand: 2, 3 and 4 clusters; sizes 2 3 5 10 20 40 60 70 90 (300 / 9, median 20); every
    # question's answers lie in its top 8 clusters
    assert [row[3:5] for row in table[1:]] == [["3", "-"], ["3.00", "median 3, min 2, max 4"],
                                               ["33.33", "median 20"], ["100.00", "-"],
                                               ["100.00", "> 85: 3 of 3"]]
    assert table[2][:3] == ["clusters / question", "6.00", "median 6, min 3, max 9"]
    text = (tmp_path / "ref" / "index.html").read_text(encoding="utf-8")
    for slug in ("clusters", "cluster-sizes", "coverage"):
        chart = re.search(rf'<svg[^>]*id="plot-{slug}".*?</svg>', text, re.S)
        assert chart and REFERENCE_COLOUR in chart.group(0), slug
    assert "paper figure not available" in text          # Figure 2 itself is still not drawn


# ---------------------------------------------------------------- a `record hits import` run

@pytest.fixture
def validated_run(tiny_record_run) -> Path:
    """tiny_record_run's passages with its queries validated: p1's two in train, p2's one in dev,
    none in test (the layout `record hits import` writes: no queries/ table)."""
    import shutil

    from transforms.core.io.tables import read_table

    queries = read_table(tiny_record_run, "queries").to_pylist()
    shutil.rmtree(tiny_record_run / "queries")
    extra = {"fold": 0, "reader": "lexical", "reader_answer": "", "reader_correct": False,
             "correct_answers": 2, "judgements": 3}
    for split, pids in (("train", {"p1"}), ("dev", {"p2"}), ("test", set())):
        write_rows([{**q, **extra, "split": split} for q in queries if q["passage_id"] in pids],
                   "record", "validated_queries", tiny_record_run / split)
    return tiny_record_run


def test_record_stats_and_report_of_a_hits_import_run(validated_run, tmp_path, capsys):
    printed = _stats(validated_run, capsys)
    blocks = re.split(r"^split (\w+) .*$", printed, flags=re.M)[1:]
    per_split = {name: [re.split(r"\s{2,}", line.strip()) for line in body.split("-\n", 1)[1].strip().splitlines()]
                 for name, body in zip(blocks[::2], blocks[1::2])}
    assert list(per_split) == ["train", "dev", "test"]
    page = _report(validated_run, tmp_path / "rep")
    table = page.tables[RECORD_CAPTION]
    assert table[0] == ["statistic", "train", "dev", "test", "paper"]
    for index, name in enumerate(("train", "dev", "test"), 1):
        assert [[row[0], row[index], row[4]] for row in table[1:]] == per_split[name]
    # by hand: train = p1 (7 tokens, 3 entities; vocabulary anna met bob in paris . left) with
    # queries of 4 and 5 tokens (vocabulary @placeholder met bob . anna in); dev = p2 (8 tokens,
    # 2 entities; carl saw dana at the lake . swam) with one query of 5 (@placeholder swam in the lake)
    assert [row[1:4] for row in table[1:]] == [["2", "1", "0"], ["1", "1", "0"], ["7", "8", "0"], ["6", "5", "0"],
                                               ["7.0", "8.0", "0.0"], ["3.0", "2.0", "0.0"], ["4.5", "5.0", "0.0"]]
    assert [s["title"] for s in page.svgs][:3] == ["Tokens per passage", "Tokens per query", "Entities per passage"]
    assert page.tables["The first 3 of 3 queries by id"][1][0] == "p1-a-0"
