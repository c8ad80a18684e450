"""ProtoQA's Beam pipeline (question curation) and the library call that runs it.

`pipeline.cli.protoqa` imports this module only when `csdata protoqa questions` (or the demo) runs,
so that `csdata --help`, `protoqa score`, `assign`, the sheets and the release never import Beam.
"""
from __future__ import annotations

from typing import Optional, Sequence

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions

from data_specs import ProtoqaSpec
from pipeline.engine.runner import clear_output, new_pipeline, run_pipeline
from transforms.core.io.sinks import WriteTable
from transforms.core.io.tables import read_summary
from transforms.core.progress.steps import ProgressLine
from transforms.core.reporting.provenance import file_metadata
from transforms.core.stages import Summarize
from transforms.protoqa.questions import QUESTION_STAGES, CurateQuestions, scraped_jsonl
from transforms.protoqa.read import ReadQuestionLines, question_units, read_id_list


def run_questions(spec: ProtoqaSpec, inputs: Sequence[str], output: str, omitted: Sequence[str] = (),
                  flagged: Sequence[str] = (), options: Optional[PipelineOptions] = None) -> dict:
    """Question curation on Beam: OUTPUT/questions/, rejects/, questions.jsonl and summary.json;
    returns the summary."""
    out = output.rstrip("/")
    clear_output(out, ("questions", "rejects"), ("summary.json", "questions.jsonl"))
    omitted_ids, omitted_questions, flagged_ids = [], [], []
    for path in omitted:
        ids, texts = read_id_list(path)
        omitted_ids += ids
        omitted_questions += texts
    for path in flagged:
        flagged_ids += read_id_list(path)[0]
    shards = spec.output.num_shards
    meta = file_metadata(spec, [*inputs, *omitted, *flagged])

    def write_jsonl(rows):
        with FileSystems.create(f"{out}/questions.jsonl") as handle:
            for row in sorted(rows, key=lambda r: r["question_id"]):
                handle.write((scraped_jsonl(row) + "\n").encode("utf-8"))

    pipeline = new_pipeline(options)
    progress = ProgressLine()
    lines = pipeline | "Read" >> ReadQuestionLines(inputs, spec.limits, progress)
    lines = lines | "ProgressRead" >> progress.step("read", "questions", count=question_units)
    rows, rejects, tallies = lines | "CurateQuestions" >> CurateQuestions(
        spec.questions, spec.seed, omitted_ids, omitted_questions, flagged_ids, spec.limits)
    rows = rows | "ProgressKept" >> progress.step("kept", "questions")
    rows | "WriteQuestions" >> WriteTable(out, "questions", shards, dataset="protoqa", file_metadata=meta)
    (rows | "CollectRows" >> beam.combiners.ToList() | "WriteJsonl" >> beam.Map(write_jsonl))
    (rejects | "RejectRows" >> beam.Map(lambda r: r.row())
     | "WriteRejects" >> WriteTable(out, "rejects", shards, dataset="protoqa", file_metadata=meta))
    tallies | "Summarize" >> Summarize(f"{out}/summary.json", QUESTION_STAGES)
    run_pipeline(pipeline)
    return read_summary(f"{out}/summary.json")
