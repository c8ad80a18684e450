"""Resume: `run_record` / `run_annotate` with a work folder keep the model's results there (and
`run_record` its curated splits), and a rerun with that folder, whole or partly lost, writes
the rows and the accounting of a clean run while annotating only what is missing."""
from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest
from apache_beam.metrics import MetricsFilter

from data_specs import RecordSpec, load_dataset_spec
from pipeline.graphs.record import run_annotate, run_record
from tests.conftest import INPUTS, URL_LISTS, parquet_rows
from transforms.core.resume.memo import count_stored, write_piece

# The sample corpus: 15 articles read, 12 of them reach the annotate stage (one duplicate id,
# one near duplicate, one passage too short), so 12 results are kept.
ANNOTATED = 12


def counter(result, name: str) -> int:
    found = result.metrics().query(MetricsFilter().with_name(name))["counters"]
    return sum(c.committed for c in found)


def summary(output: Path) -> dict:
    return json.loads((output / "summary.json").read_text(encoding="utf-8"))


def generate(output: Path, work: Path | None = None):
    spec = load_dataset_spec(RecordSpec, "record")
    return run_record(spec, INPUTS, str(output), URL_LISTS, work=None if work is None else str(work))


def stored_pairs(folder: Path) -> list[tuple[str, object]]:
    return [pair for piece in sorted(folder.glob("*.pieces")) for pair in pickle.loads(piece.read_bytes())]


def keep_every_other(folder: Path) -> list[str]:
    """Re-cut the pieces of `folder` into one result each and delete every other one, as a
    run killed half-way leaves it; returns the keys kept."""
    pairs = sorted(stored_pairs(folder), key=lambda pair: pair[0])
    for piece in folder.glob("*.pieces"):
        piece.unlink()
    for pair in pairs[::2]:
        write_piece(str(folder), [pair])
    return [key for key, _ in pairs[::2]]


@pytest.fixture(scope="module")
def clean_run(tmp_path_factory) -> Path:
    output = tmp_path_factory.mktemp("clean")
    generate(output)
    return output


@pytest.fixture(scope="module")
def first_run(tmp_path_factory):
    """A run with a fresh work folder: `(output, work, result)`."""
    root = tmp_path_factory.mktemp("first")
    result = generate(root / "out", root / "work")
    return root / "out", root / "work", result


def test_a_run_with_a_work_folder_keeps_each_annotation_and_writes_the_clean_rows(clean_run, first_run):
    output, work, result = first_run
    assert count_stored(str(work))[1] == ANNOTATED
    # Kept: each article annotated, i.e. each passage written and the one the passage filter rejected.
    filtered = [r["record_id"] for r in json_rows(clean_run, "rejects") if r["stage"] == "passage_filter"]
    assert sorted(key.split(":")[0] for key, _ in stored_pairs(work / "annotate-spacy")) == sorted(
        [r["passage_id"] for r in json_rows(clean_run, "passages")] + filtered)
    assert (counter(result, "memo.computed"), counter(result, "memo.reused")) == (ANNOTATED, 0)
    # The stages before annotation are kept too: the 12 splits, and the 3 rejects of one duplicate
    # id, one near duplicate and one passage too short.
    assert json.loads((work / "curated" / "done.json").read_text())["elements"]["kept"] == ANNOTATED
    assert json.loads((work / "curated" / "done.json").read_text())["elements"]["rejects"] == 3
    assert parquet_rows(output) == parquet_rows(clean_run)
    assert summary(output) == summary(clean_run)


def json_rows(output: Path, table: str) -> list[dict]:
    return [json.loads(row) for row in parquet_rows(output)[table]]


def test_a_rerun_with_every_result_kept_never_runs_the_model(clean_run, first_run, tmp_path):
    _, work, _ = first_run
    before = sorted(p.name for p in (work / "annotate-spacy").glob("*.pieces"))
    result = generate(tmp_path / "out", work)
    assert (counter(result, "memo.computed"), counter(result, "memo.reused")) == (0, ANNOTATED)
    assert counter(result, "annotate.texts") == 0      # no text went through spaCy
    # No input read: the 12 curated splits were read back instead.
    assert (counter(result, "progress.articles.read"), counter(result, "progress.articles.restored")) == (0, ANNOTATED)
    assert sorted(p.name for p in (work / "annotate-spacy").glob("*.pieces")) == before
    assert parquet_rows(tmp_path / "out") == parquet_rows(clean_run)
    assert summary(tmp_path / "out") == summary(clean_run)


def test_a_rerun_after_losing_half_the_results_annotates_the_rest_only(clean_run, first_run, tmp_path):
    _, first_work, _ = first_run
    work = tmp_path / "work"
    (work / "annotate-spacy").mkdir(parents=True)
    for pair in stored_pairs(first_work / "annotate-spacy"):
        write_piece(str(work / "annotate-spacy"), [pair])
    kept = keep_every_other(work / "annotate-spacy")
    assert len(kept) == ANNOTATED // 2
    result = generate(tmp_path / "out", work)
    assert counter(result, "progress.articles.read") == 15   # no curated checkpoint here: read again
    assert (work / "curated" / "done.json").exists()
    assert (counter(result, "memo.computed"), counter(result, "memo.reused")) == (ANNOTATED // 2, ANNOTATED // 2)
    assert count_stored(str(work))[1] == ANNOTATED     # the lost half is kept again
    assert parquet_rows(tmp_path / "out") == parquet_rows(clean_run)
    assert summary(tmp_path / "out") == summary(clean_run)


def test_record_annotate_reruns_from_its_work_folder(tmp_path):
    spec = load_dataset_spec(RecordSpec, "record")
    work = tmp_path / "work"
    first = run_annotate(spec, INPUTS, str(tmp_path / "first"), work=str(work))
    stored = count_stored(str(work))[1]
    assert stored == counter(first, "memo.computed") > 0
    keep_every_other(work / "annotate-articles")
    second = run_annotate(spec, INPUTS, str(tmp_path / "second"), work=str(work))
    assert counter(second, "memo.reused") == (stored + 1) // 2
    assert counter(second, "memo.computed") == stored // 2
    assert parquet_rows(tmp_path / "second") == parquet_rows(tmp_path / "first")
    assert summary(tmp_path / "second") == summary(tmp_path / "first")
