"""`make bench`: ReCoRD stages 1-2 against bare spaCy, then the machine filter per reader.

Runs the whole generator (read, dedup, MinHash LSH, split, NER + coreference, filters, queries,
Parquet) in process, then loads the same spaCy pipeline and runs `nlp.pipe` over exactly the
texts the generator annotates. Both timings include loading the model; each side has one
untimed warm-up run and the median of `--rounds` timed runs is shown. Target ratio >= 0.85.
Then it times `csdata record filter` (5 folds: train per fold, predict, write) on the generated
triples with each reader; the cross-encoder runs with few training steps (`--cross-steps`),
since CPU fine-tuning at the spec's 400 steps per fold takes hours.

    .venv/bin/python tests/bench_record.py [--input PATTERN ...] [--rounds 3] [--readers ...]
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from pipeline.cli import quiet_beam_import_warning  # noqa: E402

quiet_beam_import_warning()

from apache_beam.options.pipeline_options import PipelineOptions  # noqa: E402

from data_specs import RecordSpec, load_spec  # noqa: E402
from pipeline.record_beam import run_filter, run_record  # noqa: E402
from transforms.core.files import expand_local_inputs  # noqa: E402
from transforms.core.io import read_summary, read_table  # noqa: E402
from transforms.record.annotate.spacy_ner import load_ner_pipeline, split_segments  # noqa: E402
from transforms.record.curate import make_split_fn  # noqa: E402
from transforms.record.read import SUPPORTED_SUFFIXES, iter_raw_records, parse_raw_record  # noqa: E402

SHARED = os.path.join(ROOT, "..", "shared", "samples", "cnndm")


def default_inputs() -> list[str]:
    """The real CNN/DM samples beside the checkout when present, else the repo's own stories."""
    if os.path.isdir(SHARED):
        return [os.path.join(SHARED, "stories"), os.path.join(SHARED, "hf_train_sample.jsonl")]
    return [os.path.join(ROOT, "tests", "data", "record")]


def annotated_texts(inputs: list[str], spec: RecordSpec, keep_ids: set[str]) -> list[str]:
    """The texts the generator hands to spaCy: segments of the splits that reached annotation."""
    split_fn = make_split_fn(spec.passage)
    texts = []
    for path in expand_local_inputs(inputs, SUPPORTED_SUFFIXES):
        for matched in sorted(glob.glob(path)):
            with open(matched, "rb") as handle:
                for record in iter_raw_records(matched, handle):
                    for article in parse_raw_record(record):
                        if getattr(article, "id", None) in keep_ids:
                            keep_ids.discard(article.id)
                            for split in split_fn(article):
                                if hasattr(split, "body"):
                                    texts.extend(split_segments(split))
    return texts


def time_pipeline(inputs: list[str], spec: RecordSpec, args: list[str]) -> tuple[float, dict, str]:
    out = tempfile.mkdtemp(prefix="bench-record-")
    start = time.perf_counter()
    run_record(spec, inputs, out, options=PipelineOptions(args))
    return time.perf_counter() - start, read_summary(os.path.join(out, "summary.json")), out


def time_bare(texts: list[str], spec: RecordSpec) -> float:
    start = time.perf_counter()
    nlp = load_ner_pipeline(spec.annotator.model, spec.annotator.sentences)
    for _ in nlp.pipe(texts, batch_size=spec.annotator.batch_size):
        pass
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--input", action="append")
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds; the median is shown")
    parser.add_argument("--readers", default="lexical,predictions,cross-encoder",
                        help="comma-separated readers to time in the machine filter ('' for none)")
    parser.add_argument("--cross-steps", type=int, default=10,
                        help="cross-encoder training steps per fold in the benchmark")
    args = parser.parse_args()
    inputs = args.input or default_inputs()
    spec = load_spec("record")
    print(f"inputs: {', '.join(os.path.relpath(i) for i in inputs)}")

    # One untimed warm-up of each side first: the first run in a process pays for imports.
    time_pipeline(inputs, spec, ["--runner=FnApiRunner"])
    runs = [time_pipeline(inputs, spec, ["--runner=FnApiRunner"]) for _ in range(args.rounds)]
    seconds = statistics.median(r[0] for r in runs)
    summary, out = runs[0][1], runs[0][2]
    articles = summary["stages"]["read"]["kept"]
    annotated = summary["stages"]["annotate"]["in"]

    annotated_ids = set(read_table(out, "passages", columns=["passage_id"]).column(0).to_pylist())
    annotated_ids |= {r["record_id"] for r in read_table(out, "rejects").to_pylist()
                      if r["stage"] in ("passage_filter", "annotate")}
    texts = annotated_texts(inputs, spec, set(annotated_ids))
    time_bare(texts[:200], spec)
    bare = statistics.median(time_bare(texts, spec) for _ in range(args.rounds))

    pipeline_rate = articles / seconds
    bare_rate = articles / bare
    print(f"articles read: {articles}; annotated: {annotated}; texts through spaCy: {len(texts)}")
    print(f"stages 1-2 (FnApiRunner, in process): {seconds:7.2f} s  {pipeline_rate:7.2f} articles/s")
    print(f"bare nlp.pipe on the same texts:     {bare:7.2f} s  {bare_rate:7.2f} articles/s")
    print(f"ratio (pipeline / bare): {pipeline_rate / bare_rate:.2f}   (target >= 0.85)")
    bench_filter(out, spec, [r for r in args.readers.split(",") if r], args.cross_steps)


def bench_filter(run_dir: str, spec: RecordSpec, readers: list[str], cross_steps: int) -> None:
    """Triples/s of the machine filter per reader on the triples of `run_dir`."""
    if not readers:
        return
    predictions = None
    print(f"machine filter, {spec.filter.folds} folds:")
    for reader in readers:
        choice, reader_spec = reader, spec
        if reader == "predictions":
            if predictions is None:
                print("  predictions: skipped (needs a lexical run first for its answers)")
                continue
            choice = f"predictions:{predictions}"
        if reader == "cross-encoder":
            readers_section = spec.filter.readers
            cross = readers_section.cross_encoder.model_copy(update={"max_steps": cross_steps})
            reader_spec = spec.model_copy(update={"filter": spec.filter.model_copy(update={
                "readers": readers_section.model_copy(update={"cross_encoder": cross})})})
        out = tempfile.mkdtemp(prefix=f"bench-filter-{reader}-")
        start = time.perf_counter()
        summary = run_filter(reader_spec, run_dir, out, choice, options=PipelineOptions(["--runner=FnApiRunner"]))
        seconds = time.perf_counter() - start
        note = f" ({cross_steps} steps/fold)" if reader == "cross-encoder" else ""
        print(f"  {reader + note:<34}{summary['in'] / seconds:9.1f} triples/s   answered "
              f"{summary['answered_rate']:.1%} (random {summary['random_baseline']:.1%})")
        if reader == "lexical":
            predictions = os.path.join(out, "answers.json")
            rows = read_table(out, "queries").to_pylist() + read_table(out, "dropped").to_pylist()
            with open(predictions, "w", encoding="utf-8") as handle:
                json.dump({r["query_id"]: r["reader_answer"] for r in rows}, handle)


if __name__ == "__main__":
    main()
