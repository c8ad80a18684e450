"""Bar charts and histograms for `csdata report`, rendered by matplotlib (Agg) as inline SVG.

Each chart is a standalone `<svg>` element with a `<title>` and `role="img"`, so the report page
needs no image files, no network and no script. Output is deterministic (no date in the
metadata, a fixed hash salt per chart), and every id inside a chart starts with the chart's
`slug`, which must be unique on its page, so that the charts of one page never share an id.
"""
from __future__ import annotations

import html
import io
import re
from dataclasses import dataclass
from typing import Optional, Sequence

# Report colours; the paper's overlays are drawn in the second one, a published release file's
# distribution (`csdata report --reference`) in the third.
RUN_COLOUR = "#3b6ea5"
PAPER_COLOUR = "#c0392b"
REFERENCE_COLOUR = "#1e8449"
SHARE_LABEL = "% of values"


def shares(counts: Sequence[int]) -> list[float]:
    """Each count as a percentage of their total (zeros when the total is 0): a run and a
    published release differ in size by orders of magnitude, so their overlays compare shares."""
    total = sum(counts)
    return [100.0 * n / total if total else 0.0 for n in counts]


@dataclass(frozen=True)
class Shade:
    """An overlay band from bar `first` to bar `last` (indices, inclusive), labelled `label`."""

    first: int
    last: int
    label: str


@dataclass(frozen=True)
class Line:
    """An overlay vertical line at x = `at` (a data value), labelled `label`; `paper` lines
    (the paper's figures) are drawn in the paper's colour."""

    at: float
    label: str
    paper: bool = False


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")   # no display; must precede the pyplot import
    import matplotlib.pyplot as plt

    return plt


def _to_svg(fig, slug: str, title: str) -> str:
    """`fig` as an `<svg>` element (no XML prolog) carrying `title` for screen readers."""
    import matplotlib

    plt = _pyplot()
    buffer = io.StringIO()
    with matplotlib.rc_context({"svg.hashsalt": slug, "svg.fonttype": "none"}):
        fig.savefig(buffer, format="svg", metadata={"Date": None}, bbox_inches="tight")
    plt.close(fig)
    svg = buffer.getvalue()
    svg = svg[svg.index("<svg"):]
    # matplotlib numbers its ids per figure (figure_1, axes_1, ...): prefix them, and every
    # reference to them, so that the charts of one page never share an id.
    svg = re.sub(r'\bid="([^"]+)"', rf'id="{slug}-\1"', svg)
    svg = re.sub(r'(href=")#([^"]+)"', rf'\1#{slug}-\2"', svg)
    svg = re.sub(r"url\(#([^)]+)\)", rf"url(#{slug}-\1)", svg)
    label = html.escape(title, quote=True)
    svg = re.sub(r"<svg\b", f'<svg role="img" aria-label="{label}" id="plot-{slug}"', svg, count=1)
    head_end = svg.index(">") + 1
    return f"{svg[:head_end]}<title>{label}</title>{svg[head_end:]}"


def _legend(ax) -> None:
    """The legend in one row between the title and the chart, never over the bars or the
    axis labels."""
    handles, _ = ax.get_legend_handles_labels()
    ax.legend(frameon=False, fontsize="small", loc="lower center", bbox_to_anchor=(0.5, 1.0),
              ncol=max(len(handles), 1), handlelength=1.5, columnspacing=1.0)
    ax.set_title(ax.get_title(), fontsize="medium", pad=22)


def _figure(rows: int = 1):
    plt = _pyplot()
    from matplotlib.ticker import MaxNLocator

    fig, ax = plt.subplots(figsize=(6.4, 3.2 if rows == 1 else 2 + 0.28 * rows))
    ax.spines[["top", "right"]].set_visible(False)
    for axis in (ax.xaxis, ax.yaxis):   # counts are whole numbers
        axis.set_major_locator(MaxNLocator(integer=True))
    return fig, ax


