"""The `csdata report` page of a Cosmos QA run (`cosmos paragraphs` or `cosmos hits import`),
optionally beside a published Cosmos QA file (`--reference`).

Table 1 is `csdata stats`' own cells (`paragraph_rows` / `qa_rows`); the words histogram is the
one `csdata stats` prints. The paper (Huang et al. 2019) gives lengths as ranges and means, not
figures: paragraphs of 30-150 words (§2.1, Appendix A), and Table 1's mean and maximum tokens per
paragraph, question and answer; the charts mark those and say that no paper figure exists.

A reference (the published CSV or JSONL: `id, context, question, answer0..answer3, label`) goes
through the same functions (`paragraph_stats_of`, `qa_stats_of`): its paragraphs are its
distinct contexts; the figures it cannot give are "-" (blogs, the NOTA distractor share, which
needs the sets; per-split counts other than the split its file name says; answer lengths and
the unanswerable share of an unlabelled test file). Its unanswerable share is that of the
questions whose correct answer is the NOTA text, which is how the run's unanswerable questions
are written (`nota.instances_of`).
"""
from __future__ import annotations

import csv
import hashlib
import io
from pathlib import Path
from typing import Any, Optional, Sequence, Union

from data_specs.models import CosmosPaperTable1, NotaSection
from filters.text import count_tokens
from transforms.core.accounting import STAGE_UNITS
from transforms.core.errors import UserError
from transforms.core.io.tables import read_table
from transforms.core.reporting.plots import Line, Shade, bars_svg, histogram_svg
from transforms.core.reporting.report import (
    NO_PAPER_FIGURE,
    PUBLISHED,
    Plot,
    Report,
    Section,
    Table,
    json_lines,
    not_a_release,
    read_reference,
    run_funnel,
    sample_table,
)
from transforms.cosmos.stats import (
    labelled,
    paragraph_rows,
    paragraph_stats,
    paragraph_stats_of,
    qa_rows,
    qa_stats,
    qa_stats_of,
)

PAPER_WORDS = "30-150 words"      # the paper's paragraph range (the bins of `stats.histogram`)
SAMPLE_TEXT_LIMIT = 240
SPLITS = ("train", "dev", "test")
COLUMNS = ("id", "context", "question", "answer0", "answer1", "answer2", "answer3")
REFERENCE_SHAPE = "the published CSV or JSONL with id, context, question, answer0..answer3, label"
# The published files' names -> the run's split names.
FILE_SPLITS = {"train": "train", "valid": "dev", "dev": "dev", "test": "test"}


# ---------------------------------------------------------------- a published file (--reference)

def _label(value: Any) -> Optional[int]:
    text = str(value).strip() if value is not None else ""
    return int(text) if text.lstrip("-").isdigit() and int(text) in (0, 1, 2, 3) else None


def reference_rows(path: Union[str, Path], nota: Optional[str], option: str = "--reference"
                   ) -> dict[str, list[dict[str, Any]]]:
    """The questions of a published Cosmos QA file as the run's instance rows, under the split
    its file name says (`train`, `valid`/`dev`, `test`), else under "file". A file of another
    shape is a `UserError`."""
    text = read_reference(path, option)
    header = text.split("\n", 1)[0]
    if header.lstrip().startswith("{"):
        try:
            raw = json_lines(path, text, option)
        except UserError:
            raise not_a_release(path, "Cosmos QA", REFERENCE_SHAPE, option) from None
    else:
        try:
            raw = list(csv.DictReader(io.StringIO(text)))
        except csv.Error:          # e.g. a cell over the csv module's field limit
            raise not_a_release(path, "Cosmos QA", REFERENCE_SHAPE, option) from None
    if not raw or not all(isinstance(r, dict) and all(isinstance(r.get(c), str) for c in COLUMNS) for r in raw):
        raise not_a_release(path, "Cosmos QA", REFERENCE_SHAPE, option)
    rows = []
    for r in raw:
        label = _label(r.get("label"))
        rows.append({**{c: r[c] for c in COLUMNS}, "label": label,
                     "paragraph_id": hashlib.sha1(r["context"].encode("utf-8")).hexdigest(),
                     "unanswerable": None if label is None or nota is None else r[f"answer{label}"] == nota})
    stem = Path(path).name.split(".")[0].split("_")[0].lower()
    return {FILE_SPLITS.get(stem, "file"): rows}


def _contexts(rows: dict[str, list[dict[str, Any]]]) -> list[str]:
    return list({r["paragraph_id"]: r["context"] for split in rows.values() for r in split}.values())


# ---------------------------------------------------------------- the page

