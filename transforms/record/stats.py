"""ReCoRD Table 1 statistics of a `csdata record generate` run, printed beside the paper's.

Tokens per passage and per query are whitespace-separated tokens (`passage_tokens`,
`query_tokens`): on the published examples these match Table 1 (passages 164.5 against 169.5,
queries 21.8 against 21.3), where words and punctuation marks (`filters.text.tokenize`) give
186.3 and 24.5. Vocabularies are sets of lowercased `tokenize` tokens (`passage_words`,
`query_words`), so that "Bob," and "Bob" are one entry. Passage tokens are taken from the passage
text with the `@highlight` marker lines removed (body and highlights count, the markers do not).
In queries, `@placeholder` counts as one token (and one vocabulary entry). Entities per passage
count every mention span, as the release's `entities` list does. Only passages with at least one
query count, as in the paper's table.
"""
from __future__ import annotations

from pathlib import Path
from typing import Mapping, Union

from data_specs.models import RecordPaperTable1
from filters.text import tokenize
from transforms.core.io.tables import read_table

HIGHLIGHT_MARKER = "@highlight"
PLACEHOLDER = "@placeholder"

# (key, label) in the paper's order; keys match `paper_table1` in data_specs/record.yaml.
ROWS: tuple[tuple[str, str], ...] = (
    ("queries", "queries"),
    ("unique_passages", "unique passages"),
    ("passage_vocab", "passage vocab"),
    ("query_vocab", "query vocab"),
    ("tokens_per_passage", "tokens/passage"),
    ("entities_per_passage", "entities/passage"),
    ("tokens_per_query", "tokens/query"),
)


def _without_markers(text: str) -> str:
    return "\n".join(line for line in text.split("\n") if line.strip() != HIGHLIGHT_MARKER)


def passage_tokens(text: str) -> list[str]:
    """Whitespace tokens of a passage text, without the `@highlight` marker lines."""
    return _without_markers(text).split()


def query_tokens(query: str) -> list[str]:
    """Whitespace tokens of a query (`@placeholder` is one of them)."""
    return query.split()


def passage_words(text: str) -> list[str]:
    """Word and punctuation tokens of a passage text (the vocabulary's), markers removed."""
    return tokenize(_without_markers(text))


def query_words(query: str) -> list[str]:
    """Word and punctuation tokens of a query, with each `@placeholder` kept as one token."""
    tokens: list[str] = []
    for i, piece in enumerate(query.split(PLACEHOLDER)):
        if i:
            tokens.append(PLACEHOLDER)
        tokens.extend(tokenize(piece))
    return tokens


def _mean(total: int, count: int) -> float:
    return total / count if count else 0.0


def record_stats(output_dir: Union[str, Path], table: str = "queries") -> dict[str, Union[float, int]]:
    """Table 1 statistics of the run in `output_dir` (keys as in `paper_table1`), over the queries
    of `table` (a `hits import` run: its `train`, `dev` or `test` table)."""
    queries = read_table(output_dir, table, ["passage_id", "query"]).to_pylist()
    with_queries = {q["passage_id"] for q in queries}
    query_vocab: set[str] = set()
    query_token_total = 0
    for q in queries:
        query_token_total += len(query_tokens(q["query"]))
        query_vocab.update(t.lower() for t in query_words(q["query"]))

    passage_vocab: set[str] = set()
    passages = token_total = entity_total = 0
    for p in read_table(output_dir, "passages", ["passage_id", "text", "entities"]).to_pylist():
        if p["passage_id"] not in with_queries:
            continue
        passages += 1
        token_total += len(passage_tokens(p["text"]))
        passage_vocab.update(t.lower() for t in passage_words(p["text"]))
        entity_total += len(p["entities"] or [])

    return {
        "queries": len(queries),
        "unique_passages": passages,
        "passage_vocab": len(passage_vocab),
        "query_vocab": len(query_vocab),
        "tokens_per_passage": _mean(token_total, passages),
        "entities_per_passage": _mean(entity_total, passages),
        "tokens_per_query": _mean(query_token_total, len(queries)),
    }


def _cell(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.1f}"
    return str(value)


def table_rows(stats: Mapping[str, Union[float, int]], paper: RecordPaperTable1) -> list[tuple[str, str, str]]:
    """(statistic, this run, paper) cells in the paper's order, as `format_table` prints them
    (the HTML report shows the same cells)."""
    return [(label, _cell(stats.get(key)), _cell(getattr(paper, key))) for key, label in ROWS]


def format_table(stats: Mapping[str, Union[float, int]], paper: RecordPaperTable1) -> str:
    """A fixed-width table: statistic | this run | paper (missing values shown as `-`)."""
    header = ("statistic", "this run", "paper")
    rows = table_rows(stats, paper)
    width = [max(len(r[i]) for r in [header, *rows]) for i in range(3)]
    lines = [f"{header[0]:<{width[0]}}  {header[1]:>{width[1]}}  {header[2]:>{width[2]}}"]
    lines.append("-" * len(lines[0]))
    lines += [f"{a:<{width[0]}}  {b:>{width[1]}}  {c:>{width[2]}}" for a, b, c in rows]
    return "\n".join(lines) + "\n"
