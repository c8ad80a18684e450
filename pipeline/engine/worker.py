"""What csdata sets in each Beam SDK worker process as it starts.

`pipeline.engine.runner.run_pipeline` names this module in the run's `--beam_plugins`, which a worker
imports before it opens its data channel: the local runner's `multi_processing` workers and a
remote runner's alike (a worker that cannot import it logs Beam's warning and runs unchanged).
Importing it changes the importing process, so nothing in csdata imports it; the driver and the
in-process runner keep Beam's settings.
"""
from __future__ import annotations

from typing import Any, Optional

from pipeline.engine.runner import quiet_beam_noise
from pipeline.engine.stores import retry_store_calls

# Beam's data plane fills each message up to 10 MiB (`_DEFAULT_SIZE_FLUSH_THRESHOLD`; no pipeline
# option sets it) and copies it several times on its way into gRPC, so a worker's peak grows with
# the input; 1 MiB messages carry the same bytes in the same order (figures:
# docs/benchmarks.md#what-keeps-a-workers-memory-flat).
DATA_MESSAGE_BYTES = 1024 * 1024
_STREAMS = ("SizeBasedBufferingClosableOutputStream", "TimeBasedBufferingClosableOutputStream")


def bound_data_messages(limit: int = DATA_MESSAGE_BYTES) -> bool:
    """Make this process's Beam data plane send messages of about `limit` bytes at most (it
    only lowers the limit); returns whether it did. A Beam whose data plane is laid out
    differently is left as it is."""
    from apache_beam.runners.worker import data_plane

    current = getattr(data_plane, "_DEFAULT_SIZE_FLUSH_THRESHOLD", None)
    if not isinstance(current, int) or current <= limit:
        return False
    inits: list[Any] = [getattr(getattr(data_plane, name, None), "__init__", None) for name in _STREAMS]
    positions = [_default_position(init, "size_flush_threshold", current) for init in inits]
    if None in positions:
        return False
    for init, position in zip(inits, positions):
        defaults = list(init.__defaults__)
        defaults[position] = limit
        init.__defaults__ = tuple(defaults)
    # Also bounds how many queued messages the sender joins into one gRPC message.
    data_plane._DEFAULT_SIZE_FLUSH_THRESHOLD = limit
    return True


def _default_position(function: Any, parameter: str, expected: int) -> Optional[int]:
    """Where `parameter`'s default sits in `function.__defaults__`, if that default is
    `expected`; else None."""
    code, defaults = getattr(function, "__code__", None), getattr(function, "__defaults__", None)
    if code is None or not defaults:
        return None
    names = code.co_varnames[:code.co_argcount]
    if parameter not in names:
        return None
    position = names.index(parameter) - (len(names) - len(defaults))
    if position < 0 or defaults[position] != expected:
        return None
    return position


bound_data_messages()
retry_store_calls()
quiet_beam_noise()
