"""The HITs of ReCoRD's crowd validation (§3.4): one task per triple (query) of a `csdata record
filter` run, exported for workers, and the task page previewed.

**Export** (`export_hits`): one CSV row per triple, in (passage_id, query_id) order. Candidates
are the passage's entity mentions merged by normalised text (`normalize_answer`), numbered from 1
in order of first mention; every mention is shown in the passage as `[n: mention]`, the same `n`
for every mention of a candidate (a mention that overlaps an earlier one, or whose normalised
text is empty, is left unmarked). The query shows `@placeholder` as `hits.placeholder_display`.
Columns starting with `hidden_` hold the references and must not be shown to workers.

**Platforms**: `--format mturk` / `label-studio` write the task page and batch of
`transforms.record.hits_pages` instead; the import (`transforms.record.crowd`) reads their
results files against the same rows (`platform_rows`).
"""
from __future__ import annotations

import csv
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Sequence, Union

from data_specs.models import RecordHitsSection
from transforms.core.crowd.mturk import fill_template
from transforms.core.crowd.platforms import FORMATS, OWN_CSV
from transforms.core.errors import UserError
from transforms.core.io.cells import escaped_dict
from transforms.core.io.tables import read_table
from transforms.record import hits_pages
from transforms.record.metric import is_correct, normalize_answer
from transforms.record.readers.base import merge_candidates

PathLike = Union[str, Path]

PLACEHOLDER = "@placeholder"
HIDDEN_PREFIX = "hidden_"
HIT_COLUMNS = ("triple_id", "passage_id", "passage", "query", "options",
               HIDDEN_PREFIX + "reference_numbers", HIDDEN_PREFIX + "reference_texts")

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Option:
    """A numbered candidate answer: the first mention's text of one normalised entity string."""

    number: int
    text: str
    key: str  # normalize_answer(text)


def candidate_options(entities: Iterable[Mapping[str, Any]]) -> list[Option]:
    """The passage's candidates (as the readers see them), numbered from 1 by first mention."""
    merged = merge_candidates((e["start"], e["end"], e["text"], e["label"]) for e in entities or [])
    return [Option(i + 1, c.text, normalize_answer(c.text)) for i, c in enumerate(merged)]


def mark_passage(text: str, entities: Iterable[Mapping[str, Any]], options: Sequence[Option]) -> str:
    """The passage with every candidate mention shown as `[n: mention]` (`end` inclusive)."""
    number = {opt.key: opt.number for opt in options}
    pieces: list[str] = []
    cursor = 0
    for start, stop, n in hits_pages.candidate_mentions(entities, number):
        pieces.append(text[cursor:start])
        pieces.append(f"[{n}: {text[start:stop]}]")
        cursor = stop
    pieces.append(text[cursor:])
    return "".join(pieces)


def answer_texts(query: Mapping[str, Any]) -> list[str]:
    """The distinct reference answer texts of a query, in order."""
    return list(dict.fromkeys(a["text"] for a in query.get("answers") or []))


def reference_numbers(options: Sequence[Option], answers: Sequence[str]) -> list[int]:
    """Numbers of the options that are a correct answer (normalised exact match)."""
    return [opt.number for opt in options if is_correct(opt.text, answers)]


def hit_row(passage: Mapping[str, Any], query: Mapping[str, Any], display: str) -> dict[str, str]:
    """One CSV row of the crowd task for a (passage, query) pair; `hidden_` columns are references."""
    options = candidate_options(passage["entities"])
    answers = answer_texts(query)
    return {
        "triple_id": query["query_id"],
        "passage_id": query["passage_id"],
        "passage": mark_passage(passage["text"], passage["entities"], options),
        "query": query["query"].replace(PLACEHOLDER, display),
        "options": json.dumps([{"number": o.number, "text": o.text} for o in options], ensure_ascii=False),
        HIDDEN_PREFIX + "reference_numbers": json.dumps(reference_numbers(options, answers)),
        HIDDEN_PREFIX + "reference_texts": json.dumps(answers, ensure_ascii=False),
    }


