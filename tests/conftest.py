"""Shared fixtures: an offline Beam test pipeline and the repo's sample corpus."""
from __future__ import annotations

from pathlib import Path

import pytest
from apache_beam.testing.test_pipeline import TestPipeline

DATA = Path(__file__).parent / "data" / "record"


def beam_test_pipeline() -> TestPipeline:
    """A TestPipeline on the in-process FnApiRunner (the DirectRunner would try Prism first)."""
    return TestPipeline(runner="FnApiRunner")


@pytest.fixture
def test_pipeline():
    return beam_test_pipeline()
