"""A run that fills its disk: one line naming the output and "no space left", exit 1, no
traceback, the previous output byte for byte as it was, and no staging directory left.

The output lives on a real 1 MiB tmpfs, mounted in a mount namespace of the test's own
(`unshare`), so nothing stays mounted whatever happens; as root, or as a user that may create
user namespaces."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from tests.conftest import DATA, ROOT

pytestmark = pytest.mark.slow

# Runs inside the namespace: mount, copy the previous output in, leave ~24 KiB free, run.
SCRIPT = r"""
set -eu
mount -t tmpfs -o size=1m tmpfs "$MNT"
cp -a "$PREVIOUS" "$MNT/out"
before=$(cd "$MNT" && find out -type f | sort | xargs sha256sum)
free=$(df -k --output=avail "$MNT" | tail -1)
dd if=/dev/zero of="$MNT/filler" bs=1k count=$((free - 24)) 2>/dev/null
set +e
"$PYTHON" -m pipeline.cli record generate --input "$INPUT_A" --input "$INPUT_B" --output "$MNT/out" \
  >/dev/null 2>"$ERR"
echo "exit=$?"
after=$(cd "$MNT" && find out -type f | sort | xargs sha256sum)
[ "$before" = "$after" ] && echo "previous=same" || echo "previous=changed"
echo "left=$(ls -A "$MNT" | tr '\n' ' ')"
"""


def namespace_command() -> list[str]:
    if shutil.which("unshare") is None:
        pytest.fail("`unshare` (util-linux) is missing: it gives the test a tmpfs of its own")
    return ["unshare", "-m"] if os.geteuid() == 0 else ["unshare", "-r", "-m"]


def test_a_full_local_disk_is_one_line_and_keeps_the_previous_output(tmp_path):
    previous = tmp_path / "previous"
    subprocess.run([sys.executable, "-m", "pipeline.cli", "record", "generate", "--input",
                    str(DATA / "cnn"), "--output", str(previous)], cwd=ROOT, check=True,
                   capture_output=True)
    (tmp_path / "mnt").mkdir()
    err = tmp_path / "stderr"
    env = dict(os.environ, MNT=str(tmp_path / "mnt"), PREVIOUS=str(previous), ERR=str(err),
               PYTHON=sys.executable, INPUT_A=str(DATA / "cnn"), INPUT_B=str(DATA / "dailymail"))
    result = subprocess.run([*namespace_command(), "bash", "-c", SCRIPT], cwd=ROOT, env=env,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    report = dict(line.split("=", 1) for line in result.stdout.splitlines())
    lines = err.read_text().splitlines()
    assert report["exit"] == "1"
    assert lines == [f"csdata: error: no space left writing {tmp_path}/mnt/out (the disk or bucket "
                     "is full); previous output kept"], lines
    assert report["previous"] == "same"
    assert report["left"].split() == ["filler", "out"]   # no staging, no previous-run copy
