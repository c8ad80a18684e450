"""Object stores and the errors storage gives: retries that ride out a store away for a while,
the check that remote input patterns match, and the one-line reasons of a storage failure (no
space, a refused write, a missing bucket, wrong keys), read from an error's own messages only.

Beam's filesystems do the I/O (imported on use): its S3 options (`--s3_endpoint_url`, ...) or the
AWS variables (`AWS_ENDPOINT_URL_S3`, `AWS_ACCESS_KEY_ID`, ...) say where the store is. The
output protocol (attempts, commit, lease, resume) is `pipeline.outputs`.
"""
from __future__ import annotations

import os
from itertools import islice
from typing import Any, Iterable, Optional

from transforms.core.errors import UserError

RETRY_MODE, RETRY_ATTEMPTS = "standard", 10
# What object stores and the OS answer when there is no room, as the messages carry them.
NO_SPACE_SIGNS = ("No space left on device", "[Errno 28]", "Disk quota exceeded", "QuotaExceeded",
                  "EntityTooLarge", "XMinioStorageFull", "StorageFull", "InsufficientStorage")


def retry_store_calls() -> None:
    """Make this process's S3 calls (boto3, under Beam's S3 filesystem) ride out an object store
    that is away for a while: botocore's "standard" retries, 10 attempts with exponential
    backoff capped at 20 s (about a minute in all), instead of its "legacy" 5 attempts within a
    few seconds. Settings the user made (`AWS_RETRY_MODE`, `AWS_MAX_ATTEMPTS`, ~/.aws/config)
    win; called by the driver and by every SDK worker (`pipeline.engine.worker`)."""
    if not os.environ.get("AWS_RETRY_MODE") and not os.environ.get("AWS_MAX_ATTEMPTS"):
        os.environ["AWS_RETRY_MODE"] = RETRY_MODE
        os.environ["AWS_MAX_ATTEMPTS"] = str(RETRY_ATTEMPTS)


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


# How much of an error chain is read: its exceptions (causes, contexts, the exceptions Beam's
# BeamIOError keeps apart), and of each message its start and its end (where a worker's
# traceback, passed on as text, names the error).
MAX_CHAIN = 16
MAX_MESSAGE = 4000


def error_message(error: BaseException, limit: int = MAX_MESSAGE) -> str:
    """What `error` itself says, never a rendering of the values it carries: an OSError's code,
    reason and file name, else the string arguments it was raised with (a pydantic
    ValidationError's input, a KeyError's key object, ... are left out). A message longer than
    `limit` keeps its start and its end."""
    if isinstance(error, OSError) and isinstance(error.errno, int) and isinstance(error.strerror, str):
        text = f"[Errno {error.errno}] {error.strerror}"   # as OSError says it
        names = [repr(name[:limit]) for name in (error.filename, error.filename2)
                 if isinstance(name, (str, bytes))]
        if names:
            text += ": " + " -> ".join(names)
    else:
        text = " ".join(arg for arg in error.args[:MAX_CHAIN] if isinstance(arg, str))
    return _clip(text, limit)


def error_text(error: BaseException) -> str:
    """The messages (`error_message`) of `error` and of what caused it, with the details Beam's
    BeamIOError keeps apart (its `exception_details`), as one string: at most `MAX_CHAIN`
    exceptions, each message bounded."""
    parts: list[str] = []
    seen: set[int] = set()
    pending: list[Any] = [error]
    while pending and len(seen) < MAX_CHAIN:
        current = pending.pop()
        if not isinstance(current, BaseException) or id(current) in seen:
            continue
        seen.add(id(current))
        message = error_message(current)
        parts.append(f"{type(current).__name__}: {message}" if message else type(current).__name__)
        details = getattr(current, "exception_details", None)
        if isinstance(details, dict):
            for value in islice(details.values(), MAX_CHAIN):
                if isinstance(value, BaseException):
                    pending.append(value)
                elif isinstance(value, str):
                    parts.append(_clip(value))
        pending.extend([current.__cause__, current.__context__])
    return " | ".join(parts)


def _clip(text: str, limit: int = MAX_MESSAGE) -> str:
    if len(text) <= limit:
        return text
    half = (limit - 5) // 2
    return f"{text[:half]} ... {text[-half:]}"


def _says_no_space(text: str) -> bool:
    return any(sign in text for sign in NO_SPACE_SIGNS)


def is_no_space(error: BaseException) -> bool:
    """Whether `error` (or what caused it) says the disk or the store is full."""
    return _says_no_space(error_text(error))


# Answers of a store to a write it refuses for good (after the retries): a full bucket or quota
# (SeaweedFS answers an enforced quota with these two; it has no code of its own for it) or a
# missing write permission, which the store does not tell apart.
REFUSED_WRITE_SIGNS = ("AccessDenied", "InternalError")
WRITE_CALLS = ("PutObject", "CreateMultipartUpload", "UploadPart", "CompleteMultipartUpload", "CopyObject")


def storage_reason(error: BaseException) -> Optional[str]:
    """What a failed storage call says, in a few words a user can act on; None when `error`
    is not a storage failure."""
    return _reason_in(error_text(error))


def _reason_in(text: str) -> Optional[str]:
    """`storage_reason` of an error's text."""
    if _says_no_space(text):
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
    reason = _reason_in(text)   # a whole stack trace: the error may be named anywhere in it
    return None if reason in (None, "cannot reach the store's endpoint") else reason


def describe_storage_error(error: BaseException) -> str:
    """`storage_reason`, else the first words of the error's own message."""
    return storage_reason(error) or (" ".join(error_message(error).split())[:200] or type(error).__name__)
