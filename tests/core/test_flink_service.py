"""`make flink-up` (services/flink/flink.sh) refuses in one line, before fetching or starting
anything, when it cannot run a cluster: a port taken, Java missing."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
from pathlib import Path

FLINK_SH = Path(__file__).resolve().parents[2] / "services" / "flink" / "flink.sh"


def up(env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(["/bin/bash", str(FLINK_SH), "up"], env=env, capture_output=True,
                          text=True, timeout=60)


def test_a_taken_port_is_one_line(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = up({**os.environ, "CSDATA_CACHE_DIR": str(tmp_path), "CSDATA_FLINK_REST_PORT": str(port)})
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"flink.sh: port {port} is taken (another Flink or service?): stop it, or set "
        "CSDATA_FLINK_REST_PORT / CSDATA_FLINK_RPC_PORT"]
    assert list(tmp_path.iterdir()) == []          # nothing fetched, nothing started


def test_missing_java_is_one_line(tmp_path):
    tools = tmp_path / "bin"                        # a PATH with what the script needs, but no java
    tools.mkdir()
    for tool in ("sed", "dirname", "cat", "python3"):
        found = shutil.which(tool)
        assert found is not None
        (tools / tool).symlink_to(found)
    result = up({"PATH": str(tools), "HOME": str(tmp_path), "CSDATA_CACHE_DIR": str(tmp_path / "cache")})
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        "flink.sh: Java is missing: install a JDK 11 or 17 (Debian: openjdk-17-jdk-headless)"]
    assert not (tmp_path / "cache").exists()
