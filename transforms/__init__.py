"""Beam PTransforms and DoFns of the dataset pipelines, and the per-element logic they call."""