def _tokens_plot(values: list[int], slug: str, title: str, paper_mean: float, paper_max: int,
                 reference: Optional[list[int]] = None) -> Plot:
    ours = sum(values) / len(values) if values else 0.0
    lines = [Line(ours, f"this run: mean {ours:.1f}"), Line(paper_mean, f"paper: mean {paper_mean}", paper=True),
             Line(paper_max, f"paper: max {paper_max}", paper=True)]
    caption = (f"{title}: {len(values):,} values, mean {ours:.1f}, max {max(values, default=0)} "
               f"(paper's Table 1: mean {paper_mean}, max {paper_max}); {NO_PAPER_FIGURE} for the "
               "distribution.")
    if reference is not None:
        mean = sum(reference) / len(reference) if reference else 0.0
        caption += (f" Outline: the {PUBLISHED} file, {len(reference):,} values, mean {mean:.1f}, "
                    f"max {max(reference, default=0)}; bars and outline are shares of their totals.")
    return Plot(histogram_svg(values, slug, title, "tokens", lines=lines, reference=reference), caption)


def _paragraph_sections(run_dir: Path, s: dict[str, Any], paper: CosmosPaperTable1, sample_rows: int,
                        reference: Optional[dict[str, list[dict[str, Any]]]] = None
                        ) -> tuple[tuple[Section, ...], Section]:
    rows = s["histogram"]
    ref_texts = _contexts(reference) if reference is not None else None
    ref_rows = paragraph_stats_of([{"text": t} for t in ref_texts])["histogram"] if ref_texts is not None else None
    if ref_rows is not None:   # the same bins; "outside" is there only when some value is
        labels = [label for label, _ in rows] + [label for label, _ in ref_rows if label == "outside"]
        rows, ref_rows = ([(label, dict(r).get(label, 0)) for label in dict.fromkeys(labels)]
                          for r in (rows, ref_rows))
    in_range = [i for i, (label, _) in enumerate(rows) if label != "outside"]
    words = Plot(bars_svg(rows, "words", "Words per paragraph", "words (whitespace)", "paragraphs",
                          shade=Shade(in_range[0], in_range[-1], f"paper: {PAPER_WORDS}"), reference=ref_rows),
                 f"Words per paragraph, the bins `csdata stats` prints; the band is the paper's range "
                 f"({PAPER_WORDS}, §2.1); {NO_PAPER_FIGURE} for the distribution."
                 + (f" Outlined bars: the {PUBLISHED} file's distinct contexts, as shares." if ref_rows else ""))
    texts = read_table(run_dir, "paragraphs", ["text"]).column("text").to_pylist()
    tokens = _tokens_plot([count_tokens(t) for t in texts], "paragraph-tokens", "Tokens per paragraph",
                          paper.tokens_per_paragraph, paper.max_tokens_per_paragraph,
                          [count_tokens(t) for t in ref_texts] if ref_texts is not None else None)
    lengths = Section("Length distributions", "lengths", plots=(words, tokens))
    if sample_rows <= 0:
        return (lengths,), _omitted()
    table = read_table(run_dir, "paragraphs", ["paragraph_id", "blog_id", "n_words", "text"]).to_pylist()
    table.sort(key=lambda r: r["paragraph_id"])
    sample = sample_table(f"The first {min(sample_rows, len(table))} of {len(table):,} paragraphs by id",
                          ("paragraph id", "blog", "words", "text"),
                          [(r["paragraph_id"], r["blog_id"], r["n_words"], r["text"]) for r in table[:sample_rows]],
                          SAMPLE_TEXT_LIMIT)
    return (lengths,), Section("Sample rows", "sample", tables=(sample,))


def _qa_lengths(every: Sequence[dict[str, Any]]) -> dict[str, list[int]]:
    """Tokens per paragraph (distinct), question, correct and incorrect answer (labelled rows)."""
    contexts = {r["paragraph_id"]: r["context"] for r in every}
    answered = labelled(every)
    return {"paragraph": [count_tokens(t) for t in contexts.values()],
            "question": [count_tokens(r["question"]) for r in every],
            "correct": [count_tokens(r[f"answer{r['label']}"]) for r in answered],
            "incorrect": [count_tokens(r[f"answer{i}"]) for r in answered for i in range(4) if i != r["label"]]}


