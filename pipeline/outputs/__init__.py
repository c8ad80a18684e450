"""Run outputs: the one protocol every command that writes an output follows.

- `paths`: where an output's parts live (local: a link to the committed attempt and a hidden root
  beside it; object store: a commit object beside the attempts), and the file operations.
- `lease`: one live run per output (a `flock` locally, conditional PUTs on S3), with a heartbeat.
- `protocol`: attempt, commit, cleanup and the readers' `resolve_run`.
- `resume`: the work a killed run finished, reused by its rerun.
"""
