"""Every pipeline reads its inputs from S3 and writes its output there, on the real S3 server
(`make s3-up`), with the rows of a local run; the readers of a run (stats, export, report,
filter, release, `--annotations`) read it from S3; a killed or failed run never changes or hides
the committed one, and no reader takes a partial attempt for a finished run."""
from __future__ import annotations

import gzip
import json
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

from pipeline.cli.main import main
from tests.conftest import DATA, ROOT, URL_LISTS, parquet_rows, without_timings
from tests.s3.store import BUCKET, FULL_BUCKET, S3_ARGS, download, keys, upload

pytestmark = [pytest.mark.s3, pytest.mark.slow]

TESTS = Path(__file__).resolve().parents[1]
URLS = [a for path in URL_LISTS for a in ("--url-list", path)]


def url(key: str, bucket: str = BUCKET) -> str:
    return f"s3://{bucket}/{key}"


def committed(s3, output_key: str) -> str:
    """The key prefix of the attempt the commit of `output_key` names."""
    marker = json.loads(s3.get_object(Bucket=BUCKET, Key=f"{output_key}/csdata-run.json")["Body"].read())
    return f"{output_key}/{marker['run']}"


def run(argv: list[str], capsys) -> str:
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


@pytest.fixture(scope="module")
def record_inputs(tmp_path_factory) -> dict[str, Path]:
    """The repo's ReCoRD sample as the three kinds of input files: CNN `.story` files, the Daily
    Mail stories as a `.tgz` archive, and the Hugging Face rows as `.jsonl.gz`."""
    root = tmp_path_factory.mktemp("record-inputs")
    shutil.copytree(DATA / "cnn" / "stories", root / "cnn")
    files = {f"cnn/{story.name}": story for story in sorted((root / "cnn").glob("*.story"))}
    archive = root / "dailymail_stories.tgz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(DATA / "dailymail" / "stories", arcname="dailymail/stories")
    files["dailymail_stories.tgz"] = archive
    rows = root / "hf_rows.jsonl.gz"
    rows.write_bytes(gzip.compress((DATA / "hf_rows.jsonl").read_bytes()))
    files["hf_rows.jsonl.gz"] = rows
    return files


def same_rows(a: Path, a_inputs: str, b: Path, b_inputs: str) -> bool:
    """Whether runs `a` and `b` wrote the same rows, read from inputs at `a_inputs` and `b_inputs`."""
    rows_a = {t: sorted(r.replace(a_inputs, "INPUTS") for r in rows) for t, rows in parquet_rows(a).items()}
    rows_b = {t: sorted(r.replace(b_inputs, "INPUTS") for r in rows) for t, rows in parquet_rows(b).items()}
    return rows_a == rows_b


def record_args(inputs: list[str]) -> list[str]:
    return ["record", "generate", *[a for i in inputs for a in ("--input", i)], *URLS]


def test_record_on_s3_writes_the_rows_of_a_local_run_and_every_reader_reads_it(
        s3, prefix, record_inputs, tmp_path, capsys):
    root = record_inputs["hf_rows.jsonl.gz"].parent
    local_inputs = [str(root / "cnn"), str(root / "dailymail_stories.tgz"), str(root / "hf_rows.jsonl.gz")]
    local = tmp_path / "local"
    run([*record_args(local_inputs), "--output", str(local)], capsys)
    upload(s3, record_inputs, f"{prefix}/in")
    remote_inputs = [url(f"{prefix}/in/cnn/*.story"), url(f"{prefix}/in/dailymail_stories.tgz"),
                     url(f"{prefix}/in/hf_rows.jsonl.gz")]
    out = run([*record_args(remote_inputs), "--output", url(f"{prefix}/record"), *S3_ARGS], capsys)
    assert f"output: {url(prefix + '/record')}" in out
    fetched = download(s3, committed(s3, f"{prefix}/record"), tmp_path / "fetched")
    # Rejects name the file they came from (`detail`): the same files, in two places.
    assert same_rows(fetched, url(f"{prefix}/in"), local, str(root))
    summaries = [json.loads((d / "summary.json").read_text()) for d in (local, fetched)]
    assert without_timings(summaries[1]) == without_timings(summaries[0])
    assert json.loads((fetched / "provenance.json").read_text())["steps"][-1]["command"] == "record generate"

    # stats and export read the committed run (copied down), as they read a local one
    assert run(["stats", url(f"{prefix}/record"), *S3_ARGS], capsys) == run(["stats", str(local)], capsys)
    run(["record", "export", str(local), "--output", str(tmp_path / "local.json")], capsys)
    run(["record", "export", url(f"{prefix}/record"), "--output", str(tmp_path / "s3.json"), *S3_ARGS], capsys)
    assert (tmp_path / "s3.json").read_bytes() == (tmp_path / "local.json").read_bytes()
    run(["report", url(f"{prefix}/record"), "--output", str(tmp_path / "report"), *S3_ARGS], capsys)
    assert "<html" in (tmp_path / "report" / "index.html").read_text().lower()

    # the machine filter's workers read the generate run on S3 and write theirs there
    run(["record", "filter", str(local), "--output", str(tmp_path / "local-filtered")], capsys)
    run(["record", "filter", url(f"{prefix}/record"), "--output", url(f"{prefix}/filtered"), *S3_ARGS], capsys)
    filtered = download(s3, committed(s3, f"{prefix}/filtered"), tmp_path / "filtered")
    assert parquet_rows(filtered) == parquet_rows(tmp_path / "local-filtered")

    # a release of the S3 run, written to S3 by this process (a plain command: staged locally)
    run(["record", "release", str(tmp_path / "local-filtered"), "--output", str(tmp_path / "local-release")],
        capsys)
    run(["record", "release", url(f"{prefix}/filtered"), "--output", url(f"{prefix}/release"), *S3_ARGS],
        capsys)
    release = download(s3, committed(s3, f"{prefix}/release"), tmp_path / "release")
    assert parquet_rows(release) == parquet_rows(tmp_path / "local-release")


