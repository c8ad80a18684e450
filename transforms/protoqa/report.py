"""The `csdata report` page of a ProtoQA run (questions, cluster-prep, sheets import,
adjudicate or release), optionally beside a published protoqa-data file (`--reference`).

The figures are `csdata stats`' own (`cluster_counts`, then `cluster_figures`: the same cells and
histograms). The paper's Figure 2 has no published values (no table, source data or numbers in
its text), so the charts say "paper figure not available" rather than draw a guessed curve. The substitute
is `--reference FILE`: the published data themselves (e.g. protoqa-data's
`dev.crowdsourced.jsonl`) go through the same `cluster_figures` and are drawn over the run's
bars. The paper's question counts and expert BLANC come from the spec's `paper` section.
"""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any, Optional, Union

from data_specs.models import ProtoqaPaper
from transforms.core.accounting import STAGE_UNITS
from transforms.core.errors import UserError
from transforms.core.reporting.plots import bars_svg
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
from transforms.core.reporting.stats import histogram
from transforms.protoqa.cluster_prep import read_prep
from transforms.protoqa.release import read_records
from transforms.protoqa.stats import cluster_counts, cluster_figures
from transforms.protoqa.steps import run_step

TOP_K = 8
SIZE_BINS = [(1, 1), (2, 2), (3, 3), (4, 5), (6, 10), (11, 20), (21, 30), (31, 50), (51, 100), (101, 10 ** 6)]
RECORD_FILES = {"questions": ["questions.jsonl"], "adjudicate": ["adjudicated.jsonl"],
                "release": ["dev.jsonl", "test.jsonl", "unsplit.jsonl"]}
SAMPLE_TEXT_LIMIT = 240


def _paper_questions(command: str, paper: ProtoqaPaper) -> str:
    if command == "questions":
        return f"{paper.scraped_dev_questions} scraped dev, {paper.train_questions} train"
    if command in ("release", "adjudicate"):
        total = paper.crowdsourced_dev_questions + paper.crowdsourced_test_questions
        return f"{total} ({paper.crowdsourced_dev_questions} dev, {paper.crowdsourced_test_questions} test)"
    return "-"


REFERENCE_SHAPE = 'protoqa-data JSONL: one {"question": ..., "answers": {"clusters": {id: {"count": n}}}} a line'


def reference_counts(path: Union[str, Path]) -> list[list[int]]:
    """Per question the cluster counts of a published protoqa-data JSONL file (as
    `cluster_counts` reads a release); a file of another shape is a `UserError`."""
    text = read_reference(path)
    try:
        records = json_lines(path, text)
    except UserError:
        raise not_a_release(path, "ProtoQA", REFERENCE_SHAPE) from None
    counts = []
    for record in records:
        clusters = record.get("answers", {}).get("clusters") if isinstance(record, dict) and isinstance(
            record.get("answers"), dict) else None
        if not (isinstance(clusters, dict) and "question" in record
                and all(isinstance(c, dict) and isinstance(c.get("count"), int) for c in clusters.values())):
            raise not_a_release(path, "ProtoQA", REFERENCE_SHAPE)
        counts.append([c["count"] for c in clusters.values()])
    if not counts:
        raise not_a_release(path, "ProtoQA", REFERENCE_SHAPE)
    return counts


