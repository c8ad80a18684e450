"""`short_state_sampling`: the sampler period of bundles started inside it, restored after."""
import pytest
from apache_beam.runners.worker import statesampler
from apache_beam.utils.counters import CounterFactory

from pipeline.engine.runner import short_state_sampling


def period_of_a_new_sampler() -> int:
    return statesampler.StateSampler("test", CounterFactory()).sampling_period_ms


def test_period_inside_and_restored_after():
    before = period_of_a_new_sampler()
    assert before == 200          # Beam's default, the one the block shortens
    with short_state_sampling(7):
        assert period_of_a_new_sampler() == 7
    assert period_of_a_new_sampler() == before


def test_restored_after_an_error():
    with pytest.raises(RuntimeError, match="a failed run"):
        with short_state_sampling(9):
            assert period_of_a_new_sampler() == 9
            raise RuntimeError("a failed run")
    assert period_of_a_new_sampler() == 200
