"""Pipeline entry points and the csdata CLI."""
