"""The Beam pipeline graphs, one module per dataset: each assembles a `beam.Pipeline` from the
dataset's transforms and hands it to the engine to run."""
