"""Finished runs on object stores (s3://, gs://, ...), which have no atomic rename.

A local output is written beside its folder and renamed into place (`pipeline.runner.staged`). On
an object store a run instead writes one *attempt* folder of its own, and one small object,
written last, commits it:

    s3://bucket/out/record/
        csdata-run.json                  {"run": "runs/20261203T134500Z-1f2e3d4c", ...}: the commit
        runs/20261203T134500Z-1f2e3d4c/  the committed attempt: passages/, queries/, summary.json,
                                         provenance.json, csdata-run.json (its own marker)
        runs/20261203T140211Z-9a8b7c6d/  a failed or killed attempt: never named by the commit

A single PUT replaces an object whole, so a reader sees the old commit or the new one, never a
mixture; readers follow only the commit (`resolve_run`), and an attempt folder without its own
marker is refused in one line. The next run into the same output (or `csdata clean OUTPUT`)
removes every attempt but the committed one (`remove_attempts`); a commit removes the attempt it
replaced. One run at a time per output, as for local outputs.

Beam's filesystems do the I/O (imported on use): its S3 options (`--s3_endpoint_url`, ...) or the
AWS variables (`AWS_ENDPOINT_URL_S3`, `AWS_ACCESS_KEY_ID`, ...) say where the store is.
"""
from __future__ import annotations

import os
import uuid
from datetime import datetime, timezone
from typing import Any, Iterable, Optional

from transforms.core.errors import UserError

RUN_MARKER = "csdata-run.json"      # in every finished output; on an object store also the commit
ATTEMPTS = "runs"                   # the attempt folders of an object-store output
COMMIT_KEY = "run"                  # the commit's field naming the committed attempt
RETRY_MODE, RETRY_ATTEMPTS = "standard", 10
# What object stores and the OS answer when there is no room, as the messages carry them.
NO_SPACE_SIGNS = ("No space left on device", "[Errno 28]", "QuotaExceeded", "EntityTooLarge",
                  "XMinioStorageFull", "StorageFull", "InsufficientStorage")


def retry_store_calls() -> None:
    """Make this process's S3 calls (boto3, under Beam's S3 filesystem) ride out an object store
    that is away for a while: botocore's "standard" retries, 10 attempts with exponential
    backoff capped at 20 s (about a minute in all), instead of its "legacy" 5 attempts within a
    few seconds. Settings the user made (`AWS_RETRY_MODE`, `AWS_MAX_ATTEMPTS`, ~/.aws/config)
    win; called by the driver and by every SDK worker (`pipeline.worker`)."""
    if not os.environ.get("AWS_RETRY_MODE") and not os.environ.get("AWS_MAX_ATTEMPTS"):
        os.environ["AWS_RETRY_MODE"] = RETRY_MODE
        os.environ["AWS_MAX_ATTEMPTS"] = str(RETRY_ATTEMPTS)


def _join(folder: str, *names: str) -> str:
    return "/".join([folder.rstrip("/"), *names])