def _qa_sections(run_dir: Path, paper: CosmosPaperTable1, sample_rows: int,
                 reference: Optional[dict[str, list[dict[str, Any]]]] = None) -> tuple[tuple[Section, ...], Section]:
    every = [dict(r, split=split) for split in SPLITS for r in read_table(run_dir, split).to_pylist()]
    ours = _qa_lengths(every)
    ref = _qa_lengths([r for rows in reference.values() for r in rows]) if reference is not None else {}
    plots = (
        _tokens_plot(ours["paragraph"], "paragraph-tokens", "Tokens per paragraph",
                     paper.tokens_per_paragraph, paper.max_tokens_per_paragraph, ref.get("paragraph")),
        _tokens_plot(ours["question"], "question-tokens", "Tokens per question",
                     paper.tokens_per_question, paper.max_tokens_per_question, ref.get("question")),
        _tokens_plot(ours["correct"], "correct-tokens", "Tokens per correct answer", paper.tokens_per_correct_answer,
                     paper.max_tokens_per_correct_answer, ref.get("correct")),
        _tokens_plot(ours["incorrect"], "incorrect-tokens", "Tokens per incorrect answer",
                     paper.tokens_per_incorrect_answer, paper.max_tokens_per_incorrect_answer, ref.get("incorrect")),
    )
    lengths = Section("Length distributions", "lengths", plots=plots)
    if sample_rows <= 0:
        return (lengths,), _omitted()
    every.sort(key=lambda r: (r["split"], r["id"]))
    rows = [(r["split"], r["id"], r["question"], *(r[f"answer{i}"] for i in range(4)), r["label"])
            for r in every[:sample_rows]]
    sample = sample_table(f"The first {len(rows)} of {len(every):,} questions (split, id)",
                          ("split", "id", "question", "answer0", "answer1", "answer2", "answer3", "label"),
                          rows, SAMPLE_TEXT_LIMIT)
    return (lengths,), Section("Sample rows", "sample", tables=(sample,))


def _omitted() -> Section:
    return Section("Sample rows", "sample", intro="Omitted (--sample-rows 0): no text of the inputs is shown.")


def cosmos_report(run_dir: Union[str, Path], paper: CosmosPaperTable1, nota: NotaSection,
                  sample_rows: int = 5, reference: Optional[str] = None) -> Report:
    """The report of the Cosmos QA run in `run_dir` (stage 1, or a `hits import` run with its
    splits); `sample_rows` rows are shown (0: no text of the inputs at all); `reference`, a
    published Cosmos QA file, adds its Table 1 column and its distributions over the charts."""
    run_dir = Path(run_dir)
    ref = reference_rows(reference, nota.text) if reference else None
    published: Optional[list] = None
    if (run_dir / "train").is_dir():
        rows = qa_rows(qa_stats(run_dir, nota.text), paper, nota)
        if ref is not None:
            published = qa_rows(qa_stats_of(ref, nota.text), paper, nota)
        sections, sample = _qa_sections(run_dir, paper, sample_rows, ref)
        what = "questions and answers (a `cosmos hits import` run)"
    else:
        s = paragraph_stats(run_dir)
        rows = paragraph_rows(s, paper)
        if ref is not None:
            published = paragraph_rows(paragraph_stats_of([{"text": t} for t in _contexts(ref)]), paper)
        sections, sample = _paragraph_sections(run_dir, s, paper, sample_rows, ref)
        what = "stage 1 paragraphs (a `cosmos paragraphs` run)"
    note = "The same cells as `csdata stats`."
    if published is None:
        table1 = Table("Cosmos QA statistics beside the paper's Table 1", ("statistic", "this run", "paper"),
                       tuple((label.strip(), ours, "-" if p is None else str(p)) for label, ours, p in rows), note=note)
    else:
        note += (f" {PUBLISHED}: {reference}, by the same code (its paragraphs are its distinct contexts; "
                 "'-' where the file does not hold the figure).")
        table1 = Table("Cosmos QA statistics beside the paper's Table 1", ("statistic", "this run", PUBLISHED, "paper"),
                       tuple((label.strip(), ours, theirs[1], "-" if p is None else str(p))
                             for (label, ours, p), theirs in zip(rows, published)), note=note)
    return Report(
        title=f"Cosmos QA run report: {run_dir.name}", run_dir=str(run_dir),
        description=f"Cosmos QA (Huang et al. 2019): {what}."
                    + (f" Beside the {PUBLISHED} file {reference}." if reference else ""),
        table1=table1, sections=sections,
        funnel=run_funnel(run_dir, STAGE_UNITS["cosmos"], details=sample_rows > 0), tail=(sample,))


def build(run_dir: Union[str, Path], sample_rows: int = 5, reference: Optional[str] = None) -> Report:
    """`cosmos_report` with the shipped spec's Table 1 and NOTA text (as `csdata stats`)."""
    from data_specs import load_dataset_spec
    from data_specs.models import CosmosSpec

    spec = load_dataset_spec(CosmosSpec, "cosmos")
    return cosmos_report(run_dir, spec.paper_table1, spec.nota, sample_rows, reference)
