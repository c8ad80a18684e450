"""Resume: `run_paragraphs` / `Paragraphs` with a work folder keep the sentences and the
coherence scores there, and a rerun with that folder, whole or partly lost, writes the rows and
the accounting of a clean run while running the models only on what is missing."""
from __future__ import annotations

import json
import pickle
import shutil
from pathlib import Path
from typing import Any

import apache_beam as beam
import pytest
from apache_beam.testing.util import assert_that, equal_to

from data_specs import CosmosSpec, load_dataset_spec
from pipeline.graphs.cosmos import run_paragraphs
from tests.conftest import beam_test_pipeline, parquet_rows
from tests.cosmos.test_cosmos_sample import STORIES, stories_from_file
from transforms.core.resume.memo import count_stored, write_piece
from transforms.cosmos import scorers
from transforms.cosmos.paragraphs import Paragraphs

DATA = Path(__file__).resolve().parents[1] / "data" / "cosmos"
INPUTS = [str(DATA / "blogs"), str(DATA / "stories.jsonl")]
# The sample blogs: 6 stories are split and scored (the `sentences` and `coherence` stages' in).
SEGMENTED = 6
STEPS = ("sentences", "coherence")


def run(output: Path, work: Path | None = None) -> dict:
    return run_paragraphs(load_dataset_spec(CosmosSpec, "cosmos"), INPUTS, str(output), work=None if work is None else str(work))


def stored(folder: Path) -> dict[str, Any]:
    """The results of a step folder by key (a retried bundle may keep one twice)."""
    return dict(pair for piece in sorted(folder.glob("*.pieces")) for pair in pickle.loads(piece.read_bytes()))


def piece_names(work: Path) -> list[str]:
    return sorted(str(p.relative_to(work)) for p in work.rglob("*.pieces"))


@pytest.fixture(scope="module")
def clean_run(tmp_path_factory) -> Path:
    output = tmp_path_factory.mktemp("clean")
    run(output)
    return output


@pytest.fixture(scope="module")
def first_run(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("first")
    run(root / "out", root / "work")
    return root / "out", root / "work"


def test_a_run_with_a_work_folder_keeps_each_stories_sentences_and_scores(clean_run, first_run):
    output, work = first_run
    sentences, coherence = stored(work / "sentences"), stored(work / "coherence")
    assert len(sentences) == len(coherence) == SEGMENTED
    assert sentences.keys() == coherence.keys()
    # A story's kept scores are one per gap between its kept sentences.
    assert all(len(coherence[key]) == len(sentences[key]) - 1 for key in sentences)
    assert count_stored(str(work)) == (2, 2 * SEGMENTED)
    assert parquet_rows(output) == parquet_rows(clean_run)
    assert json.loads((output / "summary.json").read_text()) == json.loads((clean_run / "summary.json").read_text())


def test_a_rerun_with_every_result_kept_writes_no_piece_and_the_clean_rows(clean_run, first_run, tmp_path):
    _, work = first_run
    before = piece_names(work)
    summary = run(tmp_path / "out", work)
    assert piece_names(work) == before       # nothing was computed, so nothing new was kept
    assert parquet_rows(tmp_path / "out") == parquet_rows(clean_run)
    assert summary == json.loads((clean_run / "summary.json").read_text())


def test_a_rerun_after_losing_half_the_results_computes_them_again(clean_run, first_run, tmp_path):
    _, first_work = first_run
    work = tmp_path / "work"
    for step in STEPS:
        results = sorted(stored(first_work / step).items())
        for key, result in results[::2]:     # every other result survived the kill
            write_piece(str(work / step), [(key, result)])
    assert count_stored(str(work)) == (SEGMENTED, SEGMENTED)
    summary = run(tmp_path / "out", work)
    for step in STEPS:
        assert stored(work / step) == stored(first_work / step)    # the lost half is kept again
    assert parquet_rows(tmp_path / "out") == parquet_rows(clean_run)
    assert summary == json.loads((clean_run / "summary.json").read_text())


def test_rounds_share_the_step_folders_and_a_full_folder_loads_no_scorer(tmp_path, monkeypatch):
    # STORIES (tests/cosmos/test_cosmos_sample.py): round 1 splits and scores b1/post-c, b2/only
    # and b3/storm; post-c gives no paragraph, so round 2 takes b1/post-b.
    spec = load_dataset_spec(CosmosSpec, "cosmos", ["coherence.name=overlap", "paragraph.min_words=10", "paragraph.max_words=30"])
    built: list[int] = []
    original = scorers.OverlapCoherence.__init__

    def counting(self, **options):
        built.append(1)
        original(self, **options)

    monkeypatch.setattr(scorers.OverlapCoherence, "__init__", counting)
    work = tmp_path / "work"
    stories = stories_from_file(STORIES)
    for attempt in ("first", "rerun"):
        with beam_test_pipeline() as p:
            kept, _, _ = p | beam.Create(stories) | Paragraphs(
                spec.paragraph, spec.sentences, spec.coherence, spec.sample, spec.seed, work=str(work))
            assert_that(kept | beam.Map(lambda q: q.paragraph_id),
                        equal_to(["b1/post-b#p000", "b2/only#p000"]), label=f"Kept{attempt}")
        if attempt == "first":
            assert len(built) == 1
            assert sorted(k.split(":")[0] for k in stored(work / "coherence")) == [
                "b1/post-b", "b1/post-c", "b2/only", "b3/storm"]
    assert len(built) == 1      # the rerun found every story's scores


def test_a_rerun_reads_the_kept_stories_not_the_inputs(tmp_path):
    """Stories read once are kept (`stories/done.json`): a rerun restores the read stage from
    them, not from the inputs. The sampling rounds read their chosen stories again from the
    input files, so inputs emptied under the run leave `story_sample` unbalanced (its chosen
    stories are not found) instead of giving other rows unseen."""
    inputs = tmp_path / "inputs"
    shutil.copytree(DATA / "blogs", inputs / "blogs")
    shutil.copy(DATA / "stories.jsonl", inputs / "stories.jsonl")
    copies = [str(inputs / "blogs"), str(inputs / "stories.jsonl")]
    spec, work = load_dataset_spec(CosmosSpec, "cosmos"), tmp_path / "work"
    first = run_paragraphs(spec, copies, str(tmp_path / "first"), work=str(work))
    done = json.loads((work / "stories" / "done.json").read_text())
    assert done["elements"]["kept"] == first["stages"]["read"]["kept"] > SEGMENTED
    rerun = run_paragraphs(spec, copies, str(tmp_path / "out"), work=str(work))
    assert parquet_rows(tmp_path / "out") == parquet_rows(tmp_path / "first")
    assert rerun == first
    for path in (inputs / "blogs").iterdir():
        path.write_text("")
    (inputs / "stories.jsonl").write_text("")
    summary = run_paragraphs(spec, copies, str(tmp_path / "emptied"), work=str(work))
    assert summary["stages"]["read"] == first["stages"]["read"]
    sampled = summary["stages"]["story_sample"]
    assert sampled["kept"] == 0 and not sampled["balanced"]
    # Without the kept stories the emptied inputs give no story at all.
    shutil.rmtree(work / "stories")
    assert run_paragraphs(spec, copies, str(tmp_path / "again"), work=str(work))["stages"]["read"]["kept"] == 0
