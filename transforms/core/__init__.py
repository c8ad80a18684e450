"""Shared core of the dataset packages: accounting, I/O, dedup, models, hashing."""
