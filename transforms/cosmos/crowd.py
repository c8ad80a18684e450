"""Cosmos QA stage 2 (paper §2.2 question writing, §2.3 validation): the crowd round trip.

Plain Python over pyarrow tables (one crowd batch is small and the rules are sequential).

**Question-writing task** (`export_question_hits`, §2.2): one CSV row per paragraph of a `csdata
cosmos paragraphs` run: the paragraph, the instructions (the four question types; at most
`hits.max_questions` questions, each with 1..`hits.max_correct` correct and `hits.incorrect`
incorrect answers).

**Written question sets** (QUESTIONS.csv, one row per question): `assignment_id, worker_id,
paragraph_id, question_number, question, correct_1, correct_2, incorrect_1, incorrect_2,
incorrect_3` (blank answer cells are absent answers), optional `hit_id`, `question_type`. The set
id is `{assignment_id}#q{question_number}`.

**Validation results** (VALIDATIONS.csv, one row per worker and set, §2.3): `set_id, worker_id,
paragraph_sensible, question_sensible, chosen_answer, needs_commonsense,
answerable_without_paragraph` (yes/no, true/false or 1/0), optional `assignment_id`.
`chosen_answer` is an answer's text or its number 1..k in the set's canonical order (correct
answers as written, then incorrect ones). Each worker's first row per set counts; the first
`hits.validators` workers of a set are used.

**Platforms** (`transforms.cosmos.hits_pages`): both tasks also as an MTurk page + batch CSV
or a Label Studio config + tasks (`--format mturk | label-studio`); the validation task is
exported from the written sets (`export_validation_hits`). Their results files are read in
place of the two CSVs above, in submission order (`transforms.cosmos.crowd_results`).

`import_results` reads both files: a set is **valid** when it has `hits.validators` judgements,
every one judged the paragraph sensible and the question sensible and related, and at least
`hits.min_intended` workers chose a correct answer (`filters.cosmos.validation`). The valid sets
go on to §2.4 (`transforms.cosmos.nota`).
"""
from __future__ import annotations

import csv
import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Sequence, Union

from data_specs.models import CosmosHitsSection, LimitsSection
from filters import cosmos as cosmos_filters
from transforms.core.accounting import stage_entry
from transforms.core.crowd.mturk import fill_template
from transforms.core.crowd.platforms import FORMATS, OWN_CSV
from transforms.core.errors import UserError
from transforms.core.io.cells import csv_row
from transforms.core.io.tables import read_table
from transforms.cosmos import hits_pages
from transforms.cosmos.crowd_results import (
    READ_STAGE,
    Judgement,
    QuestionSet,
    read_question_file,
    read_validation_file,
    rejection,
)

PathLike = Union[str, Path]
QUESTION_STAGE = "question_sets"
VALIDATION_STAGE = "validation"
HIT_COLUMNS = ("paragraph_id", "blog_id", "paragraph", "instructions")
VALIDATION_HIT_COLUMNS = ("set_id", "paragraph_id", "paragraph", "question", "options")
_YES = {"yes", "y", "true", "1"}
_NO = {"no", "n", "false", "0"}


# --------------------------------------------------------------------------- question-writing HITs

def instructions(hits: CosmosHitsSection) -> str:
    """The writing task's instructions for the spec's `hits` section."""
    types = ", ".join(hits.question_types)
    return (f"Read the paragraph and write up to {hits.max_questions} questions that need "
            f"commonsense reasoning to answer: about {types}. Do not ask what the paragraph states "
            f"word for word. For each question write 1 to {hits.max_correct} correct answers and "
            f"{hits.incorrect} incorrect answers that are plausible and about as long as the "
            f"correct ones.")


def _paragraphs(run_dir: PathLike) -> list[dict[str, Any]]:
    return sorted(read_table(run_dir, "paragraphs", ["paragraph_id", "blog_id", "text"]).to_pylist(),
                  key=lambda r: r["paragraph_id"])


