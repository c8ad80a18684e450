"""Pure, Beam-free predicates. Each returns KEEP (None) or the name of the reason to reject."""
from __future__ import annotations

from typing import Optional

#: A filter's verdict: None keeps the record, a string names the reason it is rejected.
Verdict = Optional[str]
KEEP: Verdict = None
