"""What the `make bench` scripts share."""
from __future__ import annotations

import os
import sys


def note_fallback(shared: str) -> None:
    """Say on stderr that the real samples are not at `shared`, so a bench runs on the repo's own
    inputs, whose figures say nothing about real data (a `git worktree` outside the checkout's
    folder, for one, has no `../shared` beside it)."""
    print(f"bench: no samples at {os.path.normpath(shared)}; running on the repo's own inputs, "
          f"whose figures are not comparable with the README's", file=sys.stderr)