def _check_format(fmt: str) -> None:
    if fmt not in FORMATS:
        raise UserError(f"unknown HIT format {fmt!r}: choose one of {', '.join(FORMATS)}")


def export_question_hits(run_dir: PathLike, out_csv: PathLike, hits: CosmosHitsSection, fmt: str = OWN_CSV) -> int:
    """Write the question-writing task (one HIT per paragraph, paragraph_id order); return HITs.

    `csv`: one CSV file (`HIT_COLUMNS`); `mturk`: `template.html` + `batch.csv` under the
    directory `out_csv`; `label-studio`: `config.xml` + `tasks.json` there.
    """
    _check_format(fmt)
    rows = _paragraphs(run_dir)
    if fmt != OWN_CSV:
        mturk_rows, ls_rows = hits_pages.writing_rows(rows)
        hits_pages.write_export(out_csv, fmt, hits_pages.writing_template(hits), hits_pages.writing_config(hits),
                                list(mturk_rows.values()), list(ls_rows.values()))
        return len(rows)
    text = instructions(hits)
    out = Path(out_csv)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(HIT_COLUMNS)
        for r in rows:
            writer.writerow(csv_row([r["paragraph_id"], r["blog_id"], r["text"], text]))
    return len(rows)


def export_validation_hits(run_dir: PathLike, questions: PathLike, out: PathLike, hits: CosmosHitsSection,
                           seed: int, limits: LimitsSection, fmt: str = OWN_CSV, questions_format: str = "auto") -> int:
    """Write the validation task (§2.3) for every well-formed written set; return HITs.

    `questions` is the writing task's results (own CSV, MTurk or Label Studio). `csv` writes one
    file with `VALIDATION_HIT_COLUMNS` (options in the page's seeded order, no labels); `mturk`
    and `label-studio` the page or config and the batch under the directory `out`.
    """
    _check_format(fmt)
    paragraphs = {p["paragraph_id"]: p for p in _paragraphs(run_dir)}
    sets, _, _ = read_question_sets(questions, paragraphs, hits, limits, questions_format)
    mturk_rows, ls_rows = hits_pages.validation_rows(sets, paragraphs, seed)
    if fmt != OWN_CSV:
        hits_pages.write_export(out, fmt, hits_pages.validation_template(), hits_pages.validation_config(),
                                list(mturk_rows.values()), list(ls_rows.values()))
        return len(sets)
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(VALIDATION_HIT_COLUMNS)
        for qset in sets:
            options = hits_pages.shuffled_options(qset.set_id, qset.options, seed)
            writer.writerow(csv_row([qset.set_id, qset.paragraph_id, paragraphs[qset.paragraph_id]["text"],
                                     qset.question, json.dumps(options, ensure_ascii=False)]))
    return len(sets)


def preview_page(run_dir: PathLike, hits: CosmosHitsSection, seed: int, limits: LimitsSection,
                 questions: Optional[PathLike] = None, item: Optional[str] = None) -> str:
    """The MTurk writing page filled with a paragraph, or (with `questions`) the validation page
    filled with a written set; the first in export order unless `item` names one."""
    paragraphs = {p["paragraph_id"]: p for p in _paragraphs(run_dir)}
    if questions is None:
        rows, _ = hits_pages.writing_rows(paragraphs.values())
        page = hits_pages.writing_template(hits)
    else:
        sets, _, _ = read_question_sets(questions, paragraphs, hits, limits)
        rows, _ = hits_pages.validation_rows(sets, paragraphs, seed)
        page = hits_pages.validation_template()
    chosen = [row for key, row in rows.items() if item is None or key == item]
    if not chosen:
        raise UserError(f"{run_dir}: nothing to preview" + (f" named {item!r}" if item else ""))
    return fill_template(page, chosen[0])


# --------------------------------------------------------------------------- question sets and judgements

