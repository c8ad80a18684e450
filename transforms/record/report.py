"""The `csdata report` page of a ReCoRD run (`record generate` or `record filter`).

Table 1 is `csdata stats`' own cells (`table_rows` of `record_stats`); the length distributions
count tokens with the same functions over the same passages (those with at least one query),
so their means are Table 1's. The paper (Zhang et al. 2018) gives these lengths only as the
means of its Table 1: the charts mark them, and say that the paper has no figure of them.
"""
from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any, Union

from data_specs.models import RecordPaperTable1
from transforms.core.accounting import STAGE_UNITS
from transforms.core.io import read_summary, read_table
from transforms.core.plots import Line, bars_svg, histogram_svg
from transforms.core.report import NO_PAPER_FIGURE, Plot, Report, Section, Table, run_funnel, sample_table
from transforms.record.stats import passage_tokens, query_tokens, record_stats, table_rows

SAMPLE_TEXT_LIMIT = 200


def lengths(run_dir: Union[str, Path]) -> dict[str, list[int]]:
    """Per passage with a query: tokens and entities; per query: tokens (`record_stats`' rules)."""
    queries = read_table(run_dir, "queries", ["passage_id", "query"]).to_pylist()
    with_queries = {q["passage_id"] for q in queries}
    passages = [p for p in read_table(run_dir, "passages", ["passage_id", "text", "entities"]).to_pylist()
                if p["passage_id"] in with_queries]
    return {"passage_tokens": [len(passage_tokens(p["text"])) for p in passages],
            "passage_entities": [len(p["entities"] or []) for p in passages],
            "query_tokens": [len(query_tokens(q["query"])) for q in queries]}


def entity_labels(run_dir: Union[str, Path]) -> dict[str, list[tuple[str, int]]]:
    """NER label counts, most frequent first: of the passage entity mentions (passages with a
    query) and of the mentions each query's placeholder replaced."""
    queries = read_table(run_dir, "queries", ["passage_id", "label"]).to_pylist()
    with_queries = {q["passage_id"] for q in queries}
    mentions: Counter = Counter()
    for p in read_table(run_dir, "passages", ["passage_id", "entities"]).to_pylist():
        if p["passage_id"] in with_queries:
            mentions.update(e["label"] or "-" for e in p["entities"] or [])
    placeholders = Counter(q["label"] or "-" for q in queries)
    order = lambda c: sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))  # noqa: E731
    return {"passage mentions": order(mentions), "query placeholders": order(placeholders)}


def _mean(values: list[int]) -> float:
    return sum(values) / len(values) if values else 0.0


def _distribution(values: list[int], slug: str, title: str, xlabel: str, ours: float,
                  paper: float) -> Plot:
    lines = [Line(ours, f"this run: mean {ours:.1f}"), Line(paper, f"paper: mean {paper:.1f}", paper=True)]
    caption = (f"{title}: {len(values):,} values, min {min(values, default=0)}, max {max(values, default=0)}, "
               f"mean {ours:.1f} (paper's Table 1: {paper:.1f}); the paper gives only the mean, "
               f"{NO_PAPER_FIGURE} for the distribution.")
    return Plot(histogram_svg(values, slug, title, xlabel, lines=lines), caption)


def _filter_section(run_dir: Path) -> tuple[Section, ...]:
    """The machine filter's folds of a `record filter` run (its summary.json), else nothing."""
    summary_path = run_dir / "summary.json"
    if not summary_path.is_file():
        return ()
    summary: dict[str, Any] = read_summary(str(summary_path))
    if "folds" not in summary:
        return ()
    rows = tuple((str(f["fold"]), f"{f['triples']:,}", f"{f['answered']:,}",
                  f"{100 * f['answered_rate']:.1f}%", f"{100 * f['random_baseline']:.1f}%")
                 for f in summary["folds"])
    table = Table(f"Machine filter (paper §3.3), reader {summary.get('reader', '?')}",
                  ("fold", "triples", "answered (dropped)", "rate", "random baseline"), rows,
                  note="The paper's SAN reader answered 68% of the triples; answered triples are dropped.")
    return (Section("Machine filter", "machine-filter", tables=(table,)),)


