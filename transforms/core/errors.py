"""The one error policy: a `UserError` is a mistake in what the user gave (a spec value, a path,
a missing model, a malformed results file). The CLI prints it as one line and exits 2; anything
else is a bug and keeps its traceback."""
from __future__ import annotations


class UserError(Exception):
    """A problem the user can fix; its message is one line saying what and how."""


class JobFailed(Exception):
    """A job that failed on a cluster: the CLI prints its one line (the job and the first worker
    error, the full report being in the cluster's logs) and exits 1."""


class StorageError(Exception):
    """A run whose output storage failed it (a full disk, a bucket that refuses writes, a store
    that stayed away past the retries): the CLI prints its one line, naming the output, and
    exits 1; the previous output is kept."""