def _cluster_sections(figures: dict[str, Any], what: str, published: Optional[dict[str, Any]] = None) -> Section:
    sizes = histogram(figures["sizes"], SIZE_BINS)
    ref_sizes = histogram(published["sizes"], SIZE_BINS) if published else None
    outline = (f" Outlined bars: the {PUBLISHED} file ({published['questions']:,} questions), both as shares."
               if published else "")
    plots = (
        Plot(bars_svg(figures["clusters_histogram"], "clusters", "Clusters per question", "clusters", "questions",
                      reference=published["clusters_histogram"] if published else None),
             f"Clusters per question ({what}), the bins `csdata stats` prints (cf. the paper's Figure 2: "
             f"{NO_PAPER_FIGURE} in this repository)." + outline),
        Plot(bars_svg(sizes, "cluster-sizes", "Answers per cluster", "answers in the cluster", "clusters",
                      reference=ref_sizes),
             f"Answers per cluster ({len(figures['sizes']):,} clusters); {NO_PAPER_FIGURE}." + outline),
        Plot(bars_svg(figures["coverage_histogram"], "coverage", f"Top-{TOP_K} coverage per question",
                      "% of the question's answers in its top clusters", "questions",
                      reference=published["coverage_histogram"] if published else None),
             f"Share of each question's answers in its {TOP_K} largest clusters (the release keeps "
             f"questions over 85%); {NO_PAPER_FIGURE}." + outline),
    )
    return Section("Length distributions", "lengths", intro=f"Clusters of the {what}.", plots=plots)


def _coverage_section(run_dir: Path) -> tuple[Section, ...]:
    path = run_dir / "coverage.json"
    if not path.is_file():
        return ()
    report = json.loads(path.read_text(encoding="utf-8"))
    n = len(report["questions"])
    rows = tuple((name + (" (spec)" if name == report["spec_reading"] else ""), text,
                  f"{report['kept'][name]['count']} / {n}", ", ".join(report["dropped"][name]) or "-")
                 for name, text in report["readings"].items())
    table = Table(f"Top-{report['top_k']} coverage rule (keep when > {report['min_coverage']:g}%)",
                  ("reading", "coverage", "kept", "dropped"), rows)
    return (Section("Coverage rule", "coverage", tables=(table,)),)


def _agreement_report(run_dir: Path, paper: ProtoqaPaper) -> tuple[Table, tuple[Section, ...]]:
    result = json.loads((run_dir / "agreement.json").read_text(encoding="utf-8"))
    table1 = Table(f"BLANC between {result['annotators'][0]} and {result['annotators'][1]} (x100)",
                   ("statistic", "this run", "paper"),
                   (("questions", str(result["questions"]), "-"),
                    ("macro BLANC", f"{result['macro_blanc']:.2f}", f"{paper.blanc}"),
                    ("micro BLANC", f"{result['micro_blanc']:.2f}", "-")),
                   note=f"Mentions: {result['mentions']}; the same figures as `csdata stats`.")
    per = Table("BLANC per question", ("question", "BLANC", "R", "P", "clusters A/B"),
                tuple((qid, f"{e['blanc']:.2f}", f"{e['recall']:.2f}", f"{e['precision']:.2f}",
                       f"{e['clusters_a']}/{e['clusters_b']}") for qid, e in result["per_question"].items()))
    chart = Plot(bars_svg([(qid, round(e["blanc"])) for qid, e in result["per_question"].items()], "blanc",
                          "BLANC per question", "question", "BLANC (x100, rounded)"),
                 f"BLANC per question; the paper's experts agreed at {paper.blanc} overall.")
    return table1, (Section("Agreement", "agreement", tables=(per,), plots=(chart,)),)


def _sample(run_dir: Path, command: str, sample_rows: int) -> Section:
    if sample_rows <= 0:
        return Section("Sample rows", "sample", intro="Omitted (--sample-rows 0): no text of the inputs is shown.")
    rows: list[tuple[str, str, str]] = []
    if command == "cluster-prep":
        per: dict[str, dict[str, Any]] = {}
        for row in read_prep(str(run_dir)):
            entry = per.setdefault(row["question_id"], {"question": row["question"], "clusters": Counter()})
            entry["clusters"][row["proposed_cluster"]] += row["count"]
        for qid in sorted(per)[:sample_rows]:
            clusters = per[qid]["clusters"].most_common(5)
            rows.append((qid, per[qid]["question"], "; ".join(f"{c} ({n})" for c, n in clusters)))
    elif command in RECORD_FILES:
        files = [str(run_dir / n) for n in RECORD_FILES[command] if (run_dir / n).exists()]
        records = sorted(read_records(files), key=lambda r: r["metadata"]["id"])
        for r in records[:sample_rows]:
            clusters = sorted(r["answers"]["clusters"].values(), key=lambda c: -c["count"])[:5]
            rows.append((r["metadata"]["id"], r["question"]["normalized"],
                         "; ".join(f"{' / '.join(c['answers'][:3])} ({c['count']})" for c in clusters)))
    else:
        return Section("Sample rows", "sample", intro="This run holds no question rows.")
    table = sample_table(f"The first {len(rows)} questions by id, with their largest clusters",
                         ("question id", "question", "clusters (count)"), rows, SAMPLE_TEXT_LIMIT)
    return Section("Sample rows", "sample", tables=(table,))


