"""The real S3-compatible server of services/s3/s3.sh (SeaweedFS on loopback), no mocks.

The `s3` tests need it running (`make s3-up`, then `pytest -m s3`): they fail, with what to do, when
it does not answer. The rest check that `s3.sh up` refuses in one line, before building or starting
anything, when it cannot run the server; they need no server."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

S3_SH = Path(__file__).resolve().parents[2] / "services" / "s3" / "s3.sh"
ENDPOINT = f"http://127.0.0.1:{os.environ.get('CSDATA_S3_PORT', '9000')}"
MiB = 1 << 20


def client():
    import boto3
    from botocore.config import Config

    # One attempt each: what the server answers, not what botocore's retries make of it.
    return boto3.client("s3", endpoint_url=ENDPOINT, aws_access_key_id="csdata",
                        aws_secret_access_key="csdata-secret", region_name="us-east-1",
                        config=Config(retries={"total_max_attempts": 1}, connect_timeout=5,
                                      read_timeout=60))


@pytest.fixture(scope="session")
def s3():
    from botocore.exceptions import BotoCoreError, ClientError

    s3 = client()
    try:
        s3.head_bucket(Bucket="csdata")
    except (BotoCoreError, ClientError) as error:
        pytest.fail(f"no S3 server with bucket csdata answers on {ENDPOINT} ({error}): "
                    "start it with `make s3-up`")
    return s3


@pytest.fixture
def prefix(s3):
    """A fresh key prefix in bucket csdata, emptied afterwards."""
    prefix = f"test-{uuid.uuid4().hex}"
    yield prefix
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket="csdata", Prefix=prefix):
        for item in page.get("Contents", []):
            s3.delete_object(Bucket="csdata", Key=item["Key"])


def script(*args: str, env: dict[str, str] | None = None, timeout: int = 180):
    return subprocess.run(["/bin/bash", str(S3_SH), *args], capture_output=True, text=True,
                          timeout=timeout, env=env or {**os.environ, "PYTHON": sys.executable})


@pytest.mark.s3
def test_put_get_and_list_with_prefix_and_delimiter(s3, prefix):
    for key in ("a.txt", "dir/b.txt", "dir/c.txt", "other/d.txt"):
        s3.put_object(Bucket="csdata", Key=f"{prefix}/{key}", Body=key.encode())
    assert s3.get_object(Bucket="csdata", Key=f"{prefix}/dir/b.txt")["Body"].read() == b"dir/b.txt"

    top = s3.list_objects_v2(Bucket="csdata", Prefix=f"{prefix}/", Delimiter="/")
    assert [item["Key"] for item in top["Contents"]] == [f"{prefix}/a.txt"]
    assert [p["Prefix"] for p in top["CommonPrefixes"]] == [f"{prefix}/dir/", f"{prefix}/other/"]
    inner = s3.list_objects_v2(Bucket="csdata", Prefix=f"{prefix}/dir/")
    assert [item["Key"] for item in inner["Contents"]] == [f"{prefix}/dir/b.txt", f"{prefix}/dir/c.txt"]
    assert "CommonPrefixes" not in inner


@pytest.mark.s3
def test_a_multipart_upload_reads_back_identical(s3, prefix):
    key = f"{prefix}/big.bin"
    parts = [os.urandom(5 * MiB), os.urandom(MiB + 123)]       # every part but the last >= 5 MiB
    upload = s3.create_multipart_upload(Bucket="csdata", Key=key)["UploadId"]
    etags = [s3.upload_part(Bucket="csdata", Key=key, UploadId=upload, PartNumber=number,
                            Body=body)["ETag"] for number, body in enumerate(parts, 1)]
    s3.complete_multipart_upload(Bucket="csdata", Key=key, UploadId=upload, MultipartUpload={
        "Parts": [{"PartNumber": number, "ETag": etag} for number, etag in enumerate(etags, 1)]})

    got = s3.get_object(Bucket="csdata", Key=key)
    assert got["ContentLength"] == 6 * MiB + 123
    assert got["ETag"].strip('"').endswith("-2")
    assert got["Body"].read() == b"".join(parts)


@pytest.mark.s3
def test_the_full_bucket_refuses_writes(s3):
    """`csdata-full` is over its bucket quota, which the server enforces: the filer refuses every
    write under the bucket. Reads and listings still work, as on a full disk."""
    from botocore.exceptions import ClientError

    def refusal(call, **kwargs):
        with pytest.raises(ClientError) as caught:
            call(Bucket="csdata-full", Key=f"refused-{uuid.uuid4().hex}", **kwargs)
        response = caught.value.response
        return response["ResponseMetadata"]["HTTPStatusCode"], response["Error"]["Code"], \
            response["Error"]["Message"]

    assert refusal(s3.put_object, Body=b"some bytes") == (403, "AccessDenied", "Access Denied.")
    assert refusal(s3.put_object, Body=os.urandom(MiB)) == (403, "AccessDenied", "Access Denied.")
    assert refusal(s3.create_multipart_upload) == (
        500, "InternalError", "We encountered an internal error, please try again.")
    # SeaweedFS's odd one out: an empty object takes another path (filer-routed), ends retryable.
    assert refusal(s3.put_object, Body=b"") == (503, "ServiceUnavailable", "Service Unavailable")

    listed = s3.list_objects_v2(Bucket="csdata-full")
    assert [item["Key"] for item in listed["Contents"]] == ["filler"]      # nothing got in
    assert len(s3.get_object(Bucket="csdata-full", Key="filler")["Body"].read()) == 2 * MiB


@pytest.mark.s3
def test_data_survives_a_restart(s3, prefix):
    """`s3.sh down` then `s3.sh up` keeps the data (runs last in this file: it stops the server)."""
    body = os.urandom(MiB)
    s3.put_object(Bucket="csdata", Key=f"{prefix}/kept.bin", Body=body)

    down = script("down")
    assert down.returncode == 0, down.stderr
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", int(ENDPOINT.rsplit(":", 1)[1])), timeout=2).close()
    up = script("up")
    assert up.returncode == 0, up.stderr

    again = client()                   # no connection of the old server's pool
    assert again.get_object(Bucket="csdata", Key=f"{prefix}/kept.bin")["Body"].read() == body
    again.put_object(Bucket="csdata", Key=f"{prefix}/after.txt", Body=b"writable")
    from botocore.exceptions import ClientError
    with pytest.raises(ClientError, match="AccessDenied"):
        again.put_object(Bucket="csdata-full", Key="refused", Body=b"still full")


def free_ports(count: int) -> list[int]:
    """Free loopback ports whose gRPC companions (10000 above) are free too (s3.sh takes none
    above 55535)."""
    ports: list[int] = []
    while len(ports) < count:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        if port > 55535 or port in ports:
            continue
        with socket.socket() as companion:
            try:
                companion.bind(("127.0.0.1", port + 10000))
            except OSError:
                continue
        ports.append(port)
    return ports


def test_a_taken_port_is_one_line(tmp_path):
    port = free_ports(1)[0]
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", port))
        taken.listen()
        result = script("up", env={**os.environ, "CSDATA_CACHE_DIR": str(tmp_path),
                                   "CSDATA_S3_PORT": str(port)}, timeout=60)
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"s3.sh: port {port} is taken (another S3 server or service?): stop it, or set "
        "CSDATA_S3_PORT / CSDATA_S3_MASTER_PORT / CSDATA_S3_VOLUME_PORT / CSDATA_S3_FILER_PORT"]
    assert list(tmp_path.iterdir()) == []          # nothing built, nothing started


def test_missing_go_is_one_line(tmp_path):
    s3_port, master, volume, filer = free_ports(4)
    result = script("up", env={**os.environ, "CSDATA_CACHE_DIR": str(tmp_path / "cache"),
                               "GO": str(tmp_path / "no-go"), "CSDATA_S3_PORT": str(s3_port),
                               "CSDATA_S3_MASTER_PORT": str(master),
                               "CSDATA_S3_VOLUME_PORT": str(volume),
                               "CSDATA_S3_FILER_PORT": str(filer)}, timeout=60)
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        "s3.sh: Go is missing: it builds SeaweedFS from the Go module proxy "
        "(install Go >= 1.26.6, or set GO)"]
    assert not (tmp_path / "cache").exists()