def test_generate_reuses_annotations_stored_on_s3(s3, prefix, tmp_path, capsys):
    upload(s3, {f"cnn/{p.name}": p for p in (DATA / "cnn" / "stories").glob("*.story")}, f"{prefix}/in")
    stories = url(f"{prefix}/in/cnn/*.story")
    run(["record", "annotate", "--input", stories, "--output", url(f"{prefix}/annotations"), *S3_ARGS], capsys)
    out = run(["record", "generate", "--input", stories, "--annotations", url(f"{prefix}/annotations"),
               "--output", url(f"{prefix}/record"), *S3_ARGS], capsys)
    # Each of the 6 articles the generate run sends to annotation (the 7 CNN stories less the one
    # too short for a passage) is read from the committed annotations on S3, none annotated again.
    source = url(committed(s3, f"{prefix}/annotations"))
    assert [line for line in out.splitlines() if line.startswith("reused ")] == [
        f"reused 6 of 6 annotations from {source}"], out
    run(["record", "generate", "--input", str(DATA / "cnn"), "--output", str(tmp_path / "local")], capsys)
    fetched = download(s3, committed(s3, f"{prefix}/record"), tmp_path / "fetched")
    assert parquet_rows(fetched) == parquet_rows(tmp_path / "local")


def test_cosmos_blog_xml_and_protoqa_jsonl_on_s3(s3, prefix, tmp_path, capsys):
    cosmos = TESTS / "data" / "cosmos"
    upload(s3, {f"blogs/{p.name}": p for p in (cosmos / "blogs").glob("*.xml")}, f"{prefix}/in")
    run(["cosmos", "paragraphs", "--input", str(cosmos / "blogs"), "--output", str(tmp_path / "cosmos")], capsys)
    run(["cosmos", "paragraphs", "--input", url(f"{prefix}/in/blogs/*.xml"), "--output", url(f"{prefix}/cosmos"),
         *S3_ARGS], capsys)
    fetched = download(s3, committed(s3, f"{prefix}/cosmos"), tmp_path / "cosmos-s3")
    assert same_rows(fetched, url(f"{prefix}/in/blogs"), tmp_path / "cosmos", str(cosmos / "blogs"))

    protoqa = TESTS / "data" / "protoqa"
    upload(s3, {"scraped.jsonl": protoqa / "scraped.jsonl"}, f"{prefix}/in")
    run(["protoqa", "questions", "--input", str(protoqa / "scraped.jsonl"), "--output", str(tmp_path / "pq")],
        capsys)
    run(["protoqa", "questions", "--input", url(f"{prefix}/in/scraped.jsonl"), "--output",
         url(f"{prefix}/protoqa"), *S3_ARGS], capsys)
    fetched = download(s3, committed(s3, f"{prefix}/protoqa"), tmp_path / "pq-s3")
    assert same_rows(fetched, url(f"{prefix}/in"), tmp_path / "pq", str(protoqa))
    assert (fetched / "questions.jsonl").read_bytes() == (tmp_path / "pq" / "questions.jsonl").read_bytes()


def one_error_line(argv: list[str], capsys, code: int = 2) -> str:
    assert main(argv) == code
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


