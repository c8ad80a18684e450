"""`csdata report`: one self-contained HTML page describing a finished run (no Beam).

The page has Table 1 beside the paper's, the length distributions as inline SVG charts (with
the paper's figures where the paper gives them), the funnel of every stage with its reject
reasons (each opens to a few example rejects), and dataset-specific sections (entity labels, a
sample of rows). No script, no external style sheet, font or image: the file opens offline.
Each dataset assembles its `Report` in `transforms/<dataset>/report.py`; this module knows no
dataset.
"""
from __future__ import annotations

import html
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence, Union

from transforms.core.accounting import REJECTS
from transforms.core.errors import UserError
from transforms.core.io.untrusted import parse_json
from transforms.core.reporting.plots import funnel_svg

INDEX = "index.html"
EXAMPLES_PER_REASON = 3
NO_PAPER_FIGURE = "paper figure not available"
PUBLISHED = "published"          # Table 1's column and the charts' overlay of `--reference FILE`
SUMMARY_FILES = ("summary.json", "stages.json")   # stage tallies; a filter run keeps them apart


@dataclass(frozen=True)
class Table:
    """A table with a caption, column headers and rows of already formatted cells."""

    caption: str
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    note: str = ""


@dataclass(frozen=True)
class Plot:
    """An inline SVG chart and its caption (what it shows, and what the paper gives for it)."""

    svg: str
    caption: str


@dataclass(frozen=True)
class Section:
    """A headed part of the page: an intro line, then tables, then plots."""

    heading: str
    slug: str
    intro: str = ""
    tables: tuple[Table, ...] = ()
    plots: tuple[Plot, ...] = ()


