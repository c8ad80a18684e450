"""Storage without a store: the error texts a user sees (pipeline/engine/stores.py), the names of
attempt folders, a copied run, upload and download (pipeline/outputs; the S3 server's tests are in
tests/s3), and the CLI's object-store options."""
from __future__ import annotations

import re

import pytest
from apache_beam.io.filesystem import BeamIOError

from pipeline.engine import stores as runs
from pipeline.outputs import paths
from pipeline.outputs.protocol import resolve_run
from pipeline.outputs.storage import store_options_removed
from transforms.core.errors import UserError
from transforms.core.io.tables import write_json


def test_no_space_is_found_in_the_error_or_what_caused_it():
    try:
        try:
            raise OSError(28, "No space left on device")
        except OSError as inner:
            raise RuntimeError("bundle failed [while running 'WriteTables']") from inner
    except RuntimeError as outer:
        assert runs.is_no_space(outer)
    assert not runs.is_no_space(RuntimeError("division by zero"))


def test_no_space_is_found_in_the_details_beams_io_error_keeps_apart():
    error = BeamIOError("Delete operation failed", {"s3://b/k": Exception("QuotaExceeded: bucket full")})
    assert runs.is_no_space(error)
    assert runs.storage_reason(error) == "no space left (the disk or bucket is full)"


@pytest.mark.parametrize("text, reason", [
    ("An error occurred (NoSuchBucket) when calling the PutObject operation", "no such bucket"),
    ("An error occurred (InvalidAccessKeyId) when calling the ListObjectsV2 operation",
     "the access key is not known to the store"),
    ("Could not connect to the endpoint URL: \"http://127.0.0.1:1/b\"", "cannot reach the store's endpoint"),
    ("An error occurred (InternalError) when calling the CreateMultipartUpload operation (reached max "
     "retries: 9)", "the store refuses writes: no space left in the bucket (a quota), or no write "
     "permission (it answered InternalError)"),
    ("An error occurred (InternalError) when calling the GetObject operation", None),
    ("division by zero", None),
])
def test_a_store_error_is_said_in_a_few_words(text, reason):
    assert runs.storage_reason(Exception(text)) == reason


def test_attempt_names_sort_by_start_time_and_never_repeat():
    first, second = paths.new_attempt_name(), paths.new_attempt_name()
    assert re.fullmatch(r"\d{8}T\d{6}Z-[0-9a-f]{8}", first), first
    assert first != second
    assert paths.OutputPaths("s3://b/out/").attempt(first) == f"s3://b/out/runs/{first}"


def test_a_copied_run_is_read_where_it_is(tmp_path):
    write_json(str(tmp_path / paths.RUN_MARKER), {"csdata": "0.1.0"})
    assert resolve_run(str(tmp_path)) == str(tmp_path)
    (tmp_path / "half").mkdir()
    with pytest.raises(UserError, match="half is not the output of a finished csdata run"):
        resolve_run(str(tmp_path / "half"))


def test_upload_and_download_keep_every_file_and_its_bytes(tmp_path):
    source, back = tmp_path / "source", tmp_path / "back"
    (source / "queries").mkdir(parents=True)
    (source / "queries" / "part-0.parquet").write_bytes(bytes(range(256)) * 5000)
    (source / "summary.json").write_text("{}")
    assert paths.upload(str(source), str(tmp_path / "remote")) == 2
    back.mkdir()
    assert paths.download(str(tmp_path / "remote"), str(back)) == 2
    assert (back / "queries" / "part-0.parquet").read_bytes() == bytes(range(256)) * 5000
    assert (back / "summary.json").read_text() == "{}"


def test_the_retry_settings_are_botocores_standard_unless_the_user_chose(monkeypatch):
    monkeypatch.delenv("AWS_RETRY_MODE", raising=False)
    monkeypatch.delenv("AWS_MAX_ATTEMPTS", raising=False)
    runs.retry_store_calls()
    import os

    assert (os.environ["AWS_RETRY_MODE"], os.environ["AWS_MAX_ATTEMPTS"]) == ("standard", "10")
    monkeypatch.setenv("AWS_RETRY_MODE", "adaptive")
    monkeypatch.delenv("AWS_MAX_ATTEMPTS")
    runs.retry_store_calls()
    assert os.environ["AWS_RETRY_MODE"] == "adaptive" and "AWS_MAX_ATTEMPTS" not in os.environ


def test_store_options_are_taken_out_of_what_a_plain_command_gets():
    extra = ["--s3_endpoint_url=http://127.0.0.1:9000", "--s3_region_name", "us-east-1",
             "--s3_disable_ssl", "--runner=FnApiRunner", "--hdfs_host", "h"]
    assert store_options_removed(extra) == ["--runner=FnApiRunner"]
