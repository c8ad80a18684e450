"""Hypothesis profiles of the fuzz tests: `ci` (the default, inside `make test`: derandomised,
a few seconds per reader) and `fuzz` (`make fuzz`: thousands of random cases per reader)."""
from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

_SHARED = {"deadline": None, "print_blob": True,
           "suppress_health_check": [HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                     HealthCheck.data_too_large, HealthCheck.large_base_example]}
settings.register_profile("ci", max_examples=int(os.environ.get("CSDATA_FUZZ_EXAMPLES", "100")),
                          derandomize=True, database=None, **_SHARED)
settings.register_profile("fuzz", max_examples=int(os.environ.get("CSDATA_FUZZ_EXAMPLES", "2000")), **_SHARED)
settings.load_profile(os.environ.get("CSDATA_FUZZ_PROFILE", "ci"))
