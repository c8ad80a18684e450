"""How long csdata keeps a job's Python workers between stages on a cluster, from the cluster's
configuration (`pipeline.engine.flink_config`). Expected values are Flink's documented defaults
and hand-computed halves."""
from __future__ import annotations

import pytest

from pipeline.engine.flink_config import (
    beam_runner_version,
    environment_cache_millis,
    parse_duration_millis,
    restart_delay_millis,
)


@pytest.mark.parametrize("text, millis", [
    ("20 s", 20_000), ("500ms", 500), ("1 min", 60_000), ("250", 250), ("2h", 7_200_000),
    (" 3 seconds ", 3_000), ("1 d", 86_400_000), ("1500 µs", 1), ("2000000 ns", 2), ("10 MIN", 600_000),
    ("abc", None), ("5 weeks", None), ("", None), ("-1 s", None), ("1.5 s", None),
])
def test_flink_durations(text, millis):
    assert parse_duration_millis(text) == millis


@pytest.mark.parametrize("config, delay", [
    ({}, None),                                                     # batch without checkpoints: none
    ({"restart-strategy.type": "none"}, None),
    ({"restart-strategy.type": "fixed-delay", "restart-strategy.fixed-delay.delay": "20 s"}, 20_000),
    ({"restart-strategy.type": "fixed-delay"}, 1_000),             # Flink's default delay
    ({"restart-strategy.type": "exponential-delay",
      "restart-strategy.exponential-delay.initial-backoff": "4 s"}, 4_000),
    ({"restart-strategy.type": "failure-rate", "restart-strategy.failure-rate.delay": "30 s"}, 30_000),
    ({"restart-strategy": "fixeddelay", "restart-strategy.fixed-delay.delay": "6 s"}, 6_000),   # the older key
    ({"restart-strategy.type": "fixed-delay", "restart-strategy.fixed-delay.delay": "soon"}, 1_000),
])
def test_the_first_restart_delay(config, delay):
    assert restart_delay_millis(config) == delay


@pytest.mark.parametrize("config, millis", [
    ({}, 10_000),
    ({"restart-strategy.type": "fixed-delay", "restart-strategy.fixed-delay.delay": "20 s"}, 10_000),
    ({"restart-strategy.type": "fixed-delay", "restart-strategy.fixed-delay.delay": "30 s"}, 10_000),
    ({"restart-strategy.type": "fixed-delay", "restart-strategy.fixed-delay.delay": "3 s"}, 1_500),
    ({"restart-strategy.type": "exponential-delay"}, 500),
    ({"restart-strategy.type": "fixed-delay", "restart-strategy.fixed-delay.delay": "300 ms"}, 150),
])
def test_workers_are_kept_under_half_the_first_restart_delay(config, millis):
    assert environment_cache_millis(config) == millis


def test_the_beam_runner_a_cluster_names():
    assert beam_runner_version({"csdata.beam-runner-version": " 2.62.0 "}) == "2.62.0"
    assert beam_runner_version({"csdata.beam-runner-version": ""}) is None
    assert beam_runner_version({}) is None