def load_run(run_dir: PathLike) -> tuple[dict[str, dict], list[dict], int]:
    """Passages by id, the stage's triples in (passage_id, query_id) order, and machine-dropped rows."""
    passages = {p["passage_id"]: p for p in read_table(run_dir, "passages").to_pylist()}
    triples, excluded = [], 0
    for row in read_table(run_dir, "queries").to_pylist():
        if row.get("reader_correct") is True:
            excluded += 1
        else:
            triples.append(row)
    triples.sort(key=lambda q: (q["passage_id"], q["query_id"]))
    return passages, triples, excluded


def export_hits(run_dir: PathLike, out_path: PathLike, hits: RecordHitsSection, fmt: str = OWN_CSV) -> int:
    """Write the crowd task for every triple of a filter run; return the number of HITs.

    `fmt` `csv` (default): one CSV file (UTF-8, header row, `hidden_` reference columns);
    `mturk`: `template.html` and `batch.csv` under the directory `out_path`; `label-studio`:
    `config.xml` and `tasks.json` there (`transforms.record.hits_pages`). Triples whose passage is
    missing from `passages/` cannot be shown and are skipped with a warning (`import_results`
    rejects them as `passage_missing`).
    """
    if fmt not in FORMATS:
        raise UserError(f"unknown HIT format {fmt!r}: choose one of {', '.join(FORMATS)}")
    passages, triples, _ = load_run(run_dir)
    display = hits.placeholder_display
    shown = []
    for query in triples:
        passage = passages.get(query["passage_id"])
        if passage is None:
            log.warning("triple %s: passage %s missing, no HIT", query["query_id"], query["passage_id"])
            continue
        shown.append((passage, query))
    if fmt != OWN_CSV:
        mturk_rows, ls_rows = platform_rows(shown, display)
        hits_pages.write_export(out_path, fmt, display, list(mturk_rows.values()), list(ls_rows.values()))
        return len(shown)
    out = Path(out_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(HIT_COLUMNS))
        writer.writeheader()
        for passage, query in shown:
            writer.writerow(escaped_dict(hit_row(passage, query, display)))
    return len(shown)


def platform_rows(shown: Iterable[tuple[Mapping[str, Any], Mapping[str, Any]]],
                  display: str) -> tuple[dict[str, dict[str, str]], dict[str, dict[str, Any]]]:
    """The MTurk batch rows and Label Studio task data of (passage, query) pairs, by triple id."""
    mturk_rows: dict[str, dict[str, str]] = {}
    ls_rows: dict[str, dict[str, Any]] = {}
    for passage, query in shown:
        options = candidate_options(passage["entities"])
        numbers = {opt.key: opt.number for opt in options}
        mturk_rows[query["query_id"]] = hits_pages.mturk_row(passage, query, numbers, display)
        ls_rows[query["query_id"]] = hits_pages.label_studio_data(passage, query, numbers,
                                                                  [o.text for o in options], display)
    return mturk_rows, ls_rows


def preview_page(run_dir: PathLike, hits: RecordHitsSection, triple_id: Optional[str] = None) -> str:
    """The MTurk page filled with one triple's batch row (the first in export order by default)."""
    passages, triples, _ = load_run(run_dir)
    shown = [(passages[q["passage_id"]], q) for q in triples if q["passage_id"] in passages
             and (triple_id is None or q["query_id"] == triple_id)]
    if not shown:
        raise UserError(f"{run_dir}: no triple {triple_id!r} to preview" if triple_id
                        else f"{run_dir}: the run has no triple to preview")
    mturk_rows, _ = platform_rows(shown[:1], hits.placeholder_display)
    return fill_template(hits_pages.template(hits.placeholder_display), next(iter(mturk_rows.values())))
