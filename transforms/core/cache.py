"""Where csdata keeps what it builds or fetches once per machine (Beam-free, no imports)."""
from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """``$CSDATA_CACHE_DIR``, else ``$XDG_CACHE_HOME/csdata``, else ``~/.cache/csdata``."""
    if os.environ.get("CSDATA_CACHE_DIR"):
        return Path(os.environ["CSDATA_CACHE_DIR"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "csdata"
