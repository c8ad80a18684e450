"""`csdata stats` for ProtoQA runs and the reports the commands print: cluster statistics
(cf. the paper's Figure 2), BLANC agreement and the coverage-rule readings.
"""
from __future__ import annotations

import statistics
from collections import Counter
from pathlib import Path

from transforms.core.io.tables import read_table
from transforms.core.reporting.stats import OPEN_END, bar_lines, histogram
from transforms.protoqa.cluster_prep import read_prep
from transforms.protoqa.release import read_records


def cluster_counts(path: Path, command: str) -> tuple[str, list[list[int]]]:
    """(what, per question the list of cluster counts) of a run."""
    if command == "questions":
        rows = read_table(path, "questions", ["answers"]).to_pylist()
        return "scraped questions (one string per cluster)", [[a["count"] for a in r["answers"]] for r in rows]
    if command == "cluster-prep":
        per: dict[str, Counter] = {}
        for row in read_prep(str(path)):
            per.setdefault(row["question_id"], Counter())[row["proposed_cluster"]] += row["count"]
        return "proposed clusters (suggestions)", [list(c.values()) for c in per.values()]
    names = {"release": ["dev.jsonl", "test.jsonl", "unsplit.jsonl"], "adjudicate": ["adjudicated.jsonl"]}
    files = [str(path / n) for n in names.get(command, []) if (path / n).exists()]
    records = read_records(files)
    return f"{command}: {', '.join(Path(f).name for f in files)}", [
        [c["count"] for c in r["answers"]["clusters"].values()] for r in records]


CLUSTER_BINS = [(i, i) for i in range(1, 13)] + [(13, 15), (16, 20), (21, OPEN_END)]
COVERAGE_BINS = [(0, 59), (60, 69), (70, 79), (80, 84), (85, 89), (90, 94), (95, 99), (100, OPEN_END)]


def cluster_figures(per_question: list[list[int]], top_k: int = 8) -> dict:
    """The figures `stats_from_counts` prints (and the HTML report shows): `rows` of (label,
    value, note) cells, the per-question `clusters` and cluster `sizes`, and the
    `clusters_histogram` and `coverage_histogram` (label, count) rows; `questions` is 0 when no
    question has a cluster."""
    per_question = [c for c in per_question if c]
    if not per_question:
        return {"questions": 0, "rows": [], "clusters": [], "sizes": [],
                "clusters_histogram": [], "coverage_histogram": []}
    clusters = [len(c) for c in per_question]
    sizes = [n for c in per_question for n in c]
    coverage = [100.0 * sum(sorted(c, reverse=True)[:top_k]) / sum(c) if sum(c) else 0.0
                for c in per_question]
    rows = [("questions", f"{len(per_question)}", ""),
            ("clusters / question", f"{statistics.mean(clusters):.2f}",
             f"median {statistics.median(clusters):g}, min {min(clusters)}, max {max(clusters)}"),
            ("answers / cluster", f"{statistics.mean(sizes):.2f}", f"median {statistics.median(sizes):g}"),
            ("answers / question", f"{statistics.mean(sum(c) for c in per_question):.2f}", ""),
            (f"top-{top_k} coverage (%)", f"{statistics.mean(coverage):.2f}",
             f"> 85: {sum(v > 85 for v in coverage)} of {len(coverage)}")]
    return {"questions": len(per_question), "rows": rows, "clusters": clusters, "sizes": sizes,
            "clusters_histogram": histogram(clusters, CLUSTER_BINS),
            "coverage_histogram": histogram([int(v) for v in coverage], COVERAGE_BINS)}


def stats_from_counts(what: str, per_question: list[list[int]], top_k: int = 8) -> str:
    """Clusters per question, answers per cluster, top-k coverage and their histograms."""
    figures = cluster_figures(per_question, top_k)
    if not figures["questions"]:
        return f"ProtoQA {what}: no questions"
    lines = [f"ProtoQA {what}"]
    lines += [f"{label:<28}{value:>10}" + (f"   ({note})" if note else "") for label, value, note in figures["rows"]]
    lines.append("")
    lines += bar_lines(figures["clusters_histogram"], "clusters per question (cf. the paper's Figure 2)")
    lines.append("")
    lines += bar_lines(figures["coverage_histogram"], f"top-{top_k} coverage per question (% of its answers)")
    return "\n".join(lines)


def format_agreement(result: dict) -> str:
    """The BLANC table of `sheets import` (per question, then macro and micro)."""
    lines = [f"BLANC between {result['annotators'][0]} and {result['annotators'][1]} "
             f"(mentions: {result['mentions']}; x100)",
             f"{'question':<16}{'BLANC':>8}{'R':>8}{'P':>8}{'clusters':>10}"]
    for qid, entry in result["per_question"].items():
        lines.append(f"{qid:<16}{entry['blanc']:>8.2f}{entry['recall']:>8.2f}{entry['precision']:>8.2f}"
                     f"{entry['clusters_a']:>5}/{entry['clusters_b']:<4}")
    lines.append(f"overall: macro {result['macro_blanc']:.2f}, micro {result['micro_blanc']:.2f} "
                 f"over {result['questions']} questions (paper: {result.get('paper_blanc')})")
    if "disagreements" in result:
        lines.append(f"{result['disagreements']} answers to adjudicate (disagreements.csv)")
    return "\n".join(lines)


def format_coverage(report: dict) -> str:
    """What each reading of the coverage rule keeps and drops (`coverage_report`)."""
    lines = [f"top-{report['top_k']} coverage rule: keep when coverage > {report['min_coverage']:g} "
             f"(spec reading: {report['spec_reading']})"]
    n = len(report["questions"])
    for name, text in report["readings"].items():
        dropped = report["dropped"][name]
        mark = "  <- spec" if name == report["spec_reading"] else ""
        lines.append(f"  {name:<11} keeps {report['kept'][name]['count']:>4} / {n}  "
                     f"({text}){mark}")
        if dropped:
            lines.append(f"              drops: {', '.join(dropped)}")
    return "\n".join(lines)