def yes_no(value: str, column: str) -> bool:
    """A yes/no cell (yes/no, y/n, true/false, 1/0); anything else is a `UserError`."""
    lowered = value.strip().lower()
    if lowered in _YES:
        return True
    if lowered in _NO:
        return False
    raise UserError(f"{column}: expected yes/no, got {value!r}")


def _norm(text: str) -> str:
    return " ".join(text.lower().split()).rstrip(" .")


def resolve_answer(chosen: str, options: Sequence[str]) -> str:
    """The option named by `chosen` (a number 1..k, or its text up to case/spaces/final dot)."""
    value = chosen.strip()
    if value.isdigit() and 1 <= int(value) <= len(options):
        return options[int(value) - 1]
    for option in options:
        if _norm(option) == _norm(value):
            return option
    return value


def read_question_sets(path: PathLike, paragraphs: Mapping[str, Mapping[str, Any]],
                       hits: CosmosHitsSection, limits: LimitsSection,
                       fmt: str = "auto") -> tuple[list[QuestionSet], list[dict], int]:
    """Well-formed sets, rejects (stage question_sets, and read_results for parts of the file
    left out) and the number of question rows read, from `read_question_file`."""
    read = read_question_file(path, paragraphs, hits, limits, fmt)
    sets, rejects, n_rows = question_sets_from_rows(read.rows, paragraphs, hits)
    return sets, read.rejects(path) + rejects, n_rows


def question_sets_from_rows(rows: Sequence[Mapping[str, str]], paragraphs: Mapping[str, Mapping[str, Any]],
                            hits: CosmosHitsSection) -> tuple[list[QuestionSet], list[dict], int]:
    """`read_question_sets` on rows of the question-sets layout."""
    sets: list[QuestionSet] = []
    rejects: list[dict] = []
    seen: set[str] = set()
    for row in rows:
        set_id = f"{row['assignment_id']}#q{row['question_number']}"
        correct = [row[c] for c in ("correct_1", "correct_2", "correct_3") if row.get(c)]
        incorrect = [row[c] for c in ("incorrect_1", "incorrect_2", "incorrect_3", "incorrect_4") if row.get(c)]
        if set_id in seen:
            rejects.append(rejection(QUESTION_STAGE, "duplicate_set", set_id))
            continue
        seen.add(set_id)
        paragraph = paragraphs.get(row["paragraph_id"])
        if paragraph is None:
            rejects.append(rejection(QUESTION_STAGE, "paragraph_missing", set_id, row["paragraph_id"]))
            continue
        if not row["question_number"].isdigit() or not 1 <= int(row["question_number"]) <= hits.max_questions:
            rejects.append(rejection(QUESTION_STAGE, "too_many_questions", set_id,
                                     f"question_number {row['question_number']!r}"))
            continue
        reason = cosmos_filters.question_set(row["question"], correct, incorrect,
                                             hits.max_correct, hits.incorrect)
        if reason:
            rejects.append(rejection(QUESTION_STAGE, reason, set_id))
            continue
        sets.append(QuestionSet(set_id, row["paragraph_id"], row.get("hit_id", ""), row["assignment_id"],
                                row["worker_id"], int(row["question_number"]), row.get("question_type", ""),
                                row["question"], correct, incorrect, paragraph["blog_id"]))
    return sets, rejects, len(rows)


def judgements_from_rows(sets: Sequence[QuestionSet], rows: Iterable[Mapping[str, str]],
                         hits: CosmosHitsSection) -> dict[str, int]:
    """`attach_judgements` on rows of the validations layout."""
    by_id = {s.set_id: s for s in sets}
    counts: Counter[str] = Counter()
    for row in rows:
        counts["read"] += 1
        qset = by_id.get(row["set_id"])
        if qset is None:
            counts["unknown_set"] += 1
            continue
        if any(j.worker_id == row["worker_id"] for j in qset.judgements):
            counts["repeated"] += 1
            continue
        if len(qset.judgements) >= hits.validators:
            counts["beyond_limit"] += 1
            continue
        chosen = resolve_answer(row["chosen_answer"], qset.options)
        qset.judgements.append(Judgement(
            row["worker_id"], yes_no(row["paragraph_sensible"], "paragraph_sensible"),
            yes_no(row["question_sensible"], "question_sensible"), chosen, chosen in qset.correct,
            yes_no(row["needs_commonsense"], "needs_commonsense"),
            yes_no(row["answerable_without_paragraph"], "answerable_without_paragraph")))
        counts["used"] += 1
    return dict(counts)


