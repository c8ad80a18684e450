"""The worker process of Beam's local runner with several processes
(`--direct_running_mode=multi_processing`): Beam's `sdk_worker_main`, with the process's stderr
(Beam's start-up lines, its logging handler's output, a crash's traceback) in the run's log file
(`pipeline.engine.logs`) from before Beam is imported, unless `csdata -v` asked for everything on
the terminal. `pipeline.engine.runner.LocalRunner` starts it in place of Beam's own command."""
from __future__ import annotations

import os
import shlex
import sys

from pipeline.engine.logs import LOG_ENV, verbose

# Run by Beam through a shell: `exec`, so that no shell stays between (one that would report a
# killed worker on the terminal itself).
COMMAND = f"exec {shlex.quote(sys.executable)} -m pipeline.engine.local_worker"


def main() -> None:
    path = os.environ.get(LOG_ENV)
    if path and not verbose():
        try:
            log = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError:   # a log that went away: the worker still runs, onto the terminal
            log = None
        if log is not None:
            os.dup2(log, 2)
            os.close(log)
    from apache_beam.runners.worker import sdk_worker_main

    sdk_worker_main.main(sys.argv)


if __name__ == "__main__":
    main()
