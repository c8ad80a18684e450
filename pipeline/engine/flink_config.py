"""What csdata reads in a Flink cluster's configuration (REST `/jobmanager/config`, as a dict of
key -> value): the Beam runner the cluster carries in its own class path, and how long a job's
Python workers may be kept between its stages (`--environment_cache_millis`) without a restart
finding the workers of the attempt that failed."""
from __future__ import annotations

import re
from typing import Mapping, Optional

# The key by which a cluster names the Beam runner in its class path (services/flink/config.yaml).
BEAM_RUNNER_KEY = "csdata.beam-runner-version"
# How long a job's Python workers wait for its next stage before they stop, at most.
ENVIRONMENT_CACHE_MILLIS = 10_000
# Flink's default first delay of each restart strategy (Flink 1.19 documentation).
DEFAULT_RESTART_DELAY_MILLIS = 1_000

_UNITS = {
    "ns": 1e-6, "nano": 1e-6, "nanos": 1e-6, "nanosecond": 1e-6, "nanoseconds": 1e-6,
    "µs": 1e-3, "micro": 1e-3, "micros": 1e-3, "microsecond": 1e-3, "microseconds": 1e-3,
    "": 1.0, "ms": 1.0, "milli": 1.0, "millis": 1.0, "millisecond": 1.0, "milliseconds": 1.0,
    "s": 1e3, "sec": 1e3, "secs": 1e3, "second": 1e3, "seconds": 1e3,
    "m": 6e4, "min": 6e4, "minute": 6e4, "minutes": 6e4,
    "h": 3.6e6, "hour": 3.6e6, "hours": 3.6e6,
    "d": 8.64e7, "day": 8.64e7, "days": 8.64e7,
}
_DELAY_KEYS = {   # the key of each restart strategy's first delay
    "fixed-delay": "restart-strategy.fixed-delay.delay", "fixeddelay": "restart-strategy.fixed-delay.delay",
    "exponential-delay": "restart-strategy.exponential-delay.initial-backoff",
    "exponentialdelay": "restart-strategy.exponential-delay.initial-backoff",
    "failure-rate": "restart-strategy.failure-rate.delay", "failurerate": "restart-strategy.failure-rate.delay",
}
_NO_RESTARTS = frozenset({"none", "off", "disable"})


def parse_duration_millis(text: str) -> Optional[int]:
    """A Flink duration (`20 s`, `500ms`, `1 min`, a bare number of milliseconds; whole numbers,
    as Flink's `TimeUtils` takes them) in whole milliseconds; None when it is not one."""
    found = re.fullmatch(r"\s*(\d+)\s*([a-zA-Zµ]*)\s*", text)
    if not found or found.group(2).lower() not in _UNITS:
        return None
    return int(int(found.group(1)) * _UNITS[found.group(2).lower()])


def beam_runner_version(config: Mapping[str, str]) -> Optional[str]:
    """The version of Beam's Flink runner the cluster carries in its class path, if it says."""
    return (config.get(BEAM_RUNNER_KEY) or "").strip() or None


def restart_delay_millis(config: Mapping[str, str]) -> Optional[int]:
    """The delay before the cluster's first restart of a failed job; None where it restarts no
    job (no strategy set: Flink's default for a batch job, which has no checkpoints)."""
    strategy = (config.get("restart-strategy.type") or config.get("restart-strategy") or "").strip().lower()
    if not strategy or strategy in _NO_RESTARTS:
        return None
    key = _DELAY_KEYS.get(strategy)
    value = parse_duration_millis(config[key]) if key and key in config else None
    return DEFAULT_RESTART_DELAY_MILLIS if value is None else value


def environment_cache_millis(config: Mapping[str, str]) -> int:
    """How long to keep a job's Python workers for its next stage: `ENVIRONMENT_CACHE_MILLIS`,
    or at most half the cluster's first restart delay. Beam does not notice that a kept worker
    died: a restart that came while the failed attempt's workers were still kept would run on
    them, and fail again (seen with 30 s kept and 20 s between restarts: every restart failed)."""
    delay = restart_delay_millis(config)
    return ENVIRONMENT_CACHE_MILLIS if delay is None else min(ENVIRONMENT_CACHE_MILLIS, delay // 2)
