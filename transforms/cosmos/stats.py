"""Cosmos QA run statistics beside the paper's Table 1 (`csdata stats`; Huang et al. 2019).

A stage 1 run (`csdata cosmos paragraphs`) is described by its paragraphs (count, words and
tokens, a words histogram) and its per-stage summary; a `csdata cosmos hits import` run by its
questions per split, token lengths, unanswerable and NOTA shares (paper §2.4, Table 1).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

from data_specs.models import CosmosPaperTable1, NotaSection
from filters.text import count_tokens
from transforms.core.accounting import STAGE_UNITS, format_summary
from transforms.core.io.tables import read_summary, read_table
from transforms.core.reporting.stats import describe
from transforms.core.reporting.stats import histogram as core_histogram

SPLITS = ("train", "dev", "test")


def histogram(values: Sequence[int], low: int = 30, high: int = 150, width: int = 10) -> list[tuple[str, int]]:
    """Counts per `width`-word bin from `low` to `high` (the last bin includes `high`), then the
    values outside the range."""
    edges = list(range(low, high, width))
    bins = [(a, min(a + width, high) - 1) for a in edges[:-1]] + [(edges[-1], high)]
    return core_histogram(values, bins, outside=True)


def paragraph_stats(path: Path) -> dict[str, Any]:
    """`paragraph_stats_of` the `paragraphs` table of a stage 1 run."""
    return paragraph_stats_of(read_table(path, "paragraphs", ["blog_id", "text"]).to_pylist())


def paragraph_stats_of(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Paragraph count, blogs (None when the rows name none, as a published file), words and
    tokens (mean, max, min) and the words histogram of paragraph rows (`text`, `blog_id`)."""
    words = [len(r["text"].split()) for r in rows]
    tokens = [count_tokens(r["text"]) for r in rows]
    blogs = {r.get("blog_id") for r in rows} - {None}
    return {"paragraphs": len(rows), "blogs": len(blogs) if blogs or not rows else None,
            "words": describe(words), "tokens": describe(tokens), "histogram": histogram(words)}


def qa_stats(path: Path, nota: str) -> dict[str, Any]:
    """`qa_stats_of` the train, dev and test tables of a `hits import` run."""
    return qa_stats_of({s: read_table(path, s).to_pylist() for s in SPLITS}, nota)


