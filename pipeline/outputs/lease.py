"""The lease: one live run per output.

While a run lives it holds `lease.json` in the output's root (`pipeline.outputs.paths`): who
holds it (host, pid, attempt), when it started and its latest heartbeat, renewed by a thread every
quarter of the timeout (at least every 5 s), with the Flink jobs the run submitted and the job
servers it started, which a run taking a dead holder's lease over cancels and stops.

- **Local disk**: an exclusive `flock` on the file. The kernel drops it when the holder's process
  ends in any way (SIGKILL, OOM kill, a crash), so a dead holder never blocks the next run; the
  file's text only tells a refused run who holds it.
- **S3**: the lease object is created with a conditional PUT (`If-None-Match: *`), renewed with
  `If-Match` on the ETag of the holder's last write, and taken over, once the holder is dead,
  with `If-Match` on the dead holder's ETag: of two runs racing for it, one wins and the other is
  refused. A holder whose renewal is refused has lost the lease and does not commit. A
  holder's age is the store's: the server's time of the read less the lease object's
  `Last-Modified`, so no host's clock is compared with another's.
- **Other stores** (gs://, ...) through Beam's filesystems, which offer no conditional write: the
  lease is written, then read back, and refused when another run's holder came out on top. This
  narrows a race between two runs started within a second of each other but cannot close it.

A holder is dead when its heartbeat is older than its timeout, or at once when it ran on this
host and its process is gone. Before the commit the holder renews the lease at once (`check`),
so a run that lost it never commits. A dead holder's Flink jobs are cancelled and waited for (at
most `JOB_STOP_SECONDS`), and its job servers stopped by the pid and start time it recorded.
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import threading
import time
from dataclasses import asdict
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from typing import Any, Optional

from pipeline.outputs.holder import Holder, running_jobs
from pipeline.outputs.paths import OutputPaths, read_json, write_json
from transforms.core.errors import StorageError, UserError

DEFAULT_TIMEOUT = 60.0   # seconds without a heartbeat after which a holder counts as dead
BEATS_PER_TIMEOUT = 4
MAX_BEAT_SECONDS = 5.0   # beats at least this often: a job submitted shows in the lease soon


class OutputBusy(UserError):
    """Another live run holds the lease on the output."""


class Lease:
    """Hold the lease on `paths` for `attempt` (see the module doc): `acquire()` before any work,
    `release()` at the end; `lost` turns true when a renewal was refused."""

    def __init__(self, paths: OutputPaths, attempt: str, timeout: float = DEFAULT_TIMEOUT):
        self.paths, self.attempt, self.timeout = paths, attempt, timeout
        self.lost = False
        self._lock = threading.Lock()   # one renewal at a time: the heartbeat's or `check`'s
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._holder = Holder(socket.gethostname(), os.getpid(), attempt,
                              datetime.now(timezone.utc).isoformat(timespec="seconds"), time.time(), timeout)

    def _body(self) -> bytes:
        self._holder.heartbeat, self._holder.jobs = time.time(), running_jobs()
        return json.dumps(asdict(self._holder), sort_keys=True).encode("utf-8") + b"\n"

    def acquire(self) -> Optional[Holder]:
        """Take the lease; returns the dead holder it took over, if any. Raises `OutputBusy`, in
        one line naming the holder, when a live run holds it."""
        dead = self._take()
        self._thread = threading.Thread(target=self._beat, name="csdata-lease", daemon=True)
        self._thread.start()
        return dead

    def release(self, remove_root: bool = False) -> None:
        """End the heartbeat and give the lease up; `remove_root` also removes the output's root
        when it holds nothing else (a first run into a new output that failed: only the run's
        log stays, for its error line names it)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        with self._lock:   # not while a renewal writes
            self._give_up(remove_root)

    def _beat(self) -> None:
        while not self._stop.wait(min(max(self.timeout / BEATS_PER_TIMEOUT, 0.5), MAX_BEAT_SECONDS)):
            try:
                with self._lock:
                    self._renew()
            except Exception:  # noqa: BLE001 - a store away for a while: the next beat retries
                continue
            if self.lost:
                return

    def check(self) -> None:
        """Renew the lease now; a `StorageError` when it was lost (another run took it over),
        so that the caller writes nothing more that matters."""
        if not self.lost:
            with self._lock:
                self._renew()
        if self.lost:
            raise StorageError(f"lost the lease on {self.paths.output} to another run; this run's "
                               f"output is not committed")

    def write_commit(self, record: dict) -> None:
        """Write the commit object of a remote output (only one lease kind can make it
        conditional)."""
        write_json(self.paths.commit, record)

    def busy(self, holder: Optional[Holder]) -> OutputBusy:
        who = holder.describe() if holder else "another run (its lease cannot be read)"
        return OutputBusy(f"--output {self.paths.output} is in use by {who}; wait for it to end, "
                          f"or stop it (a holder that stops renewing is taken over after "
                          f"{self.timeout:g} s)")

    def _take(self) -> Optional[Holder]:
        raise NotImplementedError

    def _renew(self) -> None:
        raise NotImplementedError

    def _give_up(self, remove_root: bool = False) -> None:
        raise NotImplementedError