def new_attempt(output: str) -> str:
    """The folder a new run into remote `output` writes: `runs/<UTC time>-<random>`, which sorts
    by start time."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return _join(output, ATTEMPTS, f"{stamp}-{uuid.uuid4().hex[:8]}")


def read_json(path: str) -> Optional[dict]:
    """The JSON object at `path` on a Beam filesystem, None when there is none."""
    from apache_beam.io.filesystems import FileSystems

    from transforms.core.io import read_summary  # data_specs (pydantic): only when used

    if not FileSystems.exists(path):
        return None
    data = read_summary(path)
    return data if isinstance(data, dict) else None


def committed_attempt(output: str) -> Optional[str]:
    """The folder of the finished run at remote `output`: the attempt its commit names, or
    `output` itself when it holds a finished run's files directly (a copied local run); None
    when no finished run is there."""
    marker = read_json(_join(output, RUN_MARKER))
    if marker is None:
        return None
    run = marker.get(COMMIT_KEY)
    return _join(output, run) if isinstance(run, str) and run else output.rstrip("/")


def resolve_run(path: str, what: str = "") -> str:
    """The folder of the finished run at remote `path` (see `committed_attempt`); a UserError,
    in one line, when there is none (an unfinished attempt, a failed first run, a typo)."""
    try:
        found = committed_attempt(path)
    except Exception as error:   # Beam wraps every store error: report what the store said
        raise UserError(f"{what}{path}: {describe_storage_error(error)}") from None
    if found is None:
        raise UserError(f"{what}{path} is not the output of a finished csdata run "
                        f"(no {RUN_MARKER}: a run that failed or is still running)")
    return found


def commit_attempt(attempt: str, output: str, info: dict) -> None:
    """Make `attempt` the finished run at `output`: one object, written last."""
    relative = attempt.rstrip("/")[len(output.rstrip("/")) + 1:]
    from transforms.core.io import write_json

    write_json(_join(output, RUN_MARKER), {COMMIT_KEY: relative, **info})


def _attempt_objects(output: str) -> dict[str, list[str]]:
    """The objects under remote `output`'s attempts folder, by the attempt folder (or probe
    object) they belong to."""
    from apache_beam.io.filesystems import FileSystems

    root = _join(output, ATTEMPTS) + "/"
    found: dict[str, list[str]] = {}
    for result in FileSystems.match([root + "**"]):
        for metadata in result.metadata_list:
            name = metadata.path[len(root):].split("/", 1)[0]
            if name:
                found.setdefault(root + name, []).append(metadata.path)
    return found


def attempt_folders(output: str) -> list[str]:
    """The attempt folders under remote `output` (from the objects they hold), sorted."""
    return sorted(_attempt_objects(output))


def remove_attempts(output: str, keep: Optional[str] = None) -> list[str]:
    """Delete every attempt folder (and leftover write probe) under remote `output` except
    `keep` (default: the committed one); returns what was deleted."""
    from apache_beam.io.filesystems import FileSystems

    if keep is None:
        keep = committed_attempt(output)
    gone = {folder: paths for folder, paths in _attempt_objects(output).items()
            if folder != (keep or "").rstrip("/")}
    paths = [path for folder_paths in gone.values() for path in folder_paths]
    if paths:
        FileSystems.delete(paths)
    return sorted(gone)


def remove_tree(folder: str) -> None:
    """Delete every object under `folder` (a remote prefix)."""
    from apache_beam.io.filesystems import FileSystems

    paths = files_under(folder)
    if paths:
        FileSystems.delete(paths)


def files_under(folder: str) -> list[str]:
    """Every file path under remote `folder`."""
    from apache_beam.io.filesystems import FileSystems

    return sorted(m.path for result in FileSystems.match([folder.rstrip("/") + "/**"])
                  for m in result.metadata_list if not m.path.endswith("/"))


def download(folder: str, local: str) -> int:
    """Copy every file under remote `folder` into local directory `local`; returns how many."""
    from apache_beam.io.filesystems import FileSystems

    prefix = folder.rstrip("/") + "/"
    paths = files_under(folder)
    for path in paths:
        target = os.path.join(local, *path[len(prefix):].split("/"))
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with FileSystems.open(path, compression_type="uncompressed") as source, open(target, "wb") as out:
            while chunk := source.read(1 << 20):
                out.write(chunk)
    return len(paths)


def upload(local: str, folder: str) -> int:
    """Copy every file under local directory `local` to remote `folder`; returns how many."""
    from apache_beam.io.filesystems import FileSystems

    count = 0
    for root, _, names in os.walk(local):
        for name in sorted(names):
            source = os.path.join(root, name)
            relative = os.path.relpath(source, local).replace(os.sep, "/")
            with open(source, "rb") as handle, FileSystems.create(
                    _join(folder, relative), mime_type="application/octet-stream") as out:
                while chunk := handle.read(1 << 20):
                    out.write(chunk)
            count += 1
    return count


def probe_writable(output: str) -> None:
    """Write and delete one small object under remote `output`: a missing bucket, wrong
    credentials, an unreachable endpoint or a full store show here, before any work starts."""
    from apache_beam.io.filesystems import FileSystems

    probe = _join(output, ATTEMPTS, f".csdata-probe-{uuid.uuid4().hex[:8]}")
    try:
        with FileSystems.create(probe) as handle:
            handle.write(b"csdata")
        FileSystems.delete([probe])
    except Exception as error:
        raise UserError(f"--output {output}: cannot write there ({describe_storage_error(error)})") from None


def check_patterns(patterns: Iterable[str]) -> None:
    """Every remote input pattern must match at least one file (as local ones must); the
    listing stops at the first match (object stores list page by page)."""
    from apache_beam.io.filesystems import FileSystems

    for pattern in patterns:
        try:
            found = FileSystems.match([pattern], limits=[1])[0].metadata_list
        except Exception as error:
            raise UserError(f"--input {pattern}: {describe_storage_error(error)}") from None
        if not found:
            raise UserError(f"--input {pattern} matches no file")


def error_text(error: BaseException) -> str:
    """The messages of `error` and of what caused it, with the details Beam's BeamIOError keeps
    apart (its `exception_details`), as one string."""
    parts: list[str] = []
    seen: set[int] = set()
    pending: list[Any] = [error]
    while pending:
        current = pending.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        parts.append(f"{type(current).__name__}: {current}")
        details = getattr(current, "exception_details", None)
        if isinstance(details, dict):
            pending.extend(v for v in details.values() if isinstance(v, BaseException))
            parts.extend(str(v) for v in details.values() if not isinstance(v, BaseException))
        pending.extend([current.__cause__, current.__context__])
    return " | ".join(parts)


def is_no_space(error: BaseException) -> bool:
    """Whether `error` (or what caused it) says the disk or the store is full."""
    text = error_text(error)
    return any(sign in text for sign in NO_SPACE_SIGNS)


# Answers of a store to a write it refuses for good (after the retries): a full bucket or quota
# (SeaweedFS answers an enforced quota with these two; it has no code of its own for it) or a
# missing write permission, which the store does not tell apart.
REFUSED_WRITE_SIGNS = ("AccessDenied", "InternalError")
WRITE_CALLS = ("PutObject", "CreateMultipartUpload", "UploadPart", "CompleteMultipartUpload", "CopyObject")


def storage_reason(error: BaseException) -> Optional[str]:
    """What a failed storage call says, in a few words a user can act on; None when `error`
    is not a storage failure."""
    text = error_text(error)
    if is_no_space(error):
        return "no space left (the disk or bucket is full)"
    for sign, reason in (("NoSuchBucket", "no such bucket"),
                         ("InvalidAccessKeyId", "the access key is not known to the store"),
                         ("SignatureDoesNotMatch", "the secret key is wrong"),
                         ("Could not connect to the endpoint", "cannot reach the store's endpoint"),
                         ("EndpointConnectionError", "cannot reach the store's endpoint"),
                         ("Unable to locate credentials", "no credentials (set Beam's "
                          "--s3_access_key_id/--s3_secret_access_key or AWS_ACCESS_KEY_ID)"),
                         ("NoCredentialsError", "no credentials")):
        if sign in text:
            return reason
    refused = [sign for sign in REFUSED_WRITE_SIGNS if sign in text]
    if refused and any(call in text for call in WRITE_CALLS):
        return (f"the store refuses writes: no space left in the bucket (a quota), or no write "
                f"permission (it answered {refused[0]})")
    if "AccessDenied" in text:
        return "access denied"
    return None


def permanent_storage_failure(text: str) -> Optional[str]:
    """`storage_reason` of an error's text when it is one a retry cannot mend (no space, a
    refused write, a missing bucket, wrong credentials), else None: an unreachable endpoint may
    come back."""
    reason = storage_reason(Exception(text))
    return None if reason in (None, "cannot reach the store's endpoint") else reason


def describe_storage_error(error: BaseException) -> str:
    """`storage_reason`, else the error's own first words."""
    return storage_reason(error) or (" ".join(str(error).split())[:200] or type(error).__name__)
