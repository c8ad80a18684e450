"""How often `csdata protoqa assign` puts an answer where ProtoQA's annotators did (issue #12).

A development measure built the way the unseen human assessments were (new answers to the dev
questions, each judged to belong to one cluster or to none), from the released dev clusters:

* the questions are split by sha1(seed, "assign-split", id) into a development half (the only
  one the coefficients were fitted and the threshold chosen on) and a held-out half;
* each member string of a cluster falls in one of `--folds` folds by sha1(seed, "fold", id,
  string); for fold f the clusters are rebuilt from the strings of the other folds and the
  fold's strings are assigned to them: the truth is the string's cluster, or none when every
  string of its cluster is in fold f (`member` / `new` cases);
* the raw answers the annotators left out of every cluster are none (`invalid`), and so are
  `--others` member strings of other questions per question, chosen by hash among those that
  are not answers of the question (`other`), each against the clusters of its hash fold.

It prints the agreement (proposal == truth) on both halves and per case group for WordNet only,
the previous default (the issue #5 weights), and the spec's logit with and without MiniLM; then
the calibration table (agreement per confidence bucket) and, on dev, the agreement per threshold.
`--fit` refits the coefficients on the development half and prints them as the spec's YAML.
`--cv K` measures the refit out of sample without touching the held-out half: the development
questions fall in K folds (by their split-hash order), each fold is predicted by coefficients
fitted on the other folds, and the pooled agreement is printed (the figure to choose signals
and options by, since the dev agreement of `--fit` is in-sample).

    .venv/bin/python tests/fidelity_protoqa.py [TARGETS] [--fit] [--cv K] [--no-embeddings]
        [--json FILE]
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from data_specs import ProtoqaSpec, load_spec  # noqa: E402
from data_specs.models import AssignSection  # noqa: E402
from transforms.protoqa import assign as ps  # noqa: E402
from transforms.protoqa import metric as pm  # noqa: E402

DEFAULT_TARGETS = Path(__file__).resolve().parents[2] / "shared" / "samples" / "protoqa" / \
    "dev.crowdsourced.jsonl"
GROUPS = ("member", "new", "invalid", "other")
BUCKETS = ((0.0, 0.5), (0.5, 0.7), (0.7, 0.9), (0.9, 1.0))
THRESHOLDS = (0.0, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5)
# the shipped `assign` of issue #5: weighted sum of these signals against 0.3
PREVIOUS_WEIGHTS = {"wordnet": 0.1, "embedding": 0.6, "lemma": 0.2, "spelling": 0.1}
PREVIOUS_THRESHOLD = 0.3

Predict = Callable[[ps.Case], Tuple[Optional[str], float]]


def stable_hash(seed: int, *parts: str) -> int:
    """An integer from sha1 of the seed and the parts (stable across runs and machines)."""
    text = ":".join([str(seed), *parts])
    return int(hashlib.sha1(text.encode("utf-8")).hexdigest()[:15], 16)


def split_questions(qids: Iterable[str], seed: int) -> Dict[str, str]:
    """`dev` for the first half of the ids in hash order, `held_out` for the rest."""
    order = sorted(qids, key=lambda q: stable_hash(seed, "assign-split", q))
    return {q: ("dev" if i < len(order) // 2 else "held_out") for i, q in enumerate(order)}


def read_raw(path: Path) -> Dict[str, List[str]]:
    """{question id: raw answer strings} of a protoqa-data file (file order)."""
    raw: Dict[str, List[str]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            raw[row["metadata"]["id"]] = list(row.get("answers", {}).get("raw", {}))
    return raw


def build_cases(targets: Dict[str, pm.Question], raw: Dict[str, List[str]], seed: int,
                folds: int, others: int) -> List[Tuple[pm.Question, str, Optional[str], str,
                                                         List[pm.Cluster]]]:
    """(question, preprocessed answer, true cluster or None, group, candidate clusters)."""
    def fold(qid: str, text: str) -> int:
        return stable_hash(seed, "fold", qid, text) % folds

    every_member = [(q, a) for q, question in targets.items()
                    for c in question.clusters for a in c.answers]
    cases = []
    for qid, question in targets.items():
        built = [[pm.Cluster(c.cluster_id, rest, c.count) for c in question.clusters
                  for rest in [tuple(a for a in c.answers if fold(qid, a) != f)] if rest]
                 for f in range(folds)]
        members = {a for c in question.clusters for a in c.answers}
        for cluster in question.clusters:
            for member in cluster.answers:
                clusters = built[fold(qid, member)]
                kept = any(c.cluster_id == cluster.cluster_id for c in clusters)
                cases.append((question, pm.preprocess_prediction(member),
                              cluster.cluster_id if kept else None, "member" if kept else "new",
                              clusters))
        own = members | {pm.preprocess_prediction(a) for a in raw.get(qid, [])}
        for answer in raw.get(qid, []):
            if answer not in members:
                cases.append((question, pm.preprocess_prediction(answer), None, "invalid",
                              built[fold(qid, answer)]))
        chosen: List[str] = []
        for _, text in sorted((stable_hash(seed, "other", qid, q2, a), a)
                              for q2, a in every_member if q2 != qid):
            if len(chosen) == others:
                break
            if text not in own and pm.preprocess_prediction(text) not in own and text not in chosen:
                chosen.append(text)
        for text in chosen:
            cases.append((question, pm.preprocess_prediction(text), None, "other",
                          built[fold(qid, text)]))
    return cases


def measure_signals(assigner: ps.ClusterAssigner, raw_cases) -> List[ps.Case]:
    """Every signal of every case (the assigner computes all of them)."""
    texts: List[str] = []
    for question, answer, _, _, _ in raw_cases:
        texts += [answer, question.question, assigner.context_text(question, answer)]
    for question in {id(c[0]): c[0] for c in raw_cases}.values():
        members = [m for c in question.clusters for m in c.answers]
        texts += members + [assigner.context_text(question, m) for m in members]
    assigner.prepare(texts)
    return [ps.Case(question.qid, answer, truth, clusters,
                    assigner.signal_matrix(question, answer, clusters),
                    assigner.none_signals(question, answer), group)
            for question, answer, truth, group, clusters in raw_cases]


def without_embeddings(case: ps.Case) -> ps.Case:
    """The case as an assigner without MiniLM sees it (embedding signals 0)."""
    signals, none = case.signals.copy(), case.none.copy()
    for name in ps.EMBEDDING_SIGNALS:
        if name in ps.SIGNALS:
            signals[:, ps.SIGNALS.index(name)] = 0.0
        if name in ps.NONE_SIGNALS:
            none[ps.NONE_SIGNALS.index(name)] = 0.0
    return ps.Case(case.qid, case.answer, case.truth, case.clusters, signals, none, case.group)


def logit_predictor(assigner: ps.ClusterAssigner, threshold: Optional[float] = None,
                    strip: bool = False) -> Predict:
    def predict(case: ps.Case) -> Tuple[Optional[str], float]:
        seen = without_embeddings(case) if strip else case
        proposal = assigner.decide(seen.clusters, seen.signals, seen.none, threshold)
        return proposal.cluster, proposal.confidence
    return predict


def wordnet_predictor(case: ps.Case) -> Tuple[Optional[str], float]:
    return ps.wordnet_only(case.clusters, case.signals), float("nan")


def previous_predictor(case: ps.Case) -> Tuple[Optional[str], float]:
    if not len(case.clusters):
        return None, 1.0
    weights = np.array([PREVIOUS_WEIGHTS.get(k, 0.0) for k in ps.SIGNALS])
    combined = case.signals @ weights
    best = min(range(len(case.clusters)),
               key=lambda j: (-combined[j], -case.clusters[j].count, j))
    if combined[best] < PREVIOUS_THRESHOLD:
        return None, 1.0 - float(combined[best])
    return case.clusters[best].cluster_id, float(combined[best])


def agreement(cases: Sequence[ps.Case], predict: Predict) -> dict:
    """Overall and per-group agreement (percent) and counts."""
    hits = {g: [0, 0] for g in GROUPS}
    for case in cases:
        cluster, _ = predict(case)
        hits[case.group][0] += cluster == case.truth
        hits[case.group][1] += 1
    total = sum(n for _, n in hits.values())
    out = {"agreement": 100.0 * sum(h for h, _ in hits.values()) / max(total, 1), "n": total}
    for group, (hit, n) in hits.items():
        out[group] = 100.0 * hit / n if n else float("nan")
        out[f"n_{group}"] = n
    return out


def calibration(cases: Sequence[ps.Case], predict: Predict) -> List[dict]:
    """Agreement per confidence bucket (the last bucket includes 1.0)."""
    rows = []
    outcomes = [(predict(c), c.truth) for c in cases]
    for lo, hi in BUCKETS:
        inside = [cluster == truth for (cluster, conf), truth in outcomes
                  if lo <= conf < hi or (hi == 1.0 and conf == 1.0)]
        rows.append({"bucket": f"{lo:.1f}-{hi:.1f}", "n": len(inside),
                     "agreement": 100.0 * sum(inside) / len(inside) if inside else float("nan")})
    return rows


def cross_validated(cases: Sequence[ps.Case], spec_assign: AssignSection, embedder: Optional[ps.Embed],
                    folds: int, seed: int, use_embeddings: bool = True) -> dict:
    """Question-grouped K-fold agreement of the refit logit on `cases` (the dev half).

    Question i in split-hash order falls in fold i mod `folds`; each fold's cases are predicted
    (at the spec's threshold) by `ps.fit_weights` coefficients fitted on the other folds.
    """
    qids = sorted({c.qid for c in cases}, key=lambda q: stable_hash(seed, "assign-split", q))
    fold_of = {q: i % folds for i, q in enumerate(qids)}
    seen = list(cases) if use_embeddings else [without_embeddings(c) for c in cases]
    predicted: List[Tuple[ps.Case, Optional[str]]] = []
    for f in range(folds):
        train = [c for c in seen if fold_of[c.qid] != f]
        weights, none = ps.fit_weights(train, use_embeddings=use_embeddings)
        trial = ps.ClusterAssigner(spec_assign, embedder if use_embeddings else None)
        trial.weights, trial.none_weights = dict(weights), dict(none)
        for case in seen:
            if fold_of[case.qid] == f:
                predicted.append((case, trial.decide(case.clusters, case.signals,
                                                     case.none).cluster))
    outcome = {id(case): cluster for case, cluster in predicted}
    return agreement([case for case, _ in predicted], lambda c: (outcome[id(c)], float("nan")))


def yaml_block(weights: Dict[str, float], none: Dict[str, float], indent: str) -> str:
    lines = [f"{indent}weights:"] + [f"{indent}  {k}: {round(v, 2)}" for k, v in weights.items()]
    lines += [f"{indent}none:"] + [f"{indent}  {k}: {round(v, 2)}" for k, v in none.items()]
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("targets", nargs="?", default=str(DEFAULT_TARGETS))
    parser.add_argument("--folds", type=int, default=4)
    parser.add_argument("--others", type=int, default=4)
    parser.add_argument("--no-embeddings", action="store_true", help="skip MiniLM (no model load)")
    parser.add_argument("--fit", action="store_true", help="refit the coefficients on dev")
    parser.add_argument("--cv", type=int, metavar="K", default=0,
                        help="also print the question-grouped K-fold agreement of the refit on dev")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    args = parser.parse_args(argv)
    path = Path(args.targets)
    if not path.exists():
        print(f"fidelity_protoqa: {path} not found (needs ../shared/samples/protoqa)")
        return 0
    spec = load_spec("protoqa")
    assert isinstance(spec, ProtoqaSpec)
    started = time.time()
    targets = pm.load_targets(path)
    halves = split_questions(targets, spec.seed)
    raw_cases = build_cases(targets, read_raw(path), spec.seed, args.folds, args.others)
    embedder = None if args.no_embeddings else ps.minilm_embedder()
    measurer = ps.ClusterAssigner(spec.assign, embedder, all_signals=True)
    cases = measure_signals(measurer, raw_cases)
    parts = {name: [c for c in cases if halves[c.qid] == name] for name in ("dev", "held_out")}
    n_questions = {name: sum(1 for h in halves.values() if h == name) for name in parts}
    print(f"{path.name}: {len(targets)} questions ({n_questions['dev']} dev, "
          f"{n_questions['held_out']} held out), {len(cases)} answers "
          f"({', '.join(f'{g} {sum(c.group == g for c in cases)}' for g in GROUPS)}), "
          f"{args.folds} folds; signals in {time.time() - started:.0f} s")

    plain = ps.ClusterAssigner(spec.assign, None)
    methods: Dict[str, Predict] = {"wordnet only": wordnet_predictor}
    if embedder is not None:
        methods["previous default (#5)"] = previous_predictor
        methods["logit, MiniLM (spec)"] = logit_predictor(measurer)
    methods["logit, no MiniLM (spec)"] = logit_predictor(plain, strip=True)
    fitted: Dict[str, Tuple[Dict[str, float], Dict[str, float]]] = {}
    if args.fit:
        dev = parts["dev"]
        for label, use in (("embeddings", True), ("without_embeddings", False)):
            if use and embedder is None:
                continue
            seen = dev if use else [without_embeddings(c) for c in dev]
            fitted[label] = ps.fit_weights(seen, use_embeddings=use)
            trial = ps.ClusterAssigner(spec.assign, embedder if use else None)
            trial.weights, trial.none_weights = dict(fitted[label][0]), dict(fitted[label][1])
            methods[f"logit refit ({label})"] = logit_predictor(trial, strip=not use)

    report: dict = {"targets": str(path), "questions": n_questions, "methods": {}}
    head = f"{'method':28} {'half':9} {'agree %':>8} {'n':>5}  " + "  ".join(
        f"{g:>8}" for g in GROUPS)
    print("\nagreement with the annotators' clusters (member: recover its cluster; new / "
          "invalid / other: null)\n" + head)
    for name, predict in methods.items():
        report["methods"][name] = {}
        for half, subset in parts.items():
            result = agreement(subset, predict)
            report["methods"][name][half] = result
            print(f"{name:28} {half:9} {result['agreement']:8.1f} {result['n']:5d}  " +
                  "  ".join(f"{result[g]:8.1f}" for g in GROUPS))

    if args.cv > 1:
        report["cv"] = {}
        print(f"\nrefit, {args.cv}-fold cross-validation over the dev questions")
        for label, use in (("embeddings", True), ("without_embeddings", False)):
            if use and embedder is None:
                continue
            result = cross_validated(parts["dev"], spec.assign, embedder, args.cv, spec.seed, use)
            report["cv"][label] = result
            print(f"{'cv refit (' + label + ')':28} {'dev':9} {result['agreement']:8.1f} "
                  f"{result['n']:5d}  " + "  ".join(f"{result[g]:8.1f}" for g in GROUPS))

    main_name = "logit, MiniLM (spec)" if embedder is not None else "logit, no MiniLM (spec)"
    print(f"\ncalibration of {main_name}: agreement per confidence bucket")
    print(f"{'confidence':10} {'dev n':>6} {'dev %':>6} {'held n':>7} {'held %':>7}")
    tables = {half: calibration(subset, methods[main_name]) for half, subset in parts.items()}
    report["calibration"] = tables
    for d, h in zip(tables["dev"], tables["held_out"]):
        print(f"{d['bucket']:10} {d['n']:6d} {d['agreement']:6.1f} {h['n']:7d} {h['agreement']:7.1f}")

    chooser = measurer if embedder is not None else plain
    print(f"\n{main_name} on dev by assign.threshold (shipped: {spec.assign.threshold})")
    report["thresholds"] = {}
    for threshold in THRESHOLDS:
        result = agreement(parts["dev"], logit_predictor(chooser, threshold,
                                                         strip=embedder is None))
        report["thresholds"][threshold] = result["agreement"]
        print(f"  {threshold:4.2f}  {result['agreement']:5.1f}")
    for label, (weights, none) in fitted.items():
        indent = "  " if label == "embeddings" else "    "
        print(f"\nrefit on dev ({label}):\n{yaml_block(weights, none, indent)}")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