def test_a_killed_run_leaves_the_committed_run_as_it_was_and_is_never_read(s3, prefix, tmp_path, capsys):
    upload(s3, {f"cnn/{p.name}": p for p in (DATA / "cnn" / "stories").glob("*.story")}, f"{prefix}/in")
    stories, output = url(f"{prefix}/in/cnn/*.story"), url(f"{prefix}/record")
    argv = ["record", "generate", "--input", stories, "--output", output, *S3_ARGS]
    run(argv, capsys)
    before = keys(s3, f"{prefix}/record")
    stats_before = run(["stats", output, *S3_ARGS], capsys)

    # The second run is killed (SIGKILL: no handler runs) once it has written into its attempt.
    driver = subprocess.Popen([sys.executable, "-m", "pipeline.cli.main", *argv, "--set", "passage.min_tokens=60"],
                              cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while not (new := {k for k in set(keys(s3, f"{prefix}/record")) - set(before) if "/passages/" in k}):
        assert driver.poll() is None, "the run ended before it wrote anything"
        assert time.monotonic() < deadline, "the run wrote nothing in 2 minutes"
        time.sleep(0.05)
    driver.send_signal(signal.SIGKILL)
    driver.wait()
    partial = sorted({"/".join(k.split("/")[:5]) for k in new})
    assert len(partial) == 1 and partial[0].startswith(f"{prefix}/record/runs/"), partial

    assert {k: v for k, v in keys(s3, f"{prefix}/record").items() if k in before} == before
    assert run(["stats", output, *S3_ARGS], capsys) == stats_before
    line = one_error_line(["stats", url(partial[0]), *S3_ARGS], capsys)
    assert line == (f"csdata: error: {url(partial[0])} is not the output of a finished csdata run "
                    "(no csdata-run.json: a run that failed or is still running)")

    # The next run takes the dead run's lease over and removes its attempt; the attempt it
    # replaces stays until the next commit (a reader may be in the middle of it).
    first = committed(s3, f"{prefix}/record")
    run(argv, capsys)
    folders = {"/".join(k.split("/")[:5]) for k in keys(s3, f"{prefix}/record/runs/")}
    assert folders == {committed(s3, f"{prefix}/record"), first}
    assert partial[0] not in folders


def test_a_run_that_fails_after_writing_removes_its_attempt_and_keeps_the_commit(
        s3, prefix, capsys, monkeypatch):
    import pipeline.graphs.record as record_beam

    upload(s3, {f"cnn/{p.name}": p for p in (DATA / "cnn" / "stories").glob("*.story")}, f"{prefix}/in")
    argv = ["record", "generate", "--input", url(f"{prefix}/in/cnn/*.story"), "--output", url(f"{prefix}/record"),
            *S3_ARGS]
    run(argv, capsys)
    before = keys(s3, f"{prefix}/record")
    wrote = []

    def run_then_fail(pipeline):   # the job wrote all its tables, then its driver failed
        record_beam_run(pipeline)
        wrote.extend(set(keys(s3, f"{prefix}/record")) - set(before))
        raise RuntimeError("the driver lost its job")

    record_beam_run = record_beam.run_pipeline
    monkeypatch.setattr(record_beam, "run_pipeline", run_then_fail)
    with pytest.raises(RuntimeError, match="the driver lost its job"):
        main(argv)
    assert any("/passages/" in key for key in wrote), wrote
    # The commit and the committed run as they were; only the model work stays, for a rerun.
    after = keys(s3, f"{prefix}/record")
    assert {k: v for k, v in after.items() if "/work/" not in k} == before
    assert any(k.endswith(".pieces") for k in after if "/work/" in k)


def test_store_errors_are_one_line_before_any_work(s3, prefix, capsys):
    stories = str(DATA / "cnn")
    line = one_error_line(["record", "generate", "--input", stories, "--output",
                           url("out", bucket="no-such-bucket-csdata"), *S3_ARGS], capsys)
    assert line.startswith("csdata: error: --output s3://no-such-bucket-csdata/out: cannot write there ("), line
    line = one_error_line(["record", "generate", "--input", url(f"{prefix}/nothing/*.story"), "--output",
                           url(f"{prefix}/out"), *S3_ARGS], capsys)
    assert line == f"csdata: error: --input {url(prefix + '/nothing/*.story')} matches no file"
    line = one_error_line(["stats", url(f"{prefix}/never-written"), *S3_ARGS], capsys)
    assert "is not the output of a finished csdata run" in line
    assert keys(s3, prefix) == {}


def test_a_bucket_that_refuses_writes_is_one_line_naming_the_path_and_no_space(s3, prefix, capsys):
    output = url(f"{prefix}/record", bucket=FULL_BUCKET)
    before = keys(s3, "", bucket=FULL_BUCKET)
    line = one_error_line(["record", "generate", "--input", str(DATA / "cnn"), "--output", output, *S3_ARGS],
                          capsys)
    # SeaweedFS answers an enforced quota with InternalError (AccessDenied to a plain PUT), as it
    # might a missing permission: the line says both.
    assert line == (f"csdata: error: --output {output}: cannot write there (the store refuses writes: no "
                    "space left in the bucket (a quota), or no write permission (it answered InternalError))")
    assert keys(s3, "", bucket=FULL_BUCKET) == before


def test_clean_removes_the_attempts_no_commit_names(s3, prefix, capsys):
    upload(s3, {f"cnn/{p.name}": p for p in (DATA / "cnn" / "stories").glob("*.story")}, f"{prefix}/in")
    output = url(f"{prefix}/record")
    run(["record", "generate", "--input", url(f"{prefix}/in/cnn/*.story"), "--output", output, *S3_ARGS], capsys)
    kept = committed(s3, f"{prefix}/record")
    s3.put_object(Bucket=BUCKET, Key=f"{prefix}/record/runs/20000101T000000Z-deadbeef/passages/x.parquet",
                  Body=b"partial")
    out = run(["clean", output, *S3_ARGS], capsys)
    assert url(f"{prefix}/record/runs/20000101T000000Z-deadbeef") in out
    assert {"/".join(k.split("/")[:5]) for k in keys(s3, f"{prefix}/record/runs/")} == {kept}
