"""End to end: `csdata record annotate` once, then `generate --annotations` gives exactly the rows
of cold runs, for the same spec, a split variant, a changed article and a changed model setting."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from data_specs import load_spec
from pipeline.cli.main import main
from tests.conftest import DATA, INPUTS, URL_LISTS, generate
from transforms.core.io.tables import read_table
from transforms.record.annotate.store import ner_rules_key

pytestmark = pytest.mark.slow

TABLES = ("passages", "queries", "rejects")
# Of the corpus's 15 records (README): one duplicate id, one near duplicate and one article too
# short for any passage leave 12 articles for annotation.
ANNOTATED = 12


def rows(output: Path, table: str) -> list[dict]:
    found = read_table(str(output), table).to_pylist()
    return sorted(found, key=lambda row: sorted((k, repr(v)) for k, v in row.items()))


def same_rows(a: Path, b: Path) -> None:
    for table in TABLES:
        assert rows(a, table) == rows(b, table), table


def summary(output: Path) -> dict:
    return json.loads((output / "summary.json").read_text(encoding="utf-8"))


def cli(*argv: str) -> int:
    return main([str(a) for a in argv])


def corpus_args(inputs=INPUTS) -> list[str]:
    args = []
    for path in inputs:
        args += ["--input", path]
    for path in URL_LISTS:
        args += ["--url-list", path]
    return args


@pytest.fixture(scope="module")
def annotations(tmp_path_factory) -> Path:
    output = tmp_path_factory.mktemp("ann") / "ann"
    assert cli("record", "annotate", *[a for p in INPUTS for a in ("--input", p)], "--output", output) == 0
    return output


def test_annotate_writes_one_row_per_article_and_balances(annotations):
    stages = summary(annotations)["stages"]
    assert list(stages) == ["read", "dedup_exact", "passage_split", "annotate"]
    assert all(stage["balanced"] for stage in stages.values())
    assert stages["read"]["kept"] == 15 and stages["dedup_exact"]["rejected"] == {"duplicate_id": 1}
    table = read_table(str(annotations), "annotations").to_pylist()
    assert len(table) == 14          # near duplicates and short articles too: generate decides
    assert {r["annotator"] for r in table} == {"spacy"} and len({r["settings_hash"] for r in table}) == 1
    # Each row carries the article's MinHash signature (the spec's 128 permutations, 5-word shingles).
    assert all(len(r["minhash"]) == 128 and r["minhash_key"].startswith("shingles=5 perm=128 ")
               for r in table)
    # And its entities after the spec's NER post-rules, keyed by the rule list and the rules' code.
    rules = load_spec("record").annotator.ner_rules
    assert rules and {r["ner_rules"] for r in table} == {ner_rules_key(rules)}
    assert any(r["ruled_mentions"] != r["mentions"] for r in table)   # the rules changed some spans
    assert (annotations / "csdata-run.json").is_file()


def test_generate_from_annotations_equals_the_cold_run(annotations, record_generate_run, tmp_path, capsys):
    warm = tmp_path / "warm"
    assert generate(warm, "--annotations", str(annotations)) == 0
    same_rows(warm, record_generate_run)
    entry = summary(warm)["annotations"]
    assert (entry["articles"], entry["reused"], entry["annotated"]) == (ANNOTATED, ANNOTATED, 0)
    assert f"reused {ANNOTATED} of {ANNOTATED} annotations" in capsys.readouterr().out
    assert summary(warm)["stages"] == summary(record_generate_run)["stages"]


def test_a_split_variant_reuses_every_annotation(annotations, tmp_path):
    variant = ["--set", "passage.min_tokens=60", "--set", "query.ngram=4"]
    cold, warm = tmp_path / "cold", tmp_path / "warm"
    assert generate(cold, *variant) == 0
    assert generate(warm, *variant, "--annotations", str(annotations)) == 0
    same_rows(warm, cold)
    entry = summary(warm)["annotations"]
    assert entry["reused"] == entry["articles"] == summary(cold)["stages"]["annotate"]["in"]
    assert entry["annotated"] == 0


def test_an_ner_rules_variant_reuses_every_annotation_and_applies_its_rules(annotations, tmp_path):
    # Another rule list than the stored one: the stored model spans serve, the rules run again.
    variant = ["--set", "annotator.ner_rules=[named_dates, dateline, honorifics, capitalised_runs]"]
    cold, warm = tmp_path / "cold", tmp_path / "warm"
    assert generate(cold, *variant) == 0
    assert generate(warm, *variant, "--annotations", str(annotations)) == 0
    same_rows(warm, cold)
    entry = summary(warm)["annotations"]
    assert entry["reused"] == entry["articles"] == ANNOTATED and entry["annotated"] == 0


def test_a_changed_article_is_annotated_again(annotations, tmp_path):
    corpus = tmp_path / "corpus"
    shutil.copytree(DATA, corpus)
    story = corpus / "cnn" / "stories" / "02da4ac9f84666b6e2927707362da8af6fceab50.story"
    text = story.read_text(encoding="utf-8")
    story.write_text(text.replace("Hoteliers across Zermatt", "Hotel owners across Zermatt"), encoding="utf-8")
    inputs = [str(corpus / "cnn"), str(corpus / "dailymail"), str(corpus / "hf_rows.jsonl")]
    cold, warm = tmp_path / "cold", tmp_path / "warm"
    assert cli("record", "generate", *corpus_args(inputs), "--output", cold) == 0
    assert cli("record", "generate", *corpus_args(inputs), "--output", warm, "--annotations", annotations) == 0
    same_rows(warm, cold)
    entry = summary(warm)["annotations"]
    assert (entry["reused"], entry["annotated"], entry["annotated_because"]) == (
        ANNOTATED - 1, 1, {"text_changed": 1})


def test_a_changed_model_setting_reuses_none(annotations, tmp_path, capsys):
    warm = tmp_path / "warm"
    assert generate(warm, "--set", "annotator.sentences=parser", "--annotations", str(annotations)) == 0
    entry = summary(warm)["annotations"]
    assert (entry["reused"], entry["annotated_because"]) == (0, {"settings_changed": ANNOTATED})
    assert all(stage["balanced"] for stage in summary(warm)["stages"].values())
    assert f"reused 0 of {ANNOTATED} annotations" in capsys.readouterr().out


def test_stored_annotations_are_refused_where_they_cannot_serve(annotations, record_generate_run, tmp_path,
                                                                capsys):
    out = tmp_path / "out"
    assert generate(out, "--annotator", "deepmind-metadata", "--annotations", str(annotations)) == 2
    assert "stored annotations work with the spacy annotator only" in capsys.readouterr().err
    assert generate(out, "--annotations", str(record_generate_run)) == 2     # a generate run, not annotations
    assert "is not the output of a finished `csdata record annotate` run" in capsys.readouterr().err
    assert cli("record", "annotate", "--input", INPUTS[0], "--output", out,
               "--set", "annotator.name=stanza") == 2
    assert "stored annotations work with the spacy annotator only" in capsys.readouterr().err
    assert not out.exists()
