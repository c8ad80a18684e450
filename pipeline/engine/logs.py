"""Where Beam's and the workers' logs go: a log file beside the run, never the terminal.

A command that writes an output sends, for the length of its run (`run_log`), every log record of
this process to the output's log file (`pipeline.outputs.paths.OutputPaths.log`), and only
csdata's own records to stderr. The worker processes the local runner starts
(`--direct_running_mode=multi_processing`) are `pipeline.engine.local_worker`, which writes their
stderr into the same file before Beam logs anything; what they relay to this process lands there
too. With `csdata -v` (`VERBOSE_ENV`) everything also reaches the terminal, as Beam prints it.

csdata's own terminal lines (progress, resume and lease lines, the stage table, one-line errors)
are printed, not logged, so they are never filtered here. The last line of a failed run names the
log (`log_hint`).
"""
from __future__ import annotations

import contextlib
import logging
import os
import threading
from typing import Iterator, Optional

LOG_ENV = "CSDATA_LOG"         # the run's log file, for the local runner's worker processes
VERBOSE_ENV = "CSDATA_VERBOSE"   # set by `csdata -v`: everything reaches the terminal
OURS = ("csdata", "pipeline", "transforms", "filters", "data_specs")
FORMAT = "%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s"
_LAST: list[str] = []          # the log of this process's latest run (for the failure's last line)


class LogFile(logging.FileHandler):
    """The run's log file; a record it cannot write (a full disk) is dropped without logging's
    own traceback on the terminal: the run's error line says what failed."""

    def handleError(self, record: logging.LogRecord) -> None:
        return


class OursOnly(logging.Filter):
    """Pass the records of csdata's own loggers."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.name.split(".", 1)[0] in OURS


def _log_thread_error(args: threading.ExceptHookArgs) -> None:
    thread = args.thread.name if args.thread else "?"
    logging.getLogger("threads").error("exception in thread %s", thread,
                                       exc_info=(args.exc_type, args.exc_value, args.exc_traceback))


def verbose() -> bool:
    return bool(os.environ.get(VERBOSE_ENV))


def last_log() -> Optional[str]:
    """The log file of this process's latest run, if any (`forget_log` starts a command afresh)."""
    return _LAST[-1] if _LAST else None


def forget_log() -> None:
    _LAST.clear()


def log_hint() -> str:
    """` (log: PATH)` for the last line of a failed run, or "" when no run kept a log."""
    path = last_log()
    return f" (log: {path})" if path and os.path.isfile(path) else ""


@contextlib.contextmanager
def run_log(path: str) -> Iterator[Optional[str]]:
    """For the run inside this block: every log record into `path` (started afresh), only
    csdata's records on the terminal (everything with `-v`); yields `path`, or None when the
    file cannot be made (a read-only cache): then the run goes on as without a log."""
    try:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        handler = LogFile(path, mode="w", encoding="utf-8")
    except OSError:
        yield None
        return
    handler.setFormatter(logging.Formatter(FORMAT))
    handler.setLevel(logging.INFO)
    root = logging.getLogger()
    terminal = [h for h in root.handlers if isinstance(h, logging.StreamHandler)
                and not isinstance(h, logging.FileHandler)]
    ours = OursOnly()
    before = root.level, os.environ.get(LOG_ENV), [h.level for h in terminal]
    root.addHandler(handler)
    if not verbose():
        for stream in terminal:
            stream.addFilter(ours)
            stream.setLevel(max(stream.level, logging.WARNING))
    root.setLevel(min(root.level or logging.WARNING, logging.INFO))
    os.environ[LOG_ENV] = path
    _LAST[:] = [path]
    hook = threading.excepthook
    if not verbose():
        # Beam's runner threads end with a traceback when a worker dies; the run's error says it.
        threading.excepthook = _log_thread_error
    try:
        yield path
    finally:
        threading.excepthook = hook
        root.removeHandler(handler)
        handler.close()
        for stream, level in zip(terminal, before[2]):
            stream.removeFilter(ours)
            stream.setLevel(level)
        root.setLevel(before[0])
        if before[1] is None:
            os.environ.pop(LOG_ENV, None)
        else:
            os.environ[LOG_ENV] = before[1]