def _table1(figures: dict[str, Any], paper_cells: dict[str, str], published: Optional[dict[str, Any]],
            reference: Optional[str]) -> Table:
    note = "The same cells as `csdata stats`; the paper's question counts from the spec."
    if published is None:
        return Table("ProtoQA statistics beside the paper's figures", ("statistic", "this run", "detail", "paper"),
                     tuple((label, value, note or "-", paper_cells.get(label, "-"))
                           for label, value, note in figures["rows"]), note=note)
    theirs = {label: (value, detail) for label, value, detail in published["rows"]}
    return Table("ProtoQA statistics beside the paper's figures",
                 ("statistic", "this run", "detail", PUBLISHED, f"{PUBLISHED} detail", "paper"),
                 tuple((label, value, detail or "-", theirs.get(label, ("-", ""))[0],
                        theirs.get(label, ("-", ""))[1] or "-", paper_cells.get(label, "-"))
                       for label, value, detail in figures["rows"]),
                 note=note + f" {PUBLISHED}: {reference}, by the same code (`cluster_figures`).")


def protoqa_report(run_dir: Union[str, Path], paper: ProtoqaPaper, sample_rows: int = 5,
                   reference: Optional[str] = None) -> Report:
    """The report of the ProtoQA run in `run_dir`; `sample_rows` questions are shown (0: no
    text of the inputs at all); `reference`, a published protoqa-data JSONL file, adds its
    Table 1 columns and its distributions over the charts (runs with clusters only)."""
    run_dir = Path(run_dir)
    command = run_step(run_dir) or ""
    sections: tuple[Section, ...]
    if command == "sheets-import":
        if reference:
            raise UserError(f"--reference {reference}: a `protoqa sheets import` run has agreement figures, "
                            "no clusters to compare")
        table1, sections = _agreement_report(run_dir, paper)
        what = "annotator agreement (a `protoqa sheets import` run)"
    else:
        what, per_question = cluster_counts(run_dir, command)
        figures = cluster_figures(per_question, TOP_K)
        published = cluster_figures(reference_counts(reference), TOP_K) if reference else None
        paper_cells = {"questions": _paper_questions(command, paper)}
        table1 = _table1(figures, paper_cells, published, reference)
        sections = (_cluster_sections(figures, what, published),) if figures["questions"] else ()
        sections += _coverage_section(run_dir)
    return Report(
        title=f"ProtoQA run report: {run_dir.name}", run_dir=str(run_dir),
        description=f"ProtoQA (Boratko et al. 2020): {what}."
                    + (f" Beside the {PUBLISHED} file {reference}." if reference else ""),
        table1=table1, sections=sections,
        funnel=run_funnel(run_dir, STAGE_UNITS["protoqa"], details=sample_rows > 0),
        tail=(_sample(run_dir, command, sample_rows),))


def build(run_dir: Union[str, Path], sample_rows: int = 5, reference: Optional[str] = None) -> Report:
    """`protoqa_report` with the shipped spec's paper figures."""
    from data_specs import ProtoqaSpec, load_dataset_spec

    return protoqa_report(run_dir, load_dataset_spec(ProtoqaSpec, "protoqa").paper, sample_rows, reference)
