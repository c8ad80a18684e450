"""The ReCoRD generator, stages 1-2: curated passages and cloze queries as Parquet shards."""
from __future__ import annotations

import os
from typing import Optional, Sequence

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions

from data_specs import load_schema
from transforms.accounting import Stage, Summarize
from transforms.annotate import Annotate
from transforms.curation import (DEDUP_ID, DEDUP_NEAR, SPLIT, DropDuplicateIds,
                                 DropNearDuplicates, make_split_fn)
from transforms.queries import (PASSAGE_STAGE, SENTENCE_STAGE, filter_passage, passage_row,
                                sentence_queries)
from transforms.sources import STAGE as READ_STAGE
from transforms.sources import ReadArticles, read_url_list
from transforms.annotate import STAGE as ANNOTATE_STAGE

STAGES = [READ_STAGE, DEDUP_ID, DEDUP_NEAR, SPLIT, ANNOTATE_STAGE, PASSAGE_STAGE, SENTENCE_STAGE]
TABLES = ("passages", "queries", "rejects")


class WriteTable(beam.PTransform):
    """Write dict rows as Parquet shards `{output}/{table}/part-*.parquet` with the spec's schema."""

    def __init__(self, output: str, table: str, num_shards: int = 0):
        super().__init__()
        self._output = output
        self._table = table
        self._num_shards = num_shards

    def expand(self, rows):
        return rows | beam.io.WriteToParquet(
            file_path_prefix=f"{self._output}/{self._table}/part",
            schema=load_schema("record", self._table),
            file_name_suffix=".parquet",
            num_shards=self._num_shards,
        )


class GenerateRecord(beam.PTransform):
    """Stages 1-2 from input patterns to Parquet under `output`; writes `summary.json` too."""

    def __init__(self, spec: dict, inputs: Sequence[str], output: str,
                 url_lists: Sequence[str] = ()):
        super().__init__()
        self._spec = spec
        self._inputs = list(inputs)
        self._output = output.rstrip("/")
        self._url_lists = list(url_lists)

    def expand(self, pbegin):
        spec, out = self._spec, self._output
        near = spec["curation"]["near_duplicates"]
        shards = int(spec["output"]["num_shards"])
        all_rejects, all_tallies = [], []

        def collect(result):
            kept, rejects, tallies = result
            all_rejects.append(rejects)
            all_tallies.append(tallies)
            return kept

        articles = collect(pbegin | "ReadArticles" >> ReadArticles(
            self._inputs, spec["input"]["default_source"]))
        url_info = None
        if self._url_lists:
            url_info = (pbegin | "UrlListPaths" >> beam.Create(self._url_lists)
                        | "ReadUrlLists" >> beam.FlatMap(read_url_list))
        articles = collect(articles | "DropDuplicateIds" >> DropDuplicateIds(url_info))
        if near["enabled"]:
            articles = collect(articles | "DropNearDuplicates" >> DropNearDuplicates(
                float(near["threshold"]), int(near["num_perm"]), int(near["shingle_size"]),
                int(spec["seed"]), int(near["max_bucket"])))
        splits = collect(articles | "SplitPassages" >> Stage(SPLIT, make_split_fn(spec)))
        annotated = collect(splits | "Annotate" >> Annotate(spec))
        passages = collect(annotated | "FilterPassages" >> Stage(
            PASSAGE_STAGE, lambda a: filter_passage(a, spec)))
        sentence_results = collect(passages | "FilterSentences" >> Stage(
            SENTENCE_STAGE, lambda a: sentence_queries(a, spec), units=lambda a: len(a.sentences)))
        queries = sentence_results | "FlattenQueries" >> beam.FlatMap(lambda rows: rows)

        (passages | "PassageRows" >> beam.Map(passage_row)
         | "WritePassages" >> WriteTable(out, "passages", shards))
        queries | "WriteQueries" >> WriteTable(out, "queries", shards)
        (all_rejects | "FlattenRejects" >> beam.Flatten()
         | "RejectRows" >> beam.Map(lambda r: r.row())
         | "WriteRejects" >> WriteTable(out, "rejects", shards))
        return (all_tallies | "FlattenAllTallies" >> beam.Flatten()
                | "Summarize" >> Summarize(f"{out}/summary.json", STAGES))


def clear_output(output: str) -> None:
    """Remove the tables and summary of an earlier run in a local output directory."""
    import shutil

    if "://" in output:
        return
    for table in TABLES:
        shutil.rmtree(os.path.join(output, table), ignore_errors=True)
    summary = os.path.join(output, "summary.json")
    if os.path.exists(summary):
        os.remove(summary)


def run_record(spec: dict, inputs: Sequence[str], output: str, url_lists: Sequence[str] = (),
               options: Optional[PipelineOptions] = None):
    """Build and run the generator; returns the finished PipelineResult."""
    clear_output(output)
    pipeline = beam.Pipeline(options=options or PipelineOptions(["--runner=FnApiRunner"]))
    pipeline | "GenerateRecord" >> GenerateRecord(spec, inputs, output, url_lists)
    result = pipeline.run()
    result.wait_until_finish()
    return result
