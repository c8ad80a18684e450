"""The real S3 server of `make s3-up` (services/s3: SeaweedFS on 127.0.0.1:9000, bucket `csdata`,
test-only key `csdata` / `csdata-secret`): the Beam options that point csdata at it and helpers to
put, list and fetch objects. The fixtures `s3` (a client; the test fails, not skips, when the
server does not answer) and `prefix` (a fresh key prefix per test) are in tests/conftest.py."""
from __future__ import annotations

import os
from pathlib import Path

ENDPOINT = os.environ.get("CSDATA_S3_ENDPOINT", "http://127.0.0.1:9000")
BUCKET = "csdata"
FULL_BUCKET = "csdata-full"   # refuses every write (a quota below what it holds)
KEY, SECRET, REGION = "csdata", "csdata-secret", "us-east-1"
# What a user adds to a csdata command line for this store (Beam's S3 options).
S3_ARGS = [f"--s3_endpoint_url={ENDPOINT}", f"--s3_access_key_id={KEY}",
           f"--s3_secret_access_key={SECRET}", f"--s3_region_name={REGION}"]


def upload(s3, files: dict[str, Path], prefix: str) -> None:
    """Put each local file at `prefix/<name>` in the test bucket."""
    for name, path in files.items():
        s3.upload_file(str(path), BUCKET, f"{prefix}/{name}")


def keys(s3, prefix: str, bucket: str = BUCKET) -> dict[str, str]:
    """Every key under `prefix` with its ETag (a digest of its bytes)."""
    found = {}
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        found.update({item["Key"]: item["ETag"] for item in page.get("Contents", [])})
    return found


def download(s3, prefix: str, target: Path) -> Path:
    """Every object under `prefix` into `target`, by its key's remainder."""
    for key in keys(s3, prefix):
        path = target / key[len(prefix):].lstrip("/")
        path.parent.mkdir(parents=True, exist_ok=True)
        s3.download_file(BUCKET, key, str(path))
    return target
