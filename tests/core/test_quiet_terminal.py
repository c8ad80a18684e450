"""Only csdata on the terminal: a run in process (one worker, and `multi_processing` workers)
writes csdata's own lines on stderr and nothing of Beam's or its workers', which go to the run's
log file in the output's root; `-v` shows everything; a worker that dies mid-run is one line
naming that log. (The same on a Flink cluster: tests/flink/test_flink_pipelines.py.)"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.outputs.paths import OutputPaths
from tests.conftest import DATA, ROOT
from transforms.core.resume.crash import CRASH_ENV

pytestmark = pytest.mark.slow

GENERATE = ["record", "generate", "--input", str(DATA / "cnn")]
MODES = {"in_process": [], "multi_processing": ["--direct_running_mode=multi_processing", "--direct_num_workers=2"]}


def csdata(argv: list[str], **env: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "CSDATA_PROGRESS_SECONDS": "1", **env}
    return subprocess.run([sys.executable, "-m", "pipeline.cli.main", *argv], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


def not_csdata(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if not line.startswith("csdata: ")]


@pytest.mark.parametrize("mode", sorted(MODES))
def test_a_run_writes_only_csdata_lines_on_stderr_and_beams_in_its_log(tmp_path, mode):
    output = tmp_path / "out"
    done = csdata([*GENERATE, "--output", str(output), *MODES[mode]])
    assert done.returncode == 0, done.stderr
    assert not_csdata(done.stderr) == []
    if mode == "multi_processing":   # a run of several seconds: its progress lines are there
        assert any(line.startswith("csdata: 7 files matched") for line in done.stderr.splitlines())
    log = Path(OutputPaths(str(output)).log).read_text()
    assert "apache_beam" in log
    if mode == "multi_processing":   # the workers' own start-up lines, and what they relayed
        assert "sdk_worker_main" in log and "Worker: severity" in log
        assert "Discarding unparseable args" not in log   # no option a worker cannot parse


def test_verbose_shows_beams_lines_too(tmp_path):
    done = csdata(["-v", *GENERATE, "--output", str(tmp_path / "out"), *MODES["multi_processing"]])
    assert done.returncode == 0, done.stderr
    assert any("sdk_worker" in line for line in not_csdata(done.stderr))


def test_a_worker_that_dies_is_one_line_naming_the_log(tmp_path):
    output = tmp_path / "out"
    done = csdata([*GENERATE, "--output", str(output), *MODES["multi_processing"]],
                  **{CRASH_ENV: "checkpoint.part_committed"})   # SIGKILL in the worker that commits a part
    assert done.returncode == 1
    assert not_csdata(done.stderr) == []
    last = done.stderr.splitlines()[-1]
    log = OutputPaths(str(output)).log
    assert last.startswith("csdata: error: a worker process of the local runner ended mid-run")
    assert last.endswith(f"; previous output kept (log: {log})")
    assert Path(log).is_file()
