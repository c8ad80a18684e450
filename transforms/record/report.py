"""The `csdata report` page of a ReCoRD run (`record generate`, `record filter` or `record hits
import`), optionally beside a published ReCoRD file (`--reference`).

Table 1 is `csdata stats`' own cells (`table_rows` of `record_stats`); the length distributions
count tokens with the same functions over the same passages (those with at least one query),
so their means are Table 1's. A `hits import` run has no `queries/` table: its validated
queries are in `train/`, `dev/` and `test/`, and Table 1 has a column per split (every cell
applies: the validated tables keep the query text and passage id, `passages/` the text and
entities); the paper's column is its training split. The paper (Zhang et al. 2018) gives the
lengths only as the means of its Table 1: the charts mark them, and say that the paper has no
figure of them.

A reference (the official ReCoRD JSON, `{"data": [{passage, qas}]}`, or JSONL with one such
passage a line, as SuperGLUE ships it) is converted to the run's `passages`/`queries` tables in
a temporary folder and read back by the very same functions, so its column and overlays are
computed exactly like the run's.
"""
from __future__ import annotations

import tempfile
from collections import Counter
from pathlib import Path
from typing import Any, Optional, Sequence, Union

from data_specs.models import RecordPaperTable1
from transforms.core.accounting import STAGE_UNITS
from transforms.core.io.tables import read_summary, read_table, write_rows
from transforms.core.reporting.plots import Line, bars_svg, histogram_svg
from transforms.core.reporting.report import (
    NO_PAPER_FIGURE,
    PUBLISHED,
    Plot,
    Report,
    Section,
    Table,
    run_funnel,
    sample_table,
)
from transforms.record.diff import published_examples
from transforms.record.stats import passage_tokens, query_tokens, record_stats, table_rows

SAMPLE_TEXT_LIMIT = 200
SPLITS = ("train", "dev", "test")        # the validated tables of a `hits import` run


def query_tables(run_dir: Union[str, Path]) -> tuple[str, ...]:
    """The run's query tables: `queries` (generate, filter), else the validated splits of a
    `hits import` run; () when it has neither."""
    run = Path(run_dir)
    if (run / "queries").is_dir():
        return ("queries",)
    return tuple(split for split in SPLITS if (run / split).is_dir())


def _queries(run_dir: Union[str, Path], columns: Sequence[str]) -> list[dict[str, Any]]:
    return [row for table in query_tables(run_dir) for row in read_table(run_dir, table, columns).to_pylist()]


def lengths(run_dir: Union[str, Path]) -> dict[str, list[int]]:
    """Per passage with a query: tokens and entities; per query: tokens (`record_stats`' rules)."""
    queries = _queries(run_dir, ["passage_id", "query"])
    with_queries = {q["passage_id"] for q in queries}
    passages = [p for p in read_table(run_dir, "passages", ["passage_id", "text", "entities"]).to_pylist()
                if p["passage_id"] in with_queries]
    return {"passage_tokens": [len(passage_tokens(p["text"])) for p in passages],
            "passage_entities": [len(p["entities"] or []) for p in passages],
            "query_tokens": [len(query_tokens(q["query"])) for q in queries]}


def entity_labels(run_dir: Union[str, Path]) -> dict[str, list[tuple[str, int]]]:
    """NER label counts, most frequent first: of the passage entity mentions (passages with a
    query) and of the mentions each query's placeholder replaced."""
    queries = _queries(run_dir, ["passage_id", "label"])
    with_queries = {q["passage_id"] for q in queries}
    mentions: Counter = Counter()
    for p in read_table(run_dir, "passages", ["passage_id", "entities"]).to_pylist():
        if p["passage_id"] in with_queries:
            mentions.update(e["label"] or "-" for e in p["entities"] or [])
    placeholders = Counter(q["label"] or "-" for q in queries)
    order = lambda c: sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))  # noqa: E731
    return {"passage mentions": order(mentions), "query placeholders": order(placeholders)}


