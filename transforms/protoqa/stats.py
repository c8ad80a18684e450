"""`csdata protoqa ...`: ProtoQA (Boratko et al. 2020) question curation, answer-clustering prep,
the annotator round trip (sheets, BLANC agreement, adjudication) and the release.

    csdata protoqa questions --input scraped.jsonl --output out/protoqa [--omitted omitted.jsonl]
    csdata protoqa cluster-prep --answers crowd.csv --output out/protoqa-prep
    csdata protoqa sheets export --prep out/protoqa-prep --output out/sheets
    csdata protoqa sheets import --sheet out/sheets/sheet_A.csv --sheet out/sheets/sheet_B.csv --output out/agree
    csdata protoqa sheets adjudicate --sheet out/agree/adjudication.csv --output out/adjudicated
    csdata protoqa release --input out/adjudicated/adjudicated.jsonl --output out/protoqa-release
    csdata stats out/protoqa-release

Only `questions` runs on Beam (corpus scale); the rest handle ~100 answers per question for
~150 questions and run in plain Python.
"""
from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Sequence

from transforms.protoqa.cluster_prep import read_prep
from transforms.protoqa.release import read_records


def cluster_counts(path: Path, command: str) -> tuple[str, list[list[int]]]:
    """(what, per question the list of cluster counts) of a run."""
    if command == "questions":
        from transforms.core.io import read_table

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

def _histogram(values: Sequence[int], bins: Sequence[tuple[int, int]], label: str, width: int = 40) -> list[str]:
    counts = [sum(lo <= v <= hi for v in values) for lo, hi in bins]
    top = max(counts) if counts and max(counts) else 1
    lines = [label]
    for (lo, hi), n in zip(bins, counts):
        name = f"{lo}" if lo == hi else (f"{lo}+" if hi >= 10 ** 6 else f"{lo}-{hi}")
        lines.append(f"  {name:>7} | {'#' * round(width * n / top):<{width}} {n}")
    return lines

def stats_from_counts(what: str, per_question: list[list[int]], top_k: int = 8) -> str:
    import statistics

    per_question = [c for c in per_question if c]
    if not per_question:
        return f"ProtoQA {what}: no questions"
    clusters = [len(c) for c in per_question]
    sizes = [n for c in per_question for n in c]
    coverage = [100.0 * sum(sorted(c, reverse=True)[:top_k]) / sum(c) if sum(c) else 0.0
                for c in per_question]
    lines = [f"ProtoQA {what}",
             f"{'questions':<28}{len(per_question):>10}",
             f"{'clusters / question':<28}{statistics.mean(clusters):>10.2f}   "
             f"(median {statistics.median(clusters):g}, min {min(clusters)}, max {max(clusters)})",
             f"{'answers / cluster':<28}{statistics.mean(sizes):>10.2f}   "
             f"(median {statistics.median(sizes):g})",
             f"{'answers / question':<28}{statistics.mean(sum(c) for c in per_question):>10.2f}",
             f"{f'top-{top_k} coverage (%)':<28}{statistics.mean(coverage):>10.2f}   "
             f"(> 85: {sum(v > 85 for v in coverage)} of {len(coverage)})", ""]
    lines += _histogram(clusters, [(i, i) for i in range(1, 13)] + [(13, 15), (16, 20), (21, 10 ** 6)],
                        "clusters per question (cf. the paper's Figure 2)")
    lines.append("")
    lines += _histogram([int(v) for v in coverage],
                        [(0, 59), (60, 69), (70, 79), (80, 84), (85, 89), (90, 94), (95, 99), (100, 10 ** 6)],
                        f"top-{top_k} coverage per question (% of its answers)")
    return "\n".join(lines)