# --------------------------------------------------------------------------- validation (§2.3)

def intended_votes(qset: QuestionSet) -> int:
    """How many validators chose one of the set's correct answers."""
    return sum(j.intended for j in qset.judgements)


def validate(qset: QuestionSet, hits: CosmosHitsSection) -> Optional[str]:
    """Why a judged set is not valid (§2.3, `filters.cosmos.validation`), None when it is."""
    judgements = qset.judgements
    satisfied = all(j.paragraph_sensible and j.question_sensible for j in judgements)
    return cosmos_filters.validation(len(judgements), hits.validators, intended_votes(qset),
                                     hits.min_intended, satisfied)


@dataclass
class CrowdResults:
    """One crowd batch after §2.2-2.3: the run's paragraphs, the well-formed sets (with their
    judgements), the valid ones, the rejects of both stages and the row counts."""

    paragraphs: dict[str, dict[str, Any]]     # every paragraph of the run, by paragraph_id
    sets: list[QuestionSet]
    valid: list[QuestionSet]
    rejects: list[dict[str, str]]
    question_rows: int
    validations: dict[str, int]               # validation rows: read, used, unknown_set, ...
    records: int = 0                          # records of both results files read as rows

    def stages(self) -> dict[str, dict[str, Any]]:
        """The summary entries of the stages (in, kept, rejected by reason, balanced)."""
        def entry(n_in: int, kept: int, stage: str) -> dict[str, Any]:
            return stage_entry(n_in, kept, Counter(r["reason"] for r in self.rejects if r["stage"] == stage))

        skipped = sum(r["stage"] == READ_STAGE for r in self.rejects)
        return {READ_STAGE: entry(self.records + skipped, self.records, READ_STAGE),
                QUESTION_STAGE: entry(self.question_rows, len(self.sets), QUESTION_STAGE),
                VALIDATION_STAGE: entry(len(self.sets), len(self.valid), VALIDATION_STAGE)}


def import_results(run_dir: PathLike, questions_csv: PathLike, validations_csv: PathLike,
                   hits: CosmosHitsSection, limits: LimitsSection, fmt: str = "auto", seed: int = 0) -> CrowdResults:
    """Read the written sets and their validations for the paragraphs of `run_dir`; validate.

    Both files may be the own CSVs or platform results (`fmt` applies to both; `auto` tells
    each apart), read within `limits`; `seed` is the spec's, which ordered the validation page's
    options. Parts of either file left out are rejects of the stage `read_results`.
    """
    paragraphs = {p["paragraph_id"]: p for p in read_table(run_dir, "paragraphs").to_pylist()}
    written = read_question_file(questions_csv, paragraphs, hits, limits, fmt)
    sets, rejects, n_rows = question_sets_from_rows(written.rows, paragraphs, hits)
    judged = read_validation_file(sets, validations_csv, limits, fmt, paragraphs, seed)
    judgement_counts = judgements_from_rows(sets, judged.rows, hits)
    rejects = written.rejects(questions_csv) + judged.rejects(validations_csv) + rejects
    valid = []
    for qset in sets:
        reason = validate(qset, hits)
        if reason:
            rejects.append(rejection(VALIDATION_STAGE, reason, qset.set_id,
                                     f"{len(qset.judgements)} judgements, {intended_votes(qset)} intended"))
        else:
            valid.append(qset)
    return CrowdResults(paragraphs, sets, valid, rejects, n_rows, judgement_counts, written.records + judged.records)

