"""The `predictions` reader: answers of an external reader, a `{query_id: answer}` JSON file."""
from __future__ import annotations

import json
from typing import Any, Optional, Sequence

from apache_beam.io.filesystems import FileSystems

from transforms.core.errors import UserError
from transforms.core.progress.lines import TaskLog
from transforms.record.readers.base import PickleModels, Triple


class PredictionsReader(PickleModels):
    """Answers imported from an external reader: a JSON object `{query_id: answer text}`.

    Each triple must have been predicted by a model that did not train on its fold; the file
    is trusted to respect that. A query missing from the file counts as not answered.
    """

    name = "predictions"

    def __init__(self, path: Optional[str]):
        if not path:
            raise UserError("the predictions reader needs a file: --reader predictions:FILE")
        if not FileSystems.exists(path):
            raise FileNotFoundError(f"predictions file not found: {path}")
        self._path = path
        self._answers: Optional[dict[str, str]] = None   # read on the worker, once

    def _load(self) -> dict[str, str]:
        with FileSystems.open(self._path) as handle:
            answers = json.loads(handle.read().decode("utf-8"))
        if not isinstance(answers, dict):
            raise UserError(f"{self._path}: expected a JSON object mapping query ids to answers")
        return {str(k): str(v) for k, v in answers.items()}

    def prepare(self, triple: Triple) -> str:
        return triple.query_id

    def fit(self, examples: Sequence[str], log: Optional[TaskLog] = None) -> None:
        return None

    def predict(self, model: Any, examples: Sequence[str]) -> list[str]:
        if self._answers is None:
            self._answers = self._load()
        return [self._answers.get(query_id, "") for query_id in examples]
