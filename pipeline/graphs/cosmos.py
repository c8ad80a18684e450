"""Cosmos QA stage 1 as a Beam pipeline; imported by `pipeline.cli.cosmos` only when it runs."""
from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence, Union

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions

from data_specs.models import CosmosSpec
from pipeline.engine.runner import clear_output, new_pipeline, run_pipeline
from transforms.core.accounting import Reject
from transforms.core.io.sinks import WriteTables
from transforms.core.io.tables import read_summary
from transforms.core.models.loading import check_spacy
from transforms.core.progress.steps import ProgressLine
from transforms.core.reporting.provenance import file_metadata
from transforms.core.resume.checkpoint import Checkpoint
from transforms.core.resume.memo import resume_work
from transforms.core.stages import Summarize
from transforms.cosmos.paragraphs import (
    COHERENCE_STAGE,
    SAMPLE_STAGE,
    SENTENCE_STAGE,
    STORY_SAMPLE_STAGE,
    STORY_STAGE,
    Paragraphs,
)
from transforms.cosmos.read import STAGE as READ_STAGE
from transforms.cosmos.read import ReadStories
from transforms.cosmos.scorers import check_scorer
from transforms.cosmos.segment import STAGE as SEGMENT_STAGE
from transforms.cosmos.segment import Paragraph

REPO_ROOT = Path(__file__).resolve().parents[2]
DEMO_DATA = REPO_ROOT / "tests" / "data" / "cosmos"
PARAGRAPH_TABLES = ("paragraphs", "rejects")
STAGE_ORDER = [READ_STAGE, STORY_STAGE, STORY_SAMPLE_STAGE, SENTENCE_STAGE, COHERENCE_STAGE, SEGMENT_STAGE,
               SAMPLE_STAGE]
PathLike = Union[str, Path]
READ_CHECKPOINT = "stories"   # the checkpoint of the read stage, in the work folder




# --------------------------------------------------------------------------- stage 1 (Beam)

class GenerateCosmosParagraphs(beam.PTransform):
    """Stage 1 from input patterns to `{output}/{paragraphs,rejects}/` Parquet and summary.json.
    With `work` (the run's work folder), the models' results are kept there and reused by a rerun."""

    def __init__(self, spec: CosmosSpec, inputs: Sequence[str], output: str, progress: bool = True,
                 file_metadata: Optional[dict[str, str]] = None, work: Optional[str] = None):
        super().__init__()
        self._spec, self._inputs, self._output = spec, list(inputs), output.rstrip("/")
        self._progress = progress
        self._meta = file_metadata
        self._work = work

    def expand(self, pbegin):
        spec, out = self._spec, self._output
        shards = spec.output.num_shards
        progress = ProgressLine(self._progress)
        # The stories read are kept in the work folder once all are read: a rerun starts after them.
        read = Checkpoint(self._work, READ_CHECKPOINT)
        restored = read.restored(pbegin)
        if restored is None:
            stories, read_rejects, read_tallies = pbegin | "ReadStories" >> ReadStories(self._inputs, spec.input, progress)
            # The sampling rounds wait for the kept stories (done.json), not the stories
            # themselves: what waits is held whole, so only their ids wait.
            done = read.keep_parts(stories, [read_rejects], [read_tallies])
            stories = stories | "ProgressRead" >> progress.step("read", "stories")
        else:
            done = None
            stories, read_rejects, read_tallies = restored
            stories = stories | "ProgressRestored" >> progress.step("restored", "stories")
        paragraphs, rejects, tallies = stories | "Paragraphs" >> Paragraphs(
            spec.paragraph, spec.sentences, spec.coherence, spec.sample, spec.seed,
            resume_work(self._work, spec.output.resume_every), spec.input, hold=done)
        # Stories are counted as their coherence batch is scored (its `((coherence, "in"), n)`
        # tally, sent per batch by `accounting.route`); the segment stage's own tallies come once
        # per bundle (a whole stage in the local runner) and count sentences.
        segmented = progress.step("segmented", "stories",
                                  count=lambda t: t[1] if t[0] == (COHERENCE_STAGE, "in") else 0)
        paragraphs = paragraphs | "ProgressKept" >> progress.step("kept", "paragraphs")
        # Each stage's rejects are written in the stage that made them: a Flatten before one
        # writer would hold every reject (half a million on the Blog Authorship Corpus) in the
        # in-process runner's driver.
        all_rejects = [read_rejects, *rejects]
        (paragraphs, *all_rejects) | "WriteTables" >> WriteTables(
            out, ("paragraphs", *["rejects"] * len(all_rejects)), shards, dataset="cosmos",
            file_metadata=self._meta, row_of={"paragraphs": Paragraph.row, "rejects": Reject.row})
        # On each stage's tallies, in the stage that makes them: after the Flatten the step would
        # run only once every stage before it has finished.
        tallies = [t | f"ProgressSegmented{i}" >> segmented for i, t in enumerate(tallies)]
        return ([read_tallies, *tallies] | "FlattenTallies" >> beam.Flatten()
                | "Summarize" >> Summarize(f"{out}/summary.json", STAGE_ORDER))


def run_paragraphs(spec: CosmosSpec, inputs: Sequence[str], output: str,
                   options: Optional[PipelineOptions] = None, work: Optional[str] = None) -> dict:
    """Run stage 1; returns the summary (also in `{output}/summary.json`). With `work` (a work
    folder for this spec, these inputs and models), the models' results are kept there and
    reused by a rerun."""
    check_spacy(spec.sentences.model, [spec.sentences.component], option="sentences.model")
    check_scorer(spec.coherence)
    clear_output(output, PARAGRAPH_TABLES)
    pipeline = new_pipeline(options)
    pipeline | "GenerateCosmosParagraphs" >> GenerateCosmosParagraphs(
        spec, inputs, output, file_metadata=file_metadata(spec, inputs), work=work)
    run_pipeline(pipeline)
    return read_summary(f"{output.rstrip('/')}/summary.json")