@dataclass(frozen=True)
class FunnelStage:
    """One stage of a run: in, kept, rejected by reason, and a few example rejects per reason
    as (record id, detail) pairs."""

    stage: str
    unit: str
    n_in: int
    kept: int
    rejected: Mapping[str, int]
    balanced: bool
    examples: Mapping[str, tuple[tuple[str, str], ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class Report:
    """Everything the page shows; `sections` come after Table 1, `tail` after the funnel."""

    title: str
    run_dir: str
    description: str
    table1: Table
    sections: tuple[Section, ...] = ()
    funnel: tuple[FunnelStage, ...] = ()
    tail: tuple[Section, ...] = ()


def read_stage_summary(run_dir: Union[str, Path]) -> dict[str, Any]:
    """The `stages` of a run's summary (`summary.json`, else `stages.json`); {} when it has none."""
    for name in SUMMARY_FILES:
        path = Path(run_dir) / name
        if path.is_file():
            stages = json.loads(path.read_text(encoding="utf-8")).get("stages")
            if stages:
                return stages
    return {}


def read_rejects(run_dir: Union[str, Path]) -> list[dict[str, str]]:
    """Every reject row of a run: its `rejects/` Parquet table, else the `rejects` list that
    plain-Python steps keep in `summary.json`."""
    folder = Path(run_dir) / REJECTS
    if folder.is_dir() and any(folder.glob("*.parquet")):
        from transforms.core.io.tables import read_table

        return read_table(run_dir, REJECTS, ["stage", "reason", "record_id", "detail"]).to_pylist()
    summary = Path(run_dir) / "summary.json"
    if summary.is_file():
        listed = json.loads(summary.read_text(encoding="utf-8")).get("rejects") or []
        return [{"stage": str(r.get("stage", "")), "reason": str(r.get("reason", "")),
                 "record_id": str(r.get("record_id", r.get("id", ""))), "detail": str(r.get("detail", ""))}
                for r in listed if isinstance(r, dict)]
    return []


def funnel(stages: Mapping[str, Mapping[str, Any]], rejects: Sequence[Mapping[str, str]],
           units: Mapping[str, str], per_reason: int = EXAMPLES_PER_REASON,
           details: bool = True) -> tuple[FunnelStage, ...]:
    """The stages in summary order with up to `per_reason` example rejects per reason, the
    smallest record ids first (deterministic); without `details` the examples keep their ids
    only (no text of the inputs)."""
    by_reason: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for row in rejects:
        by_reason.setdefault((row["stage"], row["reason"]), []).append(
            (row["record_id"] or "", (row["detail"] or "") if details else ""))
    result = []
    for stage, entry in stages.items():
        rejected = dict(entry.get("rejected", {}))
        examples = {reason: tuple(sorted(by_reason.get((stage, reason), []))[:per_reason])
                    for reason in rejected}
        result.append(FunnelStage(stage, units.get(stage, ""), int(entry["in"]), int(entry["kept"]),
                                  rejected, bool(entry.get("balanced", True)), examples))
    return tuple(result)


def run_funnel(run_dir: Union[str, Path], units: Mapping[str, str], details: bool = True) -> tuple[FunnelStage, ...]:
    """`funnel` of the run in `run_dir` (its summary and its rejects)."""
    stages = read_stage_summary(run_dir)
    return funnel(stages, read_rejects(run_dir) if stages else [], units, details=details)


def read_reference(path: Union[str, Path], option: str = "--reference") -> str:
    """The text of a published file given as `option`; an unreadable one is a `UserError`."""
    try:
        return Path(path).read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as error:
        reason = error.strerror if isinstance(error, OSError) and error.strerror else type(error).__name__
        raise UserError(f"{option} {path}: cannot read it ({reason})") from None


def json_lines(path: Union[str, Path], text: str, option: str = "--reference") -> list[Any]:
    """The values of a JSONL text (blank lines skipped); a line that is not JSON is a `UserError`."""
    values = []
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                values.append(parse_json(line))
            except ValueError:
                raise UserError(f"{option} {path}: line {number} is not JSON") from None
    return values


def not_a_release(path: Union[str, Path], dataset: str, expected: str, option: str = "--reference") -> UserError:
    """The error for a published file (given as `option`) of another dataset or shape."""
    return UserError(f"{option} {path}: not a published {dataset} file (expected {expected})")


def truncate(text: str, limit: int = 240) -> str:
    """`text` on one line, cut to `limit` characters with an ellipsis."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in text.lower()).strip("-")


def render_table(table: Table) -> str:
    """An HTML table with a caption and column headers, in a horizontally scrolling box."""
    head = "".join(f'<th scope="col">{_e(h)}</th>' for h in table.header)
    body = "".join("<tr>" + "".join(
        (f'<th scope="row">{_e(cell)}</th>' if i == 0 else f"<td>{_e(cell)}</td>") for i, cell in enumerate(row))
        + "</tr>" for row in table.rows)
    note = f'<p class="note">{_e(table.note)}</p>' if table.note else ""
    return (f'<div class="scroll"><table><caption>{_e(table.caption)}</caption>'
            f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>{note}")


def render_plot(plot: Plot) -> str:
    return f'<figure>{plot.svg}<figcaption>{_e(plot.caption)}</figcaption></figure>'


def render_section(section: Section) -> str:
    intro = f"<p>{_e(section.intro)}</p>" if section.intro else ""
    parts = [render_table(t) for t in section.tables] + [render_plot(p) for p in section.plots]
    return (f'<section id="{_e(section.slug)}" aria-labelledby="{_e(section.slug)}-h">'
            f'<h2 id="{_e(section.slug)}-h">{_e(section.heading)}</h2>{intro}{"".join(parts)}</section>')


def _reason_cell(stage: FunnelStage) -> str:
    if not stage.rejected:
        return "-"
    items = []
    for reason, n in stage.rejected.items():
        examples = stage.examples.get(reason, ())
        anchor = f"reject-{_slug(stage.stage)}-{_slug(reason)}"
        lines = "".join(f"<li><code>{_e(rid or '(no id)')}</code>{(' ' + _e(truncate(detail, 160))) if detail else ''}</li>"
                        for rid, detail in examples)
        more = n - len(examples)
        tail = f'<p class="note">{more:,} more not shown</p>' if more > 0 else ""
        listing = f"<ul>{lines}</ul>" if lines else '<p class="note">no example rows in the run</p>'
        items.append(f'<details id="{anchor}" class="reason"><summary>{_e(reason)}: {n:,}</summary>'
                     f"{listing}{tail}</details>")
    return "".join(items)


def render_funnel(stages: Sequence[FunnelStage]) -> str:
    """The funnel: a chart of kept and rejected per stage, then the table with each reject
    reason opening to its example rejects."""
    if not stages:
        return ('<section id="funnel" aria-labelledby="funnel-h"><h2 id="funnel-h">Stage funnel</h2>'
                "<p>This run records no per-stage summary.</p></section>")
    rows = []
    for s in stages:
        rejected = sum(s.rejected.values())
        share = 100.0 * s.kept / s.n_in if s.n_in else 0.0
        flag = "" if s.balanced else ' <strong class="bad">in ≠ kept + rejected</strong>'
        rows.append(f'<tr><th scope="row">{_e(s.stage)}</th><td>{_e(s.unit or "-")}</td>'
                    f"<td>{s.n_in:,}</td><td>{s.kept:,}</td><td>{rejected:,}{flag}</td>"
                    f'<td><span class="bar" style="width:{share:.0f}%"></span> {share:.0f}%</td>'
                    f"<td>{_reason_cell(s)}</td></tr>")
    head = "".join(f'<th scope="col">{h}</th>' for h in
                   ("stage", "unit", "in", "kept", "rejected", "kept share", "reject reasons (open for examples)"))
    chart = funnel_svg([(s.stage, s.n_in, s.kept, sum(s.rejected.values())) for s in stages], "funnel",
                       "Kept and rejected per stage")
    return ('<section id="funnel" aria-labelledby="funnel-h"><h2 id="funnel-h">Stage funnel</h2>'
            "<p>Every unit a stage reads is kept or rejected with a named reason (in = kept + "
            "rejected); each reason opens to a few example rejects (record id and detail).</p>"
            f"<figure>{chart}<figcaption>Kept and rejected share of each stage's input, in pipeline "
            "order, with kept / in (each stage counts its own unit).</figcaption></figure>"
            f'<div class="scroll"><table class="funnel"><caption>Per-stage accounting</caption>'
            f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div></section>")


STYLE = """
:root { color-scheme: light; }
* { box-sizing: border-box; }
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0 auto;
       max-width: 980px; padding: 1rem; line-height: 1.45; color: #1d1d1f; background: #fff; }
h1 { font-size: 1.5rem; margin-bottom: .25rem; }
h2 { font-size: 1.2rem; margin-top: 2rem; border-bottom: 1px solid #ddd; padding-bottom: .2rem; }
.meta { color: #555; margin-top: 0; overflow-wrap: anywhere; }
.scroll { overflow-x: auto; max-width: 100%; }
table { min-width: 18rem; border-collapse: collapse; margin: .5rem 0 1rem; font-size: .92rem; }
caption { text-align: left; font-weight: 600; padding: .2rem 0; }
th, td { border: 1px solid #ddd; padding: .3rem .5rem; text-align: left; vertical-align: top; }
tbody th, tbody td { overflow-wrap: anywhere; }
tbody th[scope=row] { min-width: 6rem; max-width: 14rem; }
thead th { background: #f3f4f6; }
td { font-variant-numeric: tabular-nums; }
figure { margin: 1rem 0; }
figure svg { width: 100%; max-width: 680px; height: auto; display: block; }
figcaption, .note { color: #555; font-size: .88rem; }
details.reason summary { cursor: pointer; color: #1f4f82; }
details.reason ul { margin: .2rem 0 .4rem 1rem; padding: 0; }
details.reason li { overflow-wrap: anywhere; }
.bar { display: inline-block; height: .7rem; background: #3b6ea5; vertical-align: middle; max-width: 4rem; }
.funnel td:nth-child(6) { white-space: nowrap; min-width: 7rem; }
.bad { color: #b00020; }
code { font-size: .85rem; }
"""


def render_html(report: Report) -> str:
    """The whole page as one HTML string (styles inline; no script or external resource)."""
    table1 = Section("Table 1 beside the paper's", "table1", tables=(report.table1,))
    body = [render_section(table1), *(render_section(s) for s in report.sections),
            render_funnel(report.funnel), *(render_section(s) for s in report.tail)]
    nav = "".join(f'<li><a href="#{_e(slug)}">{_e(name)}</a></li>' for slug, name in
                  [("table1", "Table 1")] + [(s.slug, s.heading) for s in report.sections]
                  + [("funnel", "Stage funnel")] + [(s.slug, s.heading) for s in report.tail])
    return ("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            '<link rel="icon" href="data:,">'
            f"<title>{_e(report.title)}</title><style>{STYLE}</style></head><body>"
            f"<header><h1>{_e(report.title)}</h1><p class=\"meta\">{_e(report.description)}<br>"
            f"run: <code>{_e(report.run_dir)}</code></p>"
            f'<nav aria-label="sections"><ul>{nav}</ul></nav></header>'
            f"<main>{''.join(body)}</main></body></html>\n")


def write_report(report: Report, output: Union[str, Path]) -> Path:
    """Write the page to `output/index.html` (the folder is created) and return its path."""
    folder = Path(output)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / INDEX
    path.write_text(render_html(report), encoding="utf-8")
    return path


def sample_table(caption: str, header: Sequence[str], rows: Sequence[Sequence[object]],
                 limit: Optional[int] = None) -> Table:
    """A table of sample rows, each cell on one line and cut to `limit` characters."""
    return Table(caption, tuple(header),
                 tuple(tuple(truncate(str(c), limit) if limit else str(c) for c in row) for row in rows))
