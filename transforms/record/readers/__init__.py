"""Machine readers for ReCoRD's machine filtering (paper §3.3), behind one `Reader` interface.

A reader answers a cloze query by choosing one of the passage's candidate entities. The filter
trains a reader on k-1 folds and drops the held-out triples it answers correctly. Readers:

* `lexical` (default): logistic regression over candidate features of the kind SAN-like readers
  exploit (context overlap around `@placeholder` and around each mention, frequency, position,
  highlight presence, entity type). CPU, fast.
* `cross-encoder`: fine-tuned all-MiniLM-L6-v2 scoring (query, candidate context) pairs
  (`transforms.record.readers.cross_encoder`); CPU for small runs, a GPU when present.
* `predictions:FILE`: answers of an external reader, `{query_id: answer}` JSON.

Readers see only the query text, the passage and its entities: never the answers or the NER
label of the removed mention.
"""
from __future__ import annotations

from transforms.record.readers import lexical, predictions  # noqa: F401  (register `lexical`, `predictions`)
from transforms.record.readers.base import READERS, Reader


def make_reader(choice: str, spec: dict) -> Reader:
    """Build a reader from `name` or `name:argument` (e.g. `predictions:answers.json`).

    The reader's options are `spec["filter"]["readers"][name]`, plus the spec's `seed`.
    """
    name, _, argument = choice.partition(":")
    if name == "cross-encoder":
        # torch and transformers are optional: imported only when this reader is chosen.
        from transforms.record.readers import cross_encoder  # noqa: F401  (registers `cross-encoder`)
    if name not in READERS:
        raise ValueError(f"unknown reader {name!r}; known: {sorted(READERS)}")
    options = dict(spec["filter"]["readers"].get(name) or {})
    options.setdefault("seed", spec["seed"])
    return READERS[name](options, argument or None)