class LocalLease(Lease):
    """An exclusive `flock` on the lease file, held by an open descriptor for the run's life."""

    _fd: Optional[int] = None

    def _take(self) -> Optional[Holder]:
        for _ in range(10):
            os.makedirs(self.paths.root, exist_ok=True)
            fd = os.open(self.paths.lease, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                raise self.busy(Holder.parse(read_json(self.paths.lease))) from None
            if _same_file(fd, self.paths.lease):
                break
            os.close(fd)   # removed by a run that gave up an empty root meanwhile: take the new one
        else:
            raise self.busy(None)
        self._fd = fd
        before = Holder.parse(read_json(self.paths.lease))
        self._renew()
        return before

    def _renew(self) -> None:
        if self._fd is not None:
            body = self._body()
            # In place: the lock belongs to this file, which a rename would replace.
            os.ftruncate(self._fd, 0)
            os.pwrite(self._fd, body, 0)

    def _give_up(self, remove_root: bool = False) -> None:
        if self._fd is None:
            return
        os.ftruncate(self._fd, 0)
        if remove_root:   # while the lock is held: a run that locks the removed file sees it went
            with contextlib.suppress(OSError):
                os.unlink(self.paths.lease)
                os.rmdir(self.paths.attempts)
            with contextlib.suppress(OSError):
                os.rmdir(self.paths.root)
        os.close(self._fd)   # drops the lock
        self._fd = None


def _same_file(fd: int, path: str) -> bool:
    """Whether descriptor `fd` is still the file at `path`."""
    try:
        named, held = os.stat(path), os.fstat(fd)
    except OSError:
        return False
    return (named.st_dev, named.st_ino) == (held.st_dev, held.st_ino)


class S3Lease(Lease):
    """The lease object, written with S3's conditional PUTs (boto3, configured as Beam's S3
    filesystem is, from the command line's `--s3_*` options)."""

    def __init__(self, paths: OutputPaths, attempt: str, timeout: float, options: Any):
        super().__init__(paths, attempt, timeout)
        from apache_beam.io.aws.clients.s3 import boto3_client

        self._client = boto3_client.Client(options=options).client
        self._bucket, _, self._key = paths.lease[len("s3://"):].partition("/")
        self._commit_key = paths.commit[len("s3://"):].partition("/")[2]
        self._etag: Optional[str] = None
        self._commit_etag: Optional[str] = None   # the commit object as this run found it

    def _put(self, **condition: str) -> str:
        return self._client.put_object(Bucket=self._bucket, Key=self._key, Body=self._body(),
                                       ContentType="application/json", **condition)["ETag"]

    def _get(self) -> tuple[Optional[Holder], Optional[str]]:
        holder, etag, _ = self._read()
        return holder, etag

    def _read(self) -> tuple[Optional[Holder], Optional[str], Optional[float]]:
        """The holder, the lease object's ETag and its age by the store's clock."""
        try:
            answer = self._client.get_object(Bucket=self._bucket, Key=self._key)
        except self._client.exceptions.NoSuchKey:
            return None, None, None
        try:
            data = json.loads(answer["Body"].read().decode("utf-8"))
        except ValueError:
            data = None
        return Holder.parse(data if isinstance(data, dict) else None), answer["ETag"], store_age(answer)

    def _find_commit(self) -> None:
        try:
            self._commit_etag = self._client.head_object(Bucket=self._bucket, Key=self._commit_key)["ETag"]
        except Exception as error:
            if str(getattr(error, "response", {}).get("Error", {}).get("Code")) not in ("404", "NoSuchKey", "NotFound"):
                raise
            self._commit_etag = None

    def write_commit(self, record: dict) -> None:
        """PUT the commit object on the condition that it is still the one this run found when
        it took the lease: a run that another commit overtook fails instead of overwriting it."""
        body = json.dumps(record, indent=1, ensure_ascii=False, sort_keys=True).encode("utf-8") + b"\n"
        condition = {"IfMatch": self._commit_etag} if self._commit_etag else {"IfNoneMatch": "*"}
        try:
            self._client.put_object(Bucket=self._bucket, Key=self._commit_key, Body=body,
                                    ContentType="application/json", **condition)
        except Exception as error:
            if refused(error):
                raise StorageError(f"another run committed into {self.paths.output} while this one "
                                   f"ran; this run's output is not committed") from None
            raise

    def _take(self) -> Optional[Holder]:
        holder = self._take_object()
        try:
            self._find_commit()
        except BaseException:   # not held without a heartbeat until it times out
            with contextlib.suppress(Exception):
                self._client.delete_object(Bucket=self._bucket, Key=self._key)
            raise
        return holder

    def _take_object(self) -> Optional[Holder]:
        try:
            self._etag = self._put(IfNoneMatch="*")
            return None
        except Exception as error:
            if not refused(error):
                raise
        holder, etag, age = self._read()
        if etag is None:   # released in between: try once more from the start
            self._etag = self._put(IfNoneMatch="*")
            return None
        if holder is not None and holder.alive(age=age):
            raise self.busy(holder)
        try:
            self._etag = self._put(IfMatch=etag)
        except Exception as error:
            if refused(error):   # another run took it over first
                raise self.busy(self._get()[0]) from None
            raise
        return holder

    def _renew(self) -> None:
        try:
            self._etag = self._put(IfMatch=self._etag or "")
        except Exception as error:
            if refused(error):
                self.lost = True
                return
            raise

    def _give_up(self, remove_root: bool = False) -> None:
        if self.lost:
            return
        holder, _ = self._get()
        if holder is not None and holder.attempt == self.attempt:
            self._client.delete_object(Bucket=self._bucket, Key=self._key)


def store_age(answer: dict) -> Optional[float]:
    """Seconds between an object's `Last-Modified` and the server's `Date` of the answer (both
    the store's clock); None when either is missing."""
    try:
        now = parsedate_to_datetime(answer["ResponseMetadata"]["HTTPHeaders"]["date"])
        return max(0.0, (now - answer["LastModified"]).total_seconds())
    except (KeyError, TypeError, ValueError):
        return None


def refused(error: BaseException) -> bool:
    """Whether a store refused a conditional write (the condition did not hold)."""
    response = getattr(error, "response", None) or {}
    code = str(response.get("Error", {}).get("Code", ""))
    return code in ("PreconditionFailed", "ConditionalRequestConflict", "412", "409")


class StoreLease(Lease):
    """The lease on a store without conditional writes: write, read back, compare."""

    def _take(self) -> Optional[Holder]:
        holder = Holder.parse(read_json(self.paths.lease))
        if holder is not None and holder.alive():
            raise self.busy(holder)
        self._renew()
        time.sleep(1.0)   # a racing run's write lands now, and one of the two reads the other's
        now = Holder.parse(read_json(self.paths.lease))
        if now is None or now.attempt != self.attempt:
            raise self.busy(now)
        return holder

    def _renew(self) -> None:
        from apache_beam.io.filesystems import FileSystems

        current = Holder.parse(read_json(self.paths.lease))
        if current is not None and current.attempt != self.attempt and self._thread is not None:
            self.lost = True
            return
        with FileSystems.create(self.paths.lease, mime_type="application/json") as handle:
            handle.write(self._body())

    def _give_up(self, remove_root: bool = False) -> None:
        from apache_beam.io.filesystems import FileSystems

        holder = Holder.parse(read_json(self.paths.lease))
        if holder is not None and holder.attempt == self.attempt:
            FileSystems.delete([self.paths.lease])


def make_lease(paths: OutputPaths, attempt: str, timeout: float = DEFAULT_TIMEOUT,
               options: Any = None) -> Lease:
    """The lease kind for where `paths` live."""
    if not paths.remote:
        return LocalLease(paths, attempt, timeout)
    if paths.output.startswith("s3://"):
        return S3Lease(paths, attempt, timeout, options)
    return StoreLease(paths, attempt, timeout)