def record_report(run_dir: Union[str, Path], paper: RecordPaperTable1, sample_rows: int = 5) -> Report:
    """The report of the ReCoRD run in `run_dir`; `sample_rows` queries are shown (0: no text of
    the inputs at all, reject details included)."""
    run_dir = Path(run_dir)
    stats = record_stats(str(run_dir))
    table1 = Table("ReCoRD statistics beside the paper's Table 1 (training split)",
                   ("statistic", "this run", "paper"), tuple(table_rows(stats, paper)),
                   note="The same cells as `csdata stats`. Only passages with at least one query count.")
    values = lengths(run_dir)
    distributions = Section(
        "Length distributions", "lengths",
        intro="Tokens of filters.text.tokenize; passages without their @highlight marker lines; "
              "@placeholder is one token.",
        plots=(
            _distribution(values["passage_tokens"], "passage-tokens", "Tokens per passage", "tokens",
                          float(stats["tokens_per_passage"]), paper.tokens_per_passage),
            _distribution(values["query_tokens"], "query-tokens", "Tokens per query", "tokens",
                          float(stats["tokens_per_query"]), paper.tokens_per_query),
            _distribution(values["passage_entities"], "passage-entities", "Entities per passage",
                          "entity mentions", float(stats["entities_per_passage"]), paper.entities_per_passage),
        ))
    labels = entity_labels(run_dir)
    label_plots = tuple(
        Plot(bars_svg(rows, f"labels-{i}", f"Entity labels: {name}", "NER label", horizontal=True),
             f"Entity labels of the {name} ({sum(n for _, n in rows):,} mentions); {NO_PAPER_FIGURE}.")
        for i, (name, rows) in enumerate(labels.items()) if rows)
    label_tables = tuple(Table(f"Entity labels: {name}", ("label", "mentions"),
                               tuple((label, f"{n:,}") for label, n in rows)) for name, rows in labels.items())
    tail = [Section("Entity labels", "labels", tables=label_tables, plots=label_plots)]
    tail.append(_sample_section(run_dir, sample_rows))
    return Report(
        title=f"ReCoRD run report: {run_dir.name}", run_dir=str(run_dir),
        description="ReCoRD (Zhang et al. 2018): cloze queries over CNN/Daily Mail passages.",
        table1=table1, sections=(distributions, *_filter_section(run_dir)),
        funnel=run_funnel(run_dir, STAGE_UNITS["record"], details=sample_rows > 0), tail=tuple(tail))


def _sample_section(run_dir: Path, sample_rows: int) -> Section:
    if sample_rows <= 0:
        return Section("Sample rows", "sample", intro="Omitted (--sample-rows 0): no text of the inputs is shown.")
    queries = read_table(run_dir, "queries", ["query_id", "query", "label", "answers"]).to_pylist()
    queries.sort(key=lambda q: q["query_id"])
    rows = [(q["query_id"], q["query"], " | ".join(sorted({a["text"] for a in q["answers"] or []})), q["label"])
            for q in queries[:sample_rows]]
    table = sample_table(f"The first {len(rows)} of {len(queries):,} queries by id",
                         ("query id", "query", "answers", "label"), rows, SAMPLE_TEXT_LIMIT)
    return Section("Sample rows", "sample", tables=(table,))


def build(run_dir: Union[str, Path], sample_rows: int = 5) -> Report:
    """`record_report` with the shipped spec's Table 1 (as `csdata stats` prints it)."""
    from data_specs import RecordSpec, load_dataset_spec

    return record_report(run_dir, load_dataset_spec(RecordSpec, "record").paper_table1, sample_rows)