def bars_svg(rows: Sequence[tuple[str, int]], slug: str, title: str, xlabel: str, ylabel: str = "count",
             shade: Optional[Shade] = None, horizontal: bool = False,
             reference: Optional[Sequence[tuple[str, int]]] = None, reference_label: str = "published") -> str:
    """A bar per (label, count) row, in order; `shade` marks a band of bars (a paper range);
    `horizontal` lays the bars out top to bottom (long category names). `reference` rows (the
    same bins, of a published release file) are drawn as outlined bars over the run's, both as
    shares of their totals."""
    labels = [label for label, _ in rows]
    counts: Sequence[float] = [n for _, n in rows]
    fig, ax = _figure(len(rows) if horizontal else 1)
    positions = list(range(len(rows)))
    if reference is not None:
        if [label for label, _ in reference] != labels:
            raise ValueError(f"{slug}: the reference rows must have the run's bins")
        counts = shares([int(n) for n in counts])
        ylabel = SHARE_LABEL
        overlay = dict(fill=False, edgecolor=REFERENCE_COLOUR, linewidth=1.5, label=reference_label)
        ref = shares([n for _, n in reference])
    if horizontal:
        ax.barh(positions, counts, color=RUN_COLOUR, label="this run")
        if reference is not None:
            ax.barh(positions, ref, **overlay)
        ax.set_yticks(positions, labels)
        ax.invert_yaxis()
        ax.set_xlabel(ylabel)
        ax.set_ylabel(xlabel)
    else:
        ax.bar(positions, counts, color=RUN_COLOUR, label="this run")
        if reference is not None:
            ax.bar(positions, ref, **overlay)
        ax.set_xticks(positions, labels, rotation=45 if len(rows) > 8 else 0,
                      ha="right" if len(rows) > 8 else "center")
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize="medium")
    if reference is not None:   # shares are not whole numbers
        from matplotlib.ticker import AutoLocator

        (ax.xaxis if horizontal else ax.yaxis).set_major_locator(AutoLocator())
    if shade is not None:
        span = ax.axhspan if horizontal else ax.axvspan
        span(shade.first - 0.5, shade.last + 0.5, color=PAPER_COLOUR, alpha=0.12, label=shade.label)
    if shade is not None or reference is not None:
        _legend(ax)
    return _to_svg(fig, slug, title)


def histogram_svg(values: Sequence[float], slug: str, title: str, xlabel: str, bins: int = 20,
                  lines: Sequence[Line] = (), ylabel: str = "count",
                  reference: Optional[Sequence[float]] = None, reference_label: str = "published") -> str:
    """A histogram of `values` in `bins` equal bins, with optional labelled vertical lines (the
    run's mean, the paper's mean). `reference` values (of a published release file) are drawn
    as an outline over the same bins (spanning both), both as shares of their totals."""
    fig, ax = _figure()
    if reference is None:
        ax.hist(list(values), bins=bins, color=RUN_COLOUR, label="this run")
    else:
        from matplotlib.ticker import AutoLocator

        both = [*values, *reference] or [0.0]
        low, high = min(both), max(both)
        width = (high - low) / bins if high > low else 1.0
        edges = [low + i * width for i in range(bins + 1)]
        for data, style in ((list(values), dict(color=RUN_COLOUR, label="this run")),
                            (list(reference), dict(histtype="step", color=REFERENCE_COLOUR, linewidth=1.5,
                                                   label=reference_label))):
            weights = [100.0 / len(data)] * len(data) if data else None
            ax.hist(data, bins=edges, weights=weights, **style)
        ax.yaxis.set_major_locator(AutoLocator())
        ylabel = SHARE_LABEL
    styles = ("--", ":", "-.")
    for index, line in enumerate(lines):
        ax.axvline(line.at, color=PAPER_COLOUR if line.paper else "#333333",
                   linestyle=styles[index % len(styles)], linewidth=1.5, label=line.label)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize="medium")
    _legend(ax)
    return _to_svg(fig, slug, title)


def funnel_svg(stages: Sequence[tuple[str, int, int, int]], slug: str, title: str) -> str:
    """Kept and rejected shares of each (stage, in, kept, rejected) row's input, as stacked
    horizontal bars in pipeline order (the first stage on top), each labelled kept / in: stages
    count different units (articles, sentences), so shares compare where raw counts do not."""
    fig, ax = _figure(len(stages))
    positions = list(range(len(stages)))
    kept = [100.0 * k / n if n else 0.0 for _, n, k, _ in stages]
    rejected = [100.0 * r / n if n else 0.0 for _, n, _, r in stages]
    ax.barh(positions, kept, color=RUN_COLOUR, label="kept")
    ax.barh(positions, rejected, left=kept, color="#e0a458", label="rejected")
    for y, (_, n, k, _) in zip(positions, stages):
        ax.text(101, y, f"{k:,} / {n:,}", va="center", fontsize="small")
    ax.set_yticks(positions, [name for name, _, _, _ in stages])
    ax.invert_yaxis()
    ax.set_xlim(0, 100)
    ax.set_xlabel("% of the stage's input (labels: kept / in)")
    ax.set_title(title, fontsize="medium")
    _legend(ax)
    return _to_svg(fig, slug, title)
