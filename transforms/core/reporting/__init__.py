"""What a run reports: `csdata report` pages and charts, stats, the release layout, provenance and file metadata."""
