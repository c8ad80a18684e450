"""csdata's command line and the machinery under it, one package per concern: `cli` (the
commands), `graphs` (one Beam pipeline per dataset), `engine` (runners, Flink, workers,
progress) and `outputs` (the one output protocol: attempt, commit, lease, resume)."""
