"""`csdata diff RUN --release FILE` for Cosmos QA: a run's paragraphs against a published Cosmos QA
CSV/JSONL file (plain Python, no Beam).

The published contexts (each once) and the run's paragraphs are compared as distributions of
words per paragraph (the bins of `csdata stats`) and of tokens (mean, min, max), and by how many
published contexts appear among the run's paragraphs after whitespace is normalised: the
measure that matters when the run read the same blogs the published contexts came from.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Union

from transforms.core.io.tables import read_table
from transforms.cosmos.report import reference_rows
from transforms.cosmos.stats import paragraph_stats_of


def _normal(text: str) -> str:
    return " ".join(text.split())


def diff(run_dir: Union[str, Path], release: Union[str, Path]) -> dict[str, Any]:
    """The account of a run against a published file (see the module doc)."""
    published_rows = reference_rows(release, None, "--release")     # contexts only: no NOTA text
    contexts = list({_normal(r["context"]): r["context"] for rows in published_rows.values() for r in rows}.values())
    paragraphs = read_table(run_dir, "paragraphs", ["text"]).column("text").to_pylist()
    ours = {_normal(t) for t in paragraphs}
    found = [c for c in contexts if _normal(c) in ours]
    run_stats = paragraph_stats_of([{"text": t} for t in paragraphs])
    pub_stats = paragraph_stats_of([{"text": t} for t in contexts])
    labels = list(dict.fromkeys([label for label, _ in run_stats["histogram"]]
                                + [label for label, _ in pub_stats["histogram"]]))
    run_bins, pub_bins = dict(run_stats["histogram"]), dict(pub_stats["histogram"])
    return {"dataset": "cosmos", "run": str(run_dir), "release": str(release),
            "paragraphs": {"run": len(paragraphs), "published_contexts": len(contexts),
                           "published_found_in_run": len(found)},
            "words": {"run": _figures(run_stats["words"]), "published": _figures(pub_stats["words"])},
            "tokens": {"run": _figures(run_stats["tokens"]), "published": _figures(pub_stats["tokens"])},
            "words_histogram": [[label, run_bins.get(label, 0), pub_bins.get(label, 0)] for label in labels]}


def _figures(described: tuple) -> dict[str, float]:
    mean, largest, smallest = described
    return {"mean": round(mean, 2), "min": smallest, "max": largest}


def _describe(figures: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v:.1f}" if isinstance(v, float) else f"{k} {v}" for k, v in figures.items())


def format_diff(report: dict[str, Any]) -> str:
    """The account as a table for the terminal."""
    p = report["paragraphs"]
    lines = [f"Cosmos QA: {report['run']} against {report['release']}",
             f"published contexts found among the run's paragraphs (whitespace normalised): "
             f"{p['published_found_in_run']} of {p['published_contexts']} (run: {p['run']} paragraphs)",
             f"words per paragraph: run {_describe(report['words']['run'])}; "
             f"published {_describe(report['words']['published'])}",
             f"tokens per paragraph: run {_describe(report['tokens']['run'])}; "
             f"published {_describe(report['tokens']['published'])}", "",
             f"{'words':<12}{'run':>8}{'published':>11}"]
    lines += [f"{label:<12}{ours:>8}{theirs:>11}" for label, ours, theirs in report["words_histogram"]]
    return "\n".join(lines)
