"""The two results files of Cosmos QA's crowd round trip (§2.2-2.3) read into rows.

The writing task's results (QUESTIONS.csv, or an MTurk results CSV / Label Studio export of the
task `transforms.cosmos.hits_pages` exported) become rows of the question-sets layout
(`QUESTION_COLUMNS`); the validation task's results (VALIDATIONS.csv, or the platforms' files)
rows of the validations layout (`VALIDATION_COLUMNS`). Each `ResultsFile` keeps what it left out,
as rejects of the stage `read_results`. `QuestionSet` and `Judgement` are what
`transforms.cosmos.crowd` makes of the rows.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence, Union

from data_specs.models import CosmosHitsSection, LimitsSection
from transforms.core.crowd.platforms import OWN_CSV, detect_results_format, left_out
from transforms.core.errors import UserError
from transforms.core.io.cells import read_csv_cell
from transforms.core.io.untrusted import Skipped, read_csv_rows
from transforms.cosmos import hits_pages

PathLike = Union[str, Path]
READ_STAGE = "read_results"        # records of the results files, before their rows are sets
QUESTION_COLUMNS = ("assignment_id", "worker_id", "paragraph_id", "question_number", "question",
                    "correct_1", "correct_2", "incorrect_1", "incorrect_2", "incorrect_3")
VALIDATION_COLUMNS = ("set_id", "worker_id", "paragraph_sensible", "question_sensible",
                      "chosen_answer", "needs_commonsense", "answerable_without_paragraph")


@dataclass
class QuestionSet:
    """One written question with its correct and incorrect answers (set id
    `{assignment_id}#q{question_number}`), and the validators' judgements of it."""

    set_id: str
    paragraph_id: str
    hit_id: str
    assignment_id: str
    worker_id: str
    question_number: int
    question_type: str
    question: str
    correct: list[str]
    incorrect: list[str]
    blog_id: str = ""
    judgements: list[Judgement] = field(default_factory=list)

    @property
    def options(self) -> list[str]:
        """The set's answers in canonical order: the correct ones as written, then the incorrect."""
        return [*self.correct, *self.incorrect]


@dataclass(frozen=True)
class Judgement:
    """One validator's five judgements of a question set (§2.3)."""

    worker_id: str
    paragraph_sensible: bool
    question_sensible: bool
    chosen: str               # the chosen answer's text as resolved
    intended: bool            # chosen is a correct answer
    needs_commonsense: bool
    answerable_without_paragraph: bool


@dataclass(frozen=True)
class ResultsFile:
    """A results file read: its rows in the own layout, how many records (rows, assignments or
    annotations) they came from, and what was left out (`transforms.core.io.untrusted.Skipped`)."""

    rows: list[dict[str, str]]
    records: int
    skipped: list[Skipped]

    def rejects(self, source: PathLike) -> list[dict[str, str]]:
        """The left-out parts as rejects of the stage `read_results`."""
        return [rejection(READ_STAGE, s.reason, s.record_id(source), s.detail) for s in self.skipped]


def _read_csv(path: PathLike, required: Sequence[str], limits: LimitsSection) -> ResultsFile:
    table = read_csv_rows(path, limits)
    missing = [c for c in required if c not in table.header]
    if missing:
        raise UserError(f"{path}: missing columns {missing}")
    rows = [{k: read_csv_cell(v.strip()) for k, v in row.items()} for _, row in table.rows]
    return ResultsFile(rows, len(rows), table.skipped)


def rejection(stage: str, reason: str, record_id: str, detail: str = "") -> dict[str, str]:
    """A reject row of the crowd stages (`stage, reason, record_id, detail`)."""
    return {"stage": stage, "reason": reason, "record_id": record_id, "detail": detail}


def read_question_file(path: PathLike, paragraphs: Mapping[str, Mapping[str, Any]], hits: CosmosHitsSection,
                       limits: LimitsSection, fmt: str = "auto") -> ResultsFile:
    """The writing task's results as rows of the question-sets layout: QUESTIONS.csv, or an MTurk
    results CSV / Label Studio export of this run's export (`fmt` csv, mturk, label-studio or
    auto), read within `limits`."""
    fmt = detect_results_format(path) if fmt == "auto" else fmt
    if fmt == OWN_CSV:
        return _read_csv(path, QUESTION_COLUMNS, limits)
    mturk_rows, ls_rows = hits_pages.writing_rows(paragraphs.values())
    results = hits_pages.read_assignments(path, fmt, "paragraph_id", ["q1_question"], mturk_rows,
                                          ls_rows, ("paragraph",), limits)
    return ResultsFile(hits_pages.question_rows(results.assignments, hits), len(results.assignments),
                       left_out(results))


def read_validation_file(sets: Sequence[QuestionSet], path: PathLike, limits: LimitsSection, fmt: str = "auto",
                         paragraphs: Optional[Mapping[str, Mapping[str, Any]]] = None, seed: int = 0) -> ResultsFile:
    """The validation task's results as rows of the validations layout: VALIDATIONS.csv, or an
    MTurk results CSV / Label Studio export of the validation task exported for these sets (with
    `paragraphs` and the spec's `seed`), in submission order, read within `limits`."""
    fmt = detect_results_format(path) if fmt == "auto" else fmt
    if fmt == OWN_CSV:
        return _read_csv(path, VALIDATION_COLUMNS, limits)
    if paragraphs is None:
        raise ValueError("platform validation results need the run's paragraphs")
    mturk_rows, ls_rows = hits_pages.validation_rows(sets, paragraphs, seed)
    results = hits_pages.read_assignments(
        path, fmt, "set_id", [name for name in VALIDATION_COLUMNS if name not in ("set_id", "worker_id")],
        mturk_rows, ls_rows, ("question", "paragraph"), limits)
    return ResultsFile(hits_pages.judgement_rows(results.assignments), len(results.assignments), left_out(results))

