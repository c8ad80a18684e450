"""A run that fills its disk: one line naming the output and "no space left", exit 1, no
traceback, the previous output byte for byte as it was, and no staging directory left; a disk
with no room at all, where the first write the run makes fails (its lease), is one line too.

The output lives on a real 1 MiB tmpfs, mounted in a mount namespace of the test's own
(`unshare`), so nothing stays mounted whatever happens; as root, or as a user that may create
user namespaces."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import DATA, ROOT

pytestmark = pytest.mark.slow

# Runs inside the namespace: mount, copy the previous output in, leave $FREE KiB free, run.
SCRIPT = r"""
set -eu
mount -t tmpfs -o size=1m tmpfs "$MNT"
cp -aL "$PREVIOUS" "$MNT/out"
before=$(cd "$MNT" && find out -type f | sort | xargs sha256sum)
free=$(df -k --output=avail "$MNT" | tail -1)
dd if=/dev/zero of="$MNT/filler" bs=1k count=$((free - FREE)) 2>/dev/null
set +e
"$PYTHON" -m pipeline.cli.main record generate --input "$INPUT_A" --input "$INPUT_B" --output "$MNT/out" \
  >/dev/null 2>"$ERR"
echo "exit=$?"
after=$(cd "$MNT" && find out -type f | sort | xargs sha256sum)
[ "$before" = "$after" ] && echo "previous=same" || echo "previous=changed"
echo "left=$(ls -A "$MNT" | tr '\n' ' ')"
echo "attempts=$(ls -A "$MNT/.out.csdata/runs" 2>/dev/null | tr '\n' ' ')"
"""


def namespace_command() -> list[str]:
    if shutil.which("unshare") is None:
        pytest.fail("`unshare` (util-linux) is missing: it gives the test a tmpfs of its own")
    return ["unshare", "-m"] if os.geteuid() == 0 else ["unshare", "-r", "-m"]


@pytest.fixture(scope="module")
def previous(tmp_path_factory) -> Path:
    """A finished run of the CNN sample: the output the failing runs must leave as it was."""
    folder = tmp_path_factory.mktemp("full-disk") / "previous"
    subprocess.run([sys.executable, "-m", "pipeline.cli.main", "record", "generate", "--input",
                    str(DATA / "cnn"), "--output", str(folder)], cwd=ROOT, check=True,
                   capture_output=True)
    return folder


def run_on_full_disk(tmp_path: Path, previous: Path, free_kib: int) -> tuple[dict[str, str], list[str]]:
    """Run `record generate` over `previous` on a tmpfs with `free_kib` KiB left: the script's
    report (exit, previous, left) and the run's stderr lines."""
    (tmp_path / "mnt").mkdir()
    err = tmp_path / "stderr"
    env = dict(os.environ, MNT=str(tmp_path / "mnt"), PREVIOUS=str(previous), ERR=str(err),
               PYTHON=sys.executable, INPUT_A=str(DATA / "cnn"), INPUT_B=str(DATA / "dailymail"),
               FREE=str(free_kib))
    result = subprocess.run([*namespace_command(), "bash", "-c", SCRIPT], cwd=ROOT, env=env,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    report = dict(line.split("=", 1) for line in result.stdout.splitlines())
    return report, err.read_text().splitlines()


def test_a_full_local_disk_is_one_line_and_keeps_the_previous_output(tmp_path, previous):
    report, lines = run_on_full_disk(tmp_path, previous, 24)
    assert report["exit"] == "1"
    assert lines == [f"csdata: error: no space left writing {tmp_path}/mnt/out (the disk or bucket "
                     f"is full); previous output kept (log: {tmp_path}/mnt/.out.csdata/csdata.log)"], lines
    assert report["previous"] == "same"
    assert_nothing_half_written(report)


def assert_nothing_half_written(report: dict[str, str]) -> None:
    """Beside the previous output, at most its root (`.out.csdata`: the lease and the model work
    a rerun may reuse), and no attempt in it."""
    assert set(report["left"].split()) <= {"filler", "out", ".out.csdata"}, report["left"]
    assert report["attempts"].split() == [], report["attempts"]


def test_a_disk_with_no_room_at_all_is_one_line(tmp_path, previous):
    report, lines = run_on_full_disk(tmp_path, previous, 0)
    assert report["exit"] == "1"
    assert len(lines) == 1, lines
    assert lines[0].startswith("csdata: error: no space left"), lines
    assert re.search(r"\(the disk or bucket is full\); previous output kept( \(log: .*/\.out\.csdata/csdata\.log\))?$",
                     lines[0]), lines   # no log when not even its file could be made
    assert report["previous"] == "same"
    assert_nothing_half_written(report)