# ---------------------------------------------------------------- a published file (--reference)

def reference_tables(path: Union[str, Path]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(passages, queries) rows, in the run's schemas, of a published ReCoRD file: the official
    JSON or JSONL of passages (read by `csdata diff`'s reader). Another shape is a `UserError`."""
    passages, queries = [], []
    for example in published_examples(path, "--reference"):
        pid = example["id"]
        passages.append({"passage_id": pid, "text": example["text"],
                         "entities": [{"start": e["start"], "end": e["end"], "text": None, "label": None,
                                       "chain": None} for e in example["entities"]]})
        for k, qa in enumerate(example["qas"]):
            queries.append({"query_id": qa.get("id") or f"{pid}-{k}", "passage_id": pid, "query": qa["query"],
                            "label": None, "answers": [{k: a[k] for k in ("start", "end", "text")}
                                                       for a in qa["answers"]]})
    return passages, queries


def reference_figures(path: Union[str, Path]) -> tuple[dict[str, Union[float, int]], dict[str, list[int]]]:
    """(`record_stats`, `lengths`) of a published file, computed by the run's own functions over
    its rows written as a run's tables."""
    passages, queries = reference_tables(path)
    with tempfile.TemporaryDirectory(prefix="csdata-reference-") as folder:
        write_rows(passages, "record", "passages", Path(folder) / "passages")
        write_rows(queries, "record", "queries", Path(folder) / "queries")
        return record_stats(folder), lengths(folder)


# ---------------------------------------------------------------- the page

def _mean(values: list[int]) -> float:
    return sum(values) / len(values) if values else 0.0


def _distribution(values: list[int], slug: str, title: str, xlabel: str, ours: float, paper: float,
                  reference: Optional[list[int]] = None) -> Plot:
    lines = [Line(ours, f"this run: mean {ours:.1f}"), Line(paper, f"paper: mean {paper:.1f}", paper=True)]
    caption = (f"{title}: {len(values):,} values, min {min(values, default=0)}, max {max(values, default=0)}, "
               f"mean {ours:.1f} (paper's Table 1: {paper:.1f}); the paper gives only the mean, "
               f"{NO_PAPER_FIGURE} for the distribution.")
    if reference is not None:
        caption += (f" Outline: the {PUBLISHED} file, {len(reference):,} values, mean {_mean(reference):.1f}, "
                    f"max {max(reference, default=0)}; bars and outline are shares of their totals.")
    return Plot(histogram_svg(values, slug, title, xlabel, lines=lines, reference=reference), caption)


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


def _table1(run_dir: Path, tables: tuple[str, ...], paper: RecordPaperTable1,
            published: Optional[dict[str, Union[float, int]]], reference: Optional[str]) -> Table:
    """Table 1: a column per query table (one for generate/filter runs, one per split of a
    `hits import` run), the published file's column, then the paper's."""
    columns = [table_rows(record_stats(str(run_dir), table), paper) for table in tables]
    first = columns[0]
    extra = [table_rows(published, paper)] if published is not None else []
    header = ("statistic", *(("this run",) if tables == ("queries",) else tables),
              *((PUBLISHED,) if extra else ()), "paper")
    rows = tuple((label, *(c[i][1] for c in columns), *(e[i][1] for e in extra), paper_cell)
                 for i, (label, _, paper_cell) in enumerate(first))
    note = "The same cells as `csdata stats`. Only passages with at least one query count."
    if tables != ("queries",):
        note += (" A `hits import` run: one column per split of its validated queries (every cell "
                 "applies); the paper's column is its training split.")
    if reference:
        note += f" {PUBLISHED}: {reference}, computed by the same code."
    return Table("ReCoRD statistics beside the paper's Table 1 (training split)", header, rows, note=note)


def record_report(run_dir: Union[str, Path], paper: RecordPaperTable1, sample_rows: int = 5,
                  reference: Optional[str] = None) -> Report:
    """The report of the ReCoRD run in `run_dir`; `sample_rows` queries are shown (0: no text of
    the inputs at all, reject details included); `reference`, a published ReCoRD file, adds its
    Table 1 column and its distributions over the charts."""
    run_dir = Path(run_dir)
    tables = query_tables(run_dir)
    if not tables:
        raise FileNotFoundError(f"no queries/ (nor train/, dev/, test/) table in {run_dir}")
    published, ref_values = reference_figures(reference) if reference else (None, None)
    table1 = _table1(run_dir, tables, paper, published, reference)
    values = lengths(run_dir)
    ours = {key: _mean(v) for key, v in values.items()}
    what = "" if tables == ("queries",) else " (the validated queries of every split)"
    ref = ref_values or {}
    distributions = Section(
        "Length distributions", "lengths",
        intro="Tokens of filters.text.tokenize; passages without their @highlight marker lines; "
              f"@placeholder is one token{what}.",
        plots=(
            _distribution(values["passage_tokens"], "passage-tokens", "Tokens per passage", "tokens",
                          ours["passage_tokens"], paper.tokens_per_passage, ref.get("passage_tokens")),
            _distribution(values["query_tokens"], "query-tokens", "Tokens per query", "tokens",
                          ours["query_tokens"], paper.tokens_per_query, ref.get("query_tokens")),
            _distribution(values["passage_entities"], "passage-entities", "Entities per passage",
                          "entity mentions", ours["passage_entities"], paper.entities_per_passage,
                          ref.get("passage_entities")),
        ))
    labels = entity_labels(run_dir)
    label_plots = tuple(
        Plot(bars_svg(rows, f"labels-{i}", f"Entity labels: {name}", "NER label", horizontal=True),
             f"Entity labels of the {name} ({sum(n for _, n in rows):,} mentions); {NO_PAPER_FIGURE}"
             + ("; the published files carry no labels." if reference else "."))
        for i, (name, rows) in enumerate(labels.items()) if rows)
    label_tables = tuple(Table(f"Entity labels: {name}", ("label", "mentions"),
                               tuple((label, f"{n:,}") for label, n in rows)) for name, rows in labels.items())
    tail = [Section("Entity labels", "labels", tables=label_tables, plots=label_plots)]
    tail.append(_sample_section(run_dir, sample_rows))
    kind = "cloze queries over CNN/Daily Mail passages"
    if tables != ("queries",):
        kind += ", validated by the crowd (a `record hits import` run)"
    return Report(
        title=f"ReCoRD run report: {run_dir.name}", run_dir=str(run_dir),
        description=f"ReCoRD (Zhang et al. 2018): {kind}."
                    + (f" Beside the {PUBLISHED} file {reference}." if reference else ""),
        table1=table1, sections=(distributions, *_filter_section(run_dir)),
        funnel=run_funnel(run_dir, STAGE_UNITS["record"], details=sample_rows > 0), tail=tuple(tail))


def _sample_section(run_dir: Path, sample_rows: int) -> Section:
    if sample_rows <= 0:
        return Section("Sample rows", "sample", intro="Omitted (--sample-rows 0): no text of the inputs is shown.")
    queries = _queries(run_dir, ["query_id", "query", "label", "answers"])
    queries.sort(key=lambda q: q["query_id"])
    rows = [(q["query_id"], q["query"], " | ".join(sorted({a["text"] for a in q["answers"] or []})), q["label"])
            for q in queries[:sample_rows]]
    table = sample_table(f"The first {len(rows)} of {len(queries):,} queries by id",
                         ("query id", "query", "answers", "label"), rows, SAMPLE_TEXT_LIMIT)
    return Section("Sample rows", "sample", tables=(table,))


def build(run_dir: Union[str, Path], sample_rows: int = 5, reference: Optional[str] = None) -> Report:
    """`record_report` with the shipped spec's Table 1 (as `csdata stats` prints it)."""
    from data_specs import RecordSpec, load_dataset_spec

    return record_report(run_dir, load_dataset_spec(RecordSpec, "record").paper_table1, sample_rows, reference)
