"""Beam's meaningless warnings stay off the terminal; real ones, and everything under `-v`, reach it."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT

# BatchElements' batch-size fit on timings that are all alike: numpy warns twice.
DEGENERATE_FIT = """
import warnings
from pipeline.engine.runner import quiet_beam_noise
quiet_beam_noise()
from apache_beam.transforms.util import _BatchSizeEstimator
_BatchSizeEstimator.linear_regression_numpy([1] * 11 + [2], [1e-9] * 12)
warnings.warn("a real warning")
"""


def stderr_of(code: str, **env: str) -> str:
    environ = {k: v for k, v in os.environ.items() if k != "CSDATA_VERBOSE"}
    environ.update(env)
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=environ, capture_output=True,
                          text=True, check=True).stderr


def test_batch_elements_fit_warnings_are_hidden_and_real_ones_shown():
    err = stderr_of(DEGENERATE_FIT)
    assert "Polyfit may be poorly conditioned" not in err
    assert "divide by zero" not in err
    assert "UserWarning: a real warning" in err


def test_verbose_shows_everything():
    err = stderr_of(DEGENERATE_FIT, CSDATA_VERBOSE="1")
    assert "RankWarning: Polyfit may be poorly conditioned" in err
    assert "RuntimeWarning: divide by zero" in err


@pytest.mark.parametrize("flags, shown", [([], False), (["-v"], True)])
def test_the_cli_sets_verbose_for_the_workers_it_starts(flags, shown):
    code = ("import os, sys\nfrom pipeline.cli.main import main\n"
            f"main({flags!r} + ['stats', '/nonexistent'])\n"
            "print(os.environ.get('CSDATA_VERBOSE', ''), file=sys.stderr)")
    assert stderr_of(code).splitlines()[-1] == ("1" if shown else "")


# Beam's launcher of a Java job server (as for Flink) around a command that never opens its port:
# it warns as it starts and stops each try, then logs the failure as an error and raises.
SERVICE_THAT_NEVER_ANSWERS = """
import logging, sys
logging.basicConfig()
from pipeline.engine.runner import quiet_beam_noise
quiet_beam_noise()
from apache_beam.portability.api import beam_job_api_pb2_grpc
from apache_beam.utils.subprocess_server import SubprocessServer
server = SubprocessServer(beam_job_api_pb2_grpc.JobServiceStub,
                          [sys.executable, "-c", "import time; time.sleep(0.5)", "{{PORT}}"])
try:
    server.start()
except RuntimeError:
    pass
"""


@pytest.mark.parametrize("verbose", [False, True])
def test_the_job_server_launchers_routine_warnings_are_hidden_and_its_errors_shown(verbose):
    err = stderr_of(SERVICE_THAT_NEVER_ANSWERS, **({"CSDATA_VERBOSE": "1"} if verbose else {}))
    assert ("Really starting service" in err) is verbose
    assert ("Really destroying service" in err) is verbose
    assert "ERROR:apache_beam.utils.subprocess_server:Failed to start job service" in err
