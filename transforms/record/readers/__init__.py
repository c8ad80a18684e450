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

import os
from typing import Optional

from data_specs.models import ReadersSection
from transforms.core.errors import UserError
from transforms.core.models.minilm import check_minilm
from transforms.record.readers.base import Reader
from transforms.record.readers.cross_encoder import CrossEncoderReader
from transforms.record.readers.lexical import LexicalReader
from transforms.record.readers.predictions import PredictionsReader

READERS = ("cross-encoder", "lexical", "predictions")


def make_reader(choice: str, readers: ReadersSection, seed: int) -> Reader:
    """Build a reader from `name` or `name:argument` (e.g. `predictions:answers.json`).

    The reader's options are its entry of the spec's `filter.readers`, plus the spec's `seed`.
    """
    name, _, text = choice.partition(":")
    argument: Optional[str] = text or None
    if name == "lexical":
        return LexicalReader(readers.lexical, seed)
    if name == "cross-encoder":
        return CrossEncoderReader(readers.cross_encoder, seed, argument)
    if name == "predictions":
        return PredictionsReader(argument)
    raise ValueError(f"unknown reader {name!r}; known: {sorted(READERS)}")


def check_reader(choice: str) -> None:
    """Check, before anything runs, what the reader `choice` needs: the neural stack for the
    cross-encoder, a readable predictions file for `predictions:FILE`."""
    name, _, argument = choice.partition(":")
    if name == "cross-encoder":
        check_minilm()
    elif name == "predictions" and "://" not in argument and not os.path.isfile(argument):
        raise UserError(f"reader predictions:{argument}: no such file")
    elif name not in READERS:
        raise UserError(f"unknown reader {name!r}; known: {', '.join(READERS)}")
