"""`transforms.core.resume.memo` and `transforms.core.resume.checkpoint` on the real S3 server: a piece is one
object (no temporary object, no copy), counted from its name, and read back and joined inside a
pipeline; a checkpoint's parts, records and done.json are objects read back whole."""
from __future__ import annotations

import apache_beam as beam
import pytest
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.testing import test_pipeline
from apache_beam.testing.util import assert_that, equal_to

from tests.s3.store import BUCKET, S3_ARGS, keys
from transforms.core.resume.checkpoint import Checkpoint, read_done
from transforms.core.resume.memo import AttachStored, Memo, PieceWriter, count_stored

pytestmark = pytest.mark.s3


def test_pieces_on_s3_are_single_objects_read_back_by_a_pipeline(s3, prefix):
    FileSystems.set_options(PipelineOptions(S3_ARGS))
    work = f"s3://{BUCKET}/{prefix}/work"
    writer = PieceWriter(Memo(f"{work}/step", piece_size=2))
    for key in ("a", "b", "c"):
        writer.add(key, key.upper())
    writer.flush()
    names = [k.rsplit("/", 1)[-1] for k in keys(s3, f"{prefix}/")]
    assert sorted(n.rsplit("-", 1)[-1] for n in names) == ["1.pieces", "2.pieces"]   # nothing else
    assert count_stored(work) == (2, 3)
    pipeline = test_pipeline.TestPipeline(runner="apache_beam.runners.portability.fn_api_runner.FnApiRunner",
                                          options=PipelineOptions(S3_ARGS))
    paired = pipeline | beam.Create(["a", "c", "d"]) | AttachStored(Memo(f"{work}/step"), key_of=str)
    assert_that(paired, equal_to([("a", "A"), ("c", "C"), ("d", None)]))
    pipeline.run().wait_until_finish()


def test_a_checkpoint_on_s3_is_kept_and_read_back_by_a_pipeline(s3, prefix):
    options = PipelineOptions(S3_ARGS)
    FileSystems.set_options(options)
    work = f"s3://{BUCKET}/{prefix}/work"
    runner = "apache_beam.runners.portability.fn_api_runner.FnApiRunner"
    pipeline = test_pipeline.TestPipeline(runner=runner, options=options)
    checkpoint = Checkpoint(work, "curated")
    assert checkpoint.restored(pipeline) is None
    checkpoint.keep(pipeline | "Kept" >> beam.Create(["a", "b", "c"]),
                    [pipeline | "Rejects" >> beam.Create(["r"])], [pipeline | "Tallies" >> beam.Create([])])
    pipeline.run().wait_until_finish()
    names = sorted(k.split("/work/curated/", 1)[1] for k in keys(s3, f"{prefix}/"))
    # One part and its commit record an output (none for the empty tallies), done.json last.
    assert [n.split("/")[0] for n in names] == ["done.json", "kept", "kept", "rejects", "rejects"]
    assert [n.rsplit("-", 1)[-1] for n in names if "/" in n] == ["3.part", "3.part.ok", "1.part", "1.part.ok"]
    assert read_done(f"{work}/curated")["elements"] == {"kept": 3, "rejects": 1, "tallies": 0}
    pipeline = test_pipeline.TestPipeline(runner=runner, options=options)
    kept, rejects, tallies = Checkpoint(work, "curated").restored(pipeline)
    assert_that(kept, equal_to(["a", "b", "c"]), label="Kept")
    assert_that(rejects, equal_to(["r"]), label="Rejects")
    assert_that(tallies, equal_to([]), label="Tallies")
    pipeline.run().wait_until_finish()


def test_an_unfinished_checkpoint_on_s3_is_cleared_before_it_is_kept_again(s3, prefix):
    options = PipelineOptions(S3_ARGS)
    FileSystems.set_options(options)
    work = f"s3://{BUCKET}/{prefix}/work"
    runner = "apache_beam.runners.portability.fn_api_runner.FnApiRunner"
    for kept in (["a", "b", "c"], ["d"]):
        if kept == ["d"]:    # the first run was killed before its done.json
            FileSystems.delete([f"{work}/curated/done.json"])
        pipeline = test_pipeline.TestPipeline(runner=runner, options=options)
        empty = pipeline | "Empty" >> beam.Create([])
        Checkpoint(work, "curated").keep(pipeline | "Kept" >> beam.Create(kept), [empty], [empty])
        pipeline.run().wait_until_finish()
    names = sorted(k.split("/work/curated/", 1)[1] for k in keys(s3, f"{prefix}/"))
    assert [n.rsplit("-", 1)[-1] for n in names if n.startswith("kept/")] == ["1.part", "1.part.ok"]
