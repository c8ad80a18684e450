"""Cosmos QA run statistics beside the paper's Table 1 (`csdata stats`; Huang et al. 2019).

A stage 1 run (`csdata cosmos paragraphs`) is described by its paragraphs (count, words and
tokens, a words histogram) and its per-stage summary; a `csdata cosmos hits import` run by its
questions per split, token lengths, unanswerable and NOTA shares (paper §2.4, Table 1).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from data_specs.models import CosmosPaperTable1, NotaSection
from filters.text import count_tokens
from transforms.core.accounting import STAGE_UNITS, format_summary
from transforms.core.io import read_summary, read_table
from transforms.core.stats import describe
from transforms.core.stats import histogram as core_histogram


def histogram(values: Sequence[int], low: int = 30, high: int = 150, width: int = 10) -> list[tuple[str, int]]:
    """Counts per `width`-word bin from `low` to `high` (the last bin includes `high`), then the
    values outside the range."""
    edges = list(range(low, high, width))
    bins = [(a, min(a + width, high) - 1) for a in edges[:-1]] + [(edges[-1], high)]
    return core_histogram(values, bins, outside=True)


def paragraph_stats(path: Path) -> dict[str, Any]:
    rows = read_table(path, "paragraphs", ["blog_id", "text"]).to_pylist()
    words = [len(r["text"].split()) for r in rows]
    tokens = [count_tokens(r["text"]) for r in rows]
    return {"paragraphs": len(rows), "blogs": len({r["blog_id"] for r in rows}),
            "words": describe(words), "tokens": describe(tokens), "histogram": histogram(words)}


def qa_stats(path: Path, nota: str) -> dict[str, Any]:
    rows = {s: read_table(path, s).to_pylist() for s in ("train", "dev", "test")}
    every = [r for split in rows.values() for r in split]
    paragraphs = {r["paragraph_id"]: r["context"] for r in every}
    correct = [count_tokens(r[f"answer{r['label']}"]) for r in every]
    incorrect = [count_tokens(r[f"answer{i}"]) for r in every for i in range(4) if i != r["label"]]
    sets = {r["set_id"]: r["nota_distractor"] for r in every}
    return {
        "questions": len(every), "paragraphs": len(paragraphs),
        **{f"{s}_questions": len(v) for s, v in rows.items()},
        **{f"{s}_paragraphs": len({r["paragraph_id"] for r in v}) for s, v in rows.items()},
        "paragraph": describe([count_tokens(t) for t in paragraphs.values()]),
        "question": describe([count_tokens(r["question"]) for r in every]),
        "correct": describe(correct), "incorrect": describe(incorrect),
        "unanswerable_percent": 100.0 * sum(r["unanswerable"] for r in every) / len(every) if every else 0.0,
        "nota_distractor_percent": 100.0 * sum(sets.values()) / len(sets) if sets else 0.0,
        "nota_anywhere_percent": 100.0 * sum(any(r[f"answer{i}"] == nota for i in range(4)) for r in every)
        / len(every) if every else 0.0,
    }


def _row(label: str, ours: str, paper: Any) -> str:
    return f"{label:<34}{ours:>16}  {'-' if paper is None else paper!s:>14}"


Row = tuple[str, str, Any]      # (statistic, this run, paper or None)


def qa_rows(s: dict[str, Any], paper: CosmosPaperTable1, nota: NotaSection) -> list[Row]:
    """Table 1 rows of a `hits import` run from its `qa_stats`, as `format_stats` prints them."""
    rows: list[Row] = [
        ("questions (paragraphs)", f"{s['questions']} ({s['paragraphs']})",
         f"{paper.questions} ({paper.paragraphs})"),
        ("  train", f"{s['train_questions']} ({s['train_paragraphs']})", paper.train_questions),
        ("  dev", f"{s['dev_questions']} ({s['dev_paragraphs']})", paper.dev_questions),
        ("  test", f"{s['test_questions']} ({s['test_paragraphs']})", paper.test_questions),
    ]
    for key, label, ref, ref_max in (
            ("paragraph", "paragraph", paper.tokens_per_paragraph, paper.max_tokens_per_paragraph),
            ("question", "question", paper.tokens_per_question, paper.max_tokens_per_question),
            ("correct", "correct answer", paper.tokens_per_correct_answer,
             paper.max_tokens_per_correct_answer),
            ("incorrect", "incorrect answer", paper.tokens_per_incorrect_answer,
             paper.max_tokens_per_incorrect_answer)):
        mean, top, _ = s[key]
        rows.append((f"tokens/{label} (mean/max)", f"{mean:.1f}/{top}", f"{ref}/{ref_max}"))
    rows.append(("unanswerable questions %", f"{s['unanswerable_percent']:.1f}", paper.unanswerable_percent))
    rows.append(("valid sets with NOTA distractor %", f"{s['nota_distractor_percent']:.1f}",
                 f"~{100 * nota.false_negative_rate:.0f} of answerable"))
    rows.append(("questions with NOTA anywhere %", f"{s['nota_anywhere_percent']:.1f}", None))
    return rows


def paragraph_rows(s: dict[str, Any], paper: CosmosPaperTable1) -> list[Row]:
    """Table 1 rows of a stage 1 run from its `paragraph_stats`, as `format_stats` prints them."""
    mean_w, max_w, min_w = s["words"]
    mean_t, max_t, min_t = s["tokens"]
    return [
        ("paragraphs (blogs)", f"{s['paragraphs']} ({s['blogs']})", paper.paragraphs),
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
