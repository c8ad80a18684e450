"""A process's memory: keep the garbage collector off what a process holds for good
(`freeze_heap`, `freeze_heap_at_exit`) and hand freed model memory back to the system
(`release_memory`, `trim_heap`). Called by the model loaders, the machine filter's folds and the
engine as a run starts; nothing here imports a model.
"""
from __future__ import annotations

import atexit
import contextlib
import functools
import gc


@functools.cache
def freeze_heap_at_exit() -> None:
    """Freeze this process's heap when it exits (`gc.freeze`); registered once per process.

    A process that loaded a model holds millions of small objects, and the interpreter's final
    garbage collections walk all of them, while the local runner stops its workers one after
    another. Frozen objects are skipped by those collections and still released by reference
    counting; only cyclic garbage is left to the end of the process. Exit handlers registered
    earlier run after this one, as usual.
    """
    atexit.register(gc.freeze)


@functools.cache
def freeze_heap(after: str) -> None:
    """Move every object the cyclic garbage collector tracks now into its permanent generation
    (`gc.freeze`), once per process for each `after`: "run" (the engine's `run_pipeline`, as a
    process's first pipeline starts) and "model" (the model loaders, once a first model is loaded).

    What a process holds at those moments (the imports of a run, a loaded model) lives until it
    exits, and every full collection would walk all of it again. Frozen objects are skipped by
    collections and still freed by reference counting; only cycles that are garbage already by
    then are left to the end of the process.
    """
    gc.freeze()


def release_memory() -> None:
    """Hand memory freed by a finished model (a fold's training) back to the system: a garbage
    collection, then `trim_heap`. Without the trim, the freed buffers of one fold stay in the
    process and the next fold's are added on top."""
    gc.collect()
    trim_heap()


def trim_heap() -> None:
    """glibc's `malloc_trim(0)` where there is one: free pages inside the heap go back to the
    system. torch frees a training step's activations into glibc's heap, which keeps them; after
    many steps of different lengths the process holds hundreds of MB it does not use."""
    with contextlib.suppress(OSError, AttributeError):
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
