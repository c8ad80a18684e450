"""Entity span trimming shared by every annotation backend: ReCoRD's spans carry no leading
"the", trailing dash or comma, or possessive ending."""
from __future__ import annotations

_POSSESSIVE = ("'s", "’s", "'", "’")
_DETERMINERS = ("the ", "The ", "THE ")
_TRAILING = " \t\u00a0-–—,;:"


def trim_span(text: str, start: int, end: int) -> tuple[int, int]:
    """Trim a leading "the", trailing dashes/commas and a possessive from an entity span.

    ReCoRD's spans have none of them ("the White House's" -> "White House", "Marc Chivers -" ->
    "Marc Chivers"); an empty result comes back as (start, start).
    """
    span = text[start:end]
    for det in _DETERMINERS:
        if span.startswith(det) and len(span) > len(det):
            start += len(det)
            span = span[len(det):]
            break
    span = span.rstrip(_TRAILING)
    for suffix in _POSSESSIVE:
        if span.endswith(suffix) and len(span) > len(suffix):
            span = span[: -len(suffix)]
            break
    return start, start + len(span.rstrip(_TRAILING))
