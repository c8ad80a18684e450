"""Whole writes and removals on any Beam filesystem (a local disk, S3, GCS ...): the one atomic
writer and the one folder remover of the output protocol, the checkpoint and the model memo.

* `write_bytes` writes a file whole or not at all: locally under a temporary name renamed over
  the path (readers list final names only, and a rename is atomic), on an object store in one
  object, which appears only once it is closed.
* `remove_folder` removes a folder and everything under it, at any depth; a folder that is not
  there is nothing to do.
"""
from __future__ import annotations

import os
import shutil
import uuid

from transforms.core.resume.crash import crash_point


def is_local(path: str) -> bool:
    """Whether `path` is on the local disk (no scheme, or `file://`); Beam is imported only for
    the others, so that a command that writes local files alone never loads it."""
    return "://" not in path or path.startswith("file://")


def write_bytes(path: str, data: bytes) -> None:
    """Write `data` to `path`, whole or not at all (see the module doc)."""
    if is_local(path):
        folder, name = os.path.split(path.removeprefix("file://"))
        os.makedirs(folder or ".", exist_ok=True)
        temp = os.path.join(folder, f".{name}.{uuid.uuid4().hex[:8]}.tmp")
        with open(temp, "wb") as handle:
            handle.write(data)
        crash_point("write.temp_written")
        os.replace(temp, os.path.join(folder, name))
        return
    from apache_beam.io.filesystem import CompressionTypes
    from apache_beam.io.filesystems import FileSystems

    with FileSystems.create(path, compression_type=CompressionTypes.UNCOMPRESSED) as handle:
        handle.write(data)


def remove_folder(folder: str) -> None:
    """Remove `folder` and everything under it (see the module doc)."""
    if is_local(folder):
        shutil.rmtree(folder.removeprefix("file://"), ignore_errors=True)
        return
    from apache_beam.io.filesystems import FileSystems

    prefix = folder.rstrip("/") + "/"
    paths = [m.path for result in FileSystems.match([prefix + "**"]) for m in result.metadata_list]
    if paths:
        FileSystems.delete(sorted(set(paths)))
