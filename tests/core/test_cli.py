"""The CLI's one error policy: user errors are one line on stderr and exit 2, before anything at
`--output` is touched; `--debug` adds the traceback; a closed stdout ends quietly."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from pipeline.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"


def previous_output(tmp_path: Path) -> Path:
    """An output directory holding an earlier run's files, which a failed run must not touch."""
    out = tmp_path / "out"
    (out / "passages").mkdir(parents=True)
    (out / "passages" / "part-0.parquet").write_bytes(b"earlier run")
    (out / "summary.json").write_text('{"stages": {}}')
    return out


def assert_untouched(out: Path) -> None:
    assert (out / "passages" / "part-0.parquet").read_bytes() == b"earlier run"
    assert (out / "summary.json").read_text() == '{"stages": {}}'


def one_line_error(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("csdata: error: ")
    return err[0]


@pytest.mark.parametrize("override, words", [
    ("passage.min_tokens=abc", ["passage.min_tokens", "'abc'", "integer"]),
    ("passage.min_tokens=-5", ["passage.min_tokens", "-5", ">= 0"]),
    ("query.min_tokens=1.5", ["query.min_tokens", "1.5"]),
    ("passage=5", ["passage", "mapping"]),
    ("curation.near_duplicates.threshold=1.5", ["threshold", "1.5"]),
    ("annotator.min_articles_per_call=500", ["min_articles_per_call", "500", "max_articles_per_call"]),
    ("annotator.nmae=spacy", ["annotator.nmae", "unknown"]),
])
def test_bad_spec_value_is_one_line_and_keeps_the_previous_output(tmp_path, capsys, override, words):
    out = previous_output(tmp_path)
    code = main(["record", "generate", "--input", str(DATA / "record" / "cnn"), "--output", str(out),
                 "--set", override])
    assert code == 2
    line = one_line_error(capsys)
    assert all(w in line for w in words), line
    assert_untouched(out)


def test_users_own_spec_file_is_validated(tmp_path, capsys):
    spec = (ROOT / "data_specs" / "record.yaml").read_text().replace("  min_tokens: 100", "  min_tokns: 100")
    (tmp_path / "my.yaml").write_text(spec)
    out = previous_output(tmp_path)
    assert main(["record", "generate", "--input", str(DATA / "record" / "cnn"), "--output", str(out),
                 "--spec", str(tmp_path / "my.yaml")]) == 2
    assert "passage.min_tokns" in one_line_error(capsys)
    assert_untouched(out)


@pytest.mark.parametrize("argv, words", [
    (["record", "generate", "--input", str(DATA / "record" / "cnn"), "--set", "annotator.model=xx_no_such_sm"],
     ["xx_no_such_sm", "annotator.model"]),
    (["cosmos", "paragraphs", "--input", str(DATA / "cosmos" / "blogs"), "--set", "coherence.name=bert-nsp"],
     ["bert-nsp", "model_path"]),
    (["cosmos", "paragraphs", "--input", str(DATA / "cosmos" / "blogs"), "--set", "sentences.model=xx_no_such_sm"],
     ["xx_no_such_sm", "sentences.model"]),
])
def test_missing_model_is_found_before_the_run_starts(tmp_path, capsys, argv, words):
    out = previous_output(tmp_path)
    assert main(argv + ["--output", str(out)]) == 2
    line = one_line_error(capsys)
    assert all(w in line for w in words), line
    assert_untouched(out)


def test_missing_predictions_file_is_found_before_the_filter_runs(tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    (run / "summary.json").write_text('{"stages": {}}')
    out = previous_output(tmp_path)
    assert main(["record", "filter", str(run), "--reader", "predictions:/no/such/file.json",
                 "--output", str(out)]) == 2
    assert "/no/such/file.json" in one_line_error(capsys)
    assert_untouched(out)


def test_missing_lemmatizer_model_stops_cluster_prep(tmp_path, capsys):
    out = tmp_path / "prep"
    assert main(["protoqa", "cluster-prep", "--answers", str(DATA / "protoqa" / "crowd_answers.csv"),
                 "--output", str(out), "--set", "answers.lemmatizer.model=xx_no_such_sm"]) == 2
    assert "answers.lemmatizer.model" in one_line_error(capsys)
    assert not out.exists()


def test_unreadable_predictions_name_the_file(tmp_path, capsys):
    bad = tmp_path / "preds.json"
    bad.write_text("this is not json")
    targets = DATA / "protoqa_score" / "targets.jsonl"
    assert targets.exists()
    assert main(["protoqa", "score", "--targets", str(targets), "--predictions", str(bad)]) == 2
    assert str(bad) in one_line_error(capsys)
    assert main(["protoqa", "score", "--targets", str(targets), "--predictions", str(tmp_path / "nope.json")]) == 2
    assert "nope.json" in one_line_error(capsys)


def test_debug_shows_the_traceback(tmp_path, capsys):
    assert main(["--debug", "record", "generate", "--input", str(DATA / "record" / "cnn"),
                 "--output", str(tmp_path / "o"), "--set", "passage.min_tokens=abc"]) == 2
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and "SpecError" in err
    assert err.strip().splitlines()[-1].startswith("csdata: error: ")


def test_closed_stdout_ends_quietly(record_generate_run, monkeypatch, capsys):
    read_end, write_end = os.pipe()
    os.close(read_end)                       # what `| head -1` does once it has its line
    stream = os.fdopen(write_end, "w")
    monkeypatch.setattr(sys, "stdout", stream)
    assert main(["record", "export", str(record_generate_run)]) == 141
    stream.close()                           # quiet: stdout now points at /dev/null
    assert capsys.readouterr().err == ""
