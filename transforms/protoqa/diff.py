"""`csdata diff RUN --release FILE` for ProtoQA: a release (or adjudication) run against published
protoqa-data JSONL (plain Python, no Beam).

Questions are matched by `metadata.id`: kept (in both), dropped (published only) and extra (the
run's only). Per kept question: cluster and clustered-answer counts on both sides and the BLANC
(transforms/protoqa/blanc.py) of the run's clusters against the published ones, each cluster
member string being a mention; macro and micro BLANC over the kept questions.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Union

from transforms.core.errors import UserError
from transforms.core.reporting.report import json_lines, not_a_release, read_reference
from transforms.protoqa.blanc import blanc, clusters_to_mapping, corpus_blanc
from transforms.protoqa.release import read_records
from transforms.protoqa.report import RECORD_FILES
from transforms.protoqa.steps import run_step as run_command

OPTION = "--release"
SHAPE = 'protoqa-data JSONL: one {"metadata": {"id"}, "answers": {"clusters": {id: {"count", "answers"}}}} a line'


def _clusters(record: Any) -> list[tuple[int, list[str]]]:
    """(count, member strings) of a protoqa-data record's clusters; ValueError when not that shape."""
    clusters = record.get("answers", {}).get("clusters") if isinstance(record, dict) and isinstance(
        record.get("answers"), dict) else None
    if not isinstance(clusters, dict) or not all(
            isinstance(c, dict) and type(c.get("count")) is int and isinstance(c.get("answers"), list)
            and all(isinstance(a, str) for a in c["answers"]) for c in clusters.values()):
        raise ValueError("not a protoqa-data record with clusters")
    return [(c["count"], c["answers"]) for c in clusters.values()]


def _question_id(record: Any) -> str:
    meta = record.get("metadata") if isinstance(record, dict) else None
    if not isinstance(meta, dict) or not isinstance(meta.get("id"), (str, int)) or isinstance(meta["id"], bool):
        raise ValueError("no metadata.id")
    return str(meta["id"])


def published_records(path: Union[str, Path]) -> dict[str, list[tuple[int, list[str]]]]:
    """question id -> clusters of a published protoqa-data JSONL file; another shape is a UserError."""
    text = read_reference(path, OPTION)
    try:
        records = json_lines(path, text, OPTION)
        found = {_question_id(r): _clusters(r) for r in records}
        for clusters in found.values():
            clusters_to_mapping(members for _, members in clusters)     # a string in two clusters
    except (UserError, ValueError):
        raise not_a_release(path, "ProtoQA", SHAPE, OPTION) from None
    if not found:
        raise not_a_release(path, "ProtoQA", SHAPE, OPTION)
    return found


def run_records(run_dir: Union[str, Path]) -> dict[str, list[tuple[int, list[str]]]]:
    """question id -> clusters of a `protoqa release` or `sheets adjudicate` run."""
    command = run_command(run_dir)
    if command not in ("release", "adjudicate"):
        raise UserError(f"{run_dir}: a `protoqa {command}` run has no adjudicated clusters; give a "
                        "`protoqa release` or `protoqa sheets adjudicate` output")
    paths = [str(Path(run_dir) / name) for name in RECORD_FILES[command] if (Path(run_dir) / name).is_file()]
    return {_question_id(record): _clusters(record) for record in read_records(paths)}


def diff(run_dir: Union[str, Path], release: Union[str, Path]) -> dict[str, Any]:
    """The account of a run against a published file (see the module doc)."""
    published = published_records(release)
    ours = run_records(run_dir)
    kept = [q for q in published if q in ours]
    per_question = {}
    pairs = []
    for qid in kept:
        key = clusters_to_mapping(members for _, members in published[qid])
        response = clusters_to_mapping(members for _, members in ours[qid])
        pairs.append((key, response))
        per_question[qid] = {
            "clusters": [len(ours[qid]), len(published[qid])],
            "clustered_answers": [sum(c for c, _ in ours[qid]), sum(c for c, _ in published[qid])],
            "blanc": round(100 * blanc(key, response).blanc, 2)}
    corpus = corpus_blanc(pairs)
    return {"dataset": "protoqa", "run": str(run_dir), "release": str(release),
            "questions": {"published": len(published), "run": len(ours), "kept": len(kept),
                          "dropped": [q for q in published if q not in ours],
                          "extra": [q for q in ours if q not in published]},
            "blanc": {"macro": round(100 * corpus["macro"], 2), "micro": round(100 * corpus["micro"], 2)},
            "per_question": per_question}


def format_diff(report: dict[str, Any]) -> str:
    """The account as a table for the terminal."""
    q = report["questions"]
    lines = [f"ProtoQA: {report['run']} against {report['release']}",
             f"questions: {q['kept']} of {q['published']} published in the run; dropped "
             f"{len(q['dropped'])}: {', '.join(q['dropped']) or '-'}; extra {len(q['extra'])}: "
             f"{', '.join(q['extra']) or '-'}",
             f"BLANC of the run's clusters against the published ones (x100): macro "
             f"{report['blanc']['macro']:.2f}, micro {report['blanc']['micro']:.2f}", "",
             f"{'question':<16}{'clusters run/pub':>18}{'answers run/pub':>18}{'BLANC':>8}"]
    for qid, row in report["per_question"].items():
        lines.append(f"{qid:<16}{'/'.join(map(str, row['clusters'])):>18}"
                     f"{'/'.join(map(str, row['clustered_answers'])):>18}{row['blanc']:>8.2f}")
    return "\n".join(lines)
