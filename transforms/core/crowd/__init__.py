"""Crowd platforms: MTurk batch files and results, Label Studio tasks and exports, the local preview server, task pages."""