def labelled(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows with a label 0-3 (a published test file has none)."""
    return [r for r in rows if r.get("label") in (0, 1, 2, 3)]


def _share(rows: Sequence[dict[str, Any]], key: str) -> Optional[float]:
    """Percentage of rows whose `key` is true; None when a row lacks the value (a published file)."""
    values = [r.get(key) for r in rows]
    if not values or any(v is None for v in values):
        return None if values else 0.0
    return 100.0 * sum(bool(v) for v in values) / len(values)


def qa_stats_of(rows: Mapping[str, Sequence[dict[str, Any]]], nota: str) -> dict[str, Any]:
    """QA figures of rows by split (`id, paragraph_id, context, question, answer0..3, label`, and
    the run's `unanswerable`, `set_id`, `nota_distractor`): a figure whose values the rows lack
    (per-split counts of splits not given, the NOTA distractor share without sets) is None."""
    every = [r for split in rows.values() for r in split]
    paragraphs = {r["paragraph_id"]: r["context"] for r in every}
    answered = labelled(every)
    correct = [count_tokens(r[f"answer{r['label']}"]) for r in answered]
    incorrect = [count_tokens(r[f"answer{i}"]) for r in answered for i in range(4) if i != r["label"]]
    sets = {r.get("set_id"): r.get("nota_distractor") for r in every}
    known_sets = bool(sets) and None not in sets and None not in sets.values()
    return {
        "questions": len(every), "paragraphs": len(paragraphs),
        **{f"{s}_questions": len(v) for s, v in rows.items()},
        **{f"{s}_paragraphs": len({r["paragraph_id"] for r in v}) for s, v in rows.items()},
        "paragraph": describe([count_tokens(t) for t in paragraphs.values()]),
        "question": describe([count_tokens(r["question"]) for r in every]),
        "correct": describe(correct) if answered or not every else None,
        "incorrect": describe(incorrect) if answered or not every else None,
        "unanswerable_percent": _share(answered if answered else every, "unanswerable"),
        "nota_distractor_percent": (100.0 * sum(bool(v) for v in sets.values()) / len(sets) if known_sets
                                    else (0.0 if not sets else None)),
        "nota_anywhere_percent": 100.0 * sum(any(r[f"answer{i}"] == nota for i in range(4)) for r in every)
        / len(every) if every else 0.0,
    }


def _row(label: str, ours: str, paper: Any) -> str:
    return f"{label:<34}{ours:>16}  {'-' if paper is None else paper!s:>14}"


Row = tuple[str, str, Any]      # (statistic, this run, paper or None)


def qa_rows(s: dict[str, Any], paper: CosmosPaperTable1, nota: NotaSection) -> list[Row]:
    """Table 1 rows of a `hits import` run from its `qa_stats`, as `format_stats` prints them."""
    def split(name: str) -> str:
        if s.get(f"{name}_questions") is None:
            return "-"
        return f"{s[f'{name}_questions']} ({s[f'{name}_paragraphs']})"

    def percent(value: Optional[float]) -> str:
        return "-" if value is None else f"{value:.1f}"

    rows: list[Row] = [
        ("questions (paragraphs)", f"{s['questions']} ({s['paragraphs']})",
         f"{paper.questions} ({paper.paragraphs})"),
        ("  train", split("train"), paper.train_questions),
        ("  dev", split("dev"), paper.dev_questions),
        ("  test", split("test"), paper.test_questions),
    ]
    for key, label, ref, ref_max in (
            ("paragraph", "paragraph", paper.tokens_per_paragraph, paper.max_tokens_per_paragraph),
            ("question", "question", paper.tokens_per_question, paper.max_tokens_per_question),
            ("correct", "correct answer", paper.tokens_per_correct_answer,
             paper.max_tokens_per_correct_answer),
            ("incorrect", "incorrect answer", paper.tokens_per_incorrect_answer,
             paper.max_tokens_per_incorrect_answer)):
        ours = "-" if s[key] is None else f"{s[key][0]:.1f}/{s[key][1]}"
        rows.append((f"tokens/{label} (mean/max)", ours, f"{ref}/{ref_max}"))
    rows.append(("unanswerable questions %", percent(s["unanswerable_percent"]), paper.unanswerable_percent))
    rows.append(("valid sets with NOTA distractor %", percent(s["nota_distractor_percent"]),
                 f"~{100 * nota.false_negative_rate:.0f} of answerable"))
    rows.append(("questions with NOTA anywhere %", percent(s["nota_anywhere_percent"]), None))
    return rows


def paragraph_rows(s: dict[str, Any], paper: CosmosPaperTable1) -> list[Row]:
    """Table 1 rows of a stage 1 run from its `paragraph_stats`, as `format_stats` prints them."""
    mean_w, max_w, min_w = s["words"]
    mean_t, max_t, min_t = s["tokens"]
    blogs = "-" if s["blogs"] is None else s["blogs"]
    return [
        ("paragraphs (blogs)", f"{s['paragraphs']} ({blogs})", paper.paragraphs),
        ("words/paragraph (mean/max/min)", f"{mean_w:.1f}/{max_w}/{min_w}", "30-150 words"),
        ("tokens/paragraph (mean/max)", f"{mean_t:.1f}/{max_t}",
         f"{paper.tokens_per_paragraph}/{paper.max_tokens_per_paragraph}"),
    ]


def format_stats(path: Path, paper: CosmosPaperTable1, nota: NotaSection) -> str:
    """A run's figures beside the paper's Table 1: QA figures for a `hits import` run, paragraph
    figures (and the per-stage summary) for a `paragraphs` run."""
    lines = [f"Cosmos QA run {path}", _row("statistic", "this run", "paper"), "-" * 66]
    if (path / "train").is_dir():
        lines += [_row(*row) for row in qa_rows(qa_stats(path, nota.text), paper, nota)]
        return "\n".join(lines) + "\n"
    s = paragraph_stats(path)
    lines += [_row(*row) for row in paragraph_rows(s, paper)]
    lines += ["", "words per paragraph:"]
    total = max(s["paragraphs"], 1)
    for label, n in s["histogram"]:
        lines.append(f"  {label:>8} {n:>6}  {'#' * round(40 * n / total)}")
    summary = path / "summary.json"
    if summary.exists():
        lines += ["", format_summary(read_summary(str(summary)), STAGE_UNITS["cosmos"])]
    return "\n".join(lines) + "\n"
