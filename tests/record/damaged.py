"""Builders of damaged inputs that are easier made than stored: cut archives, over-long rows.

The damaged corpus itself is `tests/data/record/damaged/` (see its README).
"""
from __future__ import annotations

import io
import json
import tarfile
import zlib
from pathlib import Path
from typing import Sequence

from tests.conftest import DATA

DAMAGED = DATA / "damaged"
ARCHIVE_MEMBERS = sorted((DAMAGED / "archive_members").glob("*.story"))
GZIP_CUT_SHORT = "Compressed file ended before the end-of-stream marker was reached"


def tar_bytes(files: Sequence[tuple[str, bytes]]) -> bytes:
    """An uncompressed tar of (member name, content) pairs."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.USTAR_FORMAT) as archive:
        for name, data in files:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def member_offsets(raw: bytes) -> list[int]:
    """Where each member's header starts in an uncompressed tar."""
    with tarfile.open(fileobj=io.BytesIO(raw)) as archive:
        return [m.offset for m in archive.getmembers()]


def gzip_cut_after(raw: bytes, keep: int) -> bytes:
    """A gzip of tar `raw` cut short inside member `keep` (0-based): the first `keep` members
    decompress whole (a full flush after them), then only 8 bytes of the rest arrive."""
    split = member_offsets(raw)[keep]
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)        # wbits 31: a gzip stream
    head = compressor.compress(raw[:split]) + compressor.flush(zlib.Z_FULL_FLUSH)
    rest = compressor.compress(raw[split:]) + compressor.flush()
    return head + rest[:8]


def story_files(paths: Sequence[Path] = ARCHIVE_MEMBERS) -> list[tuple[str, bytes]]:
    return [(f"cnn/stories/{p.name}", p.read_bytes()) for p in paths]


def write_cut_tgz(path: Path, keep: int = 2) -> Path:
    """`cnn_stories.tgz` of the archive members, its download cut short after `keep` stories."""
    path.write_bytes(gzip_cut_after(tar_bytes(story_files()), keep))
    return path


LONG_SENTENCE = ("The Meridian Rowing Club of Port Alder held its regatta on the estuary on Saturday, "
                 "and the crews from Saltmarsh College won every race. ")


def long_row(chars: int, row_id: str = "row-too-long") -> str:
    """One JSONL row whose article has more than `chars` characters."""
    article = LONG_SENTENCE * (chars // len(LONG_SENTENCE) + 1)
    return json.dumps({"id": row_id, "article": article.strip(), "highlights": "Saltmarsh crews win"})
