"""`protoqa assign` as a logit over clusters and "none" (issue #12): signals, decision, fit."""
from __future__ import annotations

import math

import numpy as np
import pytest

from data_specs import load_spec
from transforms.protoqa import assign as ps
from transforms.protoqa import assign_signals as sig
from transforms.protoqa import metric_inputs as mi

QUESTION = mi.Question("q", "name something you feed a dog.", [
    mi.Cluster("q.0", ("dog food", "bones"), 10),
    mi.Cluster("q.1", ("cat",), 6),
])


def lemma_only_assigner(threshold: float = 0.3) -> ps.ClusterAssigner:
    """No embedder; a cluster's utility is its lemma Jaccard, "none" has utility 0."""
    others = [f"assign.without_embeddings.weights.{k}=0" for k in ps.SIGNALS if k != "lemma"]
    none = [f"assign.without_embeddings.none.{k}=0" for k in ps.NONE_SIGNALS]
    spec = load_spec("protoqa", ["assign.without_embeddings.weights.lemma=1", *others, *none,
                                 f"assign.threshold={threshold}"])
    return ps.ClusterAssigner(spec.assign, embedder=None)


# ------------------------------------------------------------------------------------ signals
def test_lemmas_head_coverage_and_prior():
    assert sig.lemmas("the big puppies") == ("big", "puppy")
    assert sig.head_lemma("the big puppies") == "puppy" and sig.head_lemma("the") == ""
    # "red" is in no member, "dog" is: half of the answer's lemmas
    assert sig.coverage("red dog", ["big dog", "cat"]) == 0.5
    assert sig.coverage("the", ["dog"]) == 0.0
    assert sig.size_prior(10, 16) == pytest.approx(math.log(11) / math.log(17))
    assert sig.size_prior(16, 16) == 1.0 and sig.size_prior(0, 16) == 0.0
    assert sig.size_prior(3, 0) == 0.0


def test_signal_matrix_without_embeddings():
    assigner = ps.ClusterAssigner(load_spec("protoqa").assign, embedder=None, all_signals=True)
    signals = assigner.signal_matrix(QUESTION, "dog bones")
    row = dict(zip(ps.SIGNALS, signals[0]))
    # best member of q.0 for lemmas {dog, bone}: "bones" {bone} -> 1/2, "dog food" -> 1/3
    assert row["lemma"] == pytest.approx(0.5)
    # "dog" and "bone" both occur in q.0's strings; the head "bone" is the head of "bones"
    assert row["coverage"] == 1.0 and row["head"] == 1.0
    # "dog bones" vs "dog food": 4 edits over 9 characters
    assert row["spelling"] == pytest.approx(1 - 4 / 9)
    assert row["prior"] == pytest.approx(math.log(11) / math.log(17))
    assert row["embedding"] == row["centroid"] == row["context"] == 0.0
    cat = dict(zip(ps.SIGNALS, signals[1]))
    assert cat["lemma"] == 0.0 and cat["coverage"] == 0.0 and cat["head"] == 0.0


def test_none_signals():
    assigner = ps.ClusterAssigner(load_spec("protoqa").assign, embedder=None)
    none = dict(zip(ps.NONE_SIGNALS, assigner.none_signals(QUESTION, "dog treats")))
    # lemmas {dog, treat}; the question's {name, something, feed, dog}
    assert none == {"bias": 1.0, "question_overlap": 0.5, "question_similarity": 0.0,
                    "empty": 0.0, "tokens": 0.5}
    empty = dict(zip(ps.NONE_SIGNALS, assigner.none_signals(QUESTION, "the")))
    assert empty["empty"] == 1.0 and empty["tokens"] == 0.0 and empty["question_overlap"] == 0.0


def test_signals_with_weight_zero_are_not_computed():
    assigner = lemma_only_assigner()
    assert assigner.needed == {"lemma"}
    row = dict(zip(ps.SIGNALS, assigner.signal_matrix(QUESTION, "bones")[0]))
    assert row["lemma"] == 1.0 and row["spelling"] == 0.0 and row["prior"] == 0.0


# ----------------------------------------------------------------------------------- decision
def test_softmax_with_none():
    probabilities, p_none = ps.softmax_with_none(np.array([0.0, math.log(2)]), 0.0)
    assert probabilities == pytest.approx([0.25, 0.5]) and p_none == pytest.approx(0.25)


def test_decide_proposes_the_best_cluster_with_its_probability():
    # "bones": lemma 1 with q.0, 0 with q.1, "none" 0 -> e / (e + 2)
    proposal = lemma_only_assigner().assign(QUESTION, "Bones")
    assert proposal.cluster == "q.0"
    assert proposal.confidence == pytest.approx(math.e / (math.e + 2))
    assert proposal.none_probability == pytest.approx(1 / (math.e + 2))


def test_decide_under_the_threshold_or_below_none_says_none():
    proposal = lemma_only_assigner(threshold=0.6).assign(QUESTION, "bones")
    assert proposal.cluster is None
    assert proposal.confidence == pytest.approx(1 / (math.e + 2))
    # no overlap anywhere: every option has utility 0, "none" is not beaten
    tie = lemma_only_assigner().assign(QUESTION, "a leash")
    assert tie.cluster is None and tie.confidence == pytest.approx(1 / 3)
    assert lemma_only_assigner().decide([], np.zeros((0, len(ps.SIGNALS))),
                                        np.zeros(len(ps.NONE_SIGNALS))) == ps.Proposal(None, 1.0)


def test_ties_go_to_the_larger_cluster():
    q = mi.Question("t", "name a pet.", [mi.Cluster("t.0", ("red dog",), 2),
                                         mi.Cluster("t.1", ("dog house",), 5)])
    # "dog" has Jaccard 1/2 with both: the count-5 cluster wins
    assert lemma_only_assigner(threshold=0.0).assign(q, "dog").cluster == "t.1"


# ------------------------------------------------------------------------------------ fitting
def case(truth, lemma_values, none_bias=1.0):
    signals = np.zeros((len(lemma_values), len(ps.SIGNALS)))
    signals[:, ps.SIGNALS.index("lemma")] = lemma_values
    clusters = [mi.Cluster(f"c{i}", ("x",), 1) for i in range(len(lemma_values))]
    none = np.zeros(len(ps.NONE_SIGNALS))
    none[ps.NONE_SIGNALS.index("bias")] = none_bias
    return ps.Case("q", "a", truth, clusters, signals, none)


def test_fit_weights_matches_the_closed_form():
    # one cluster with lemma 1; it is right 3 times in 4. Only w - b is determined and gradient
    # descent from 0 keeps w = -b, so p = e^(2w) / (e^(2w) + 1) = 3/4: w = ln(3) / 2.
    cases = [case("c0", [1.0])] * 3 + [case(None, [1.0])]
    weights, none = ps.fit_weights(cases, use_embeddings=False, l2=0.0)
    assert weights["lemma"] == pytest.approx(math.log(3) / 2, abs=1e-4)
    assert none["bias"] == pytest.approx(-math.log(3) / 2, abs=1e-4)
    assert weights["embedding"] == 0.0 and none["question_similarity"] == 0.0


def test_fit_weights_keeps_cluster_weights_non_negative():
    # the right cluster always has the lower lemma value: the best weight is negative, bounded to 0
    cases = [case("c0", [0.0, 1.0])] * 4
    weights, _ = ps.fit_weights(cases, use_embeddings=False, l2=1e-3)
    assert weights["lemma"] == 0.0


# ------------------------------------------------------------------- the development measure
def _fidelity_module():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "fidelity_protoqa.py"
    spec = importlib.util.spec_from_file_location("fidelity_protoqa", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_fidelity_cases_hold_out_every_member_once_and_add_none_cases():
    fid = _fidelity_module()
    targets = {"a": mi.Question("a", "name a pet.", [mi.Cluster("a.0", ("dog", "puppy", "hound"), 5),
                                                    mi.Cluster("a.1", ("cat",), 2)]),
               "b": mi.Question("b", "name a fruit.", [mi.Cluster("b.0", ("apple", "pear"), 4)])}
    raw = {"a": ["dog", "puppy", "hound", "cat", "zzz"], "b": ["apple", "pear", "dog"]}
    cases = fid.build_cases(targets, raw, seed=7, folds=2, others=1)
    members = [(q.qid, a) for q, a, _, g, _ in cases if g in ("member", "new")]
    assert sorted(members) == [("a", "cat"), ("a", "dog"), ("a", "hound"), ("a", "puppy"),
                               ("b", "apple"), ("b", "pear")]
    for _, answer, truth, group, clusters in cases:
        # the held-out string is never among the strings it is assigned to
        assert all(answer not in c.answers for c in clusters) or group in ("invalid", "other")
        assert (truth is None) == (group != "member")
        if group == "member":
            assert truth in {c.cluster_id for c in clusters}
    # "zzz" is the one raw answer of a outside every cluster; "dog" of b is a member of a
    assert [(q.qid, a) for q, a, _, g, _ in cases if g == "invalid"] == [("a", "zzz"), ("b", "dog")]
    others = [(q.qid, a) for q, a, _, g, _ in cases if g == "other"]
    # b's only possible "other" strings are a's that b's raw answers lack (dog is one of them)
    assert len(others) == 2 and ("b", "dog") not in others and others[0][0] == "a"
    assert others[0][1] in ("apple", "pear")
    halves = fid.split_questions(["q1", "q2", "q3", "q4"], seed=7)
    assert sorted(halves.values()) == ["dev", "dev", "held_out", "held_out"]
    assert fid.split_questions(["q4", "q3", "q2", "q1"], seed=7) == halves


def test_calibration_buckets():
    fid = _fidelity_module()
    cases = [ps.Case("q", str(i), None, [], np.zeros((0, len(ps.SIGNALS))),
                     np.zeros(len(ps.NONE_SIGNALS)), "new") for i in range(4)]
    outcomes = iter([(None, 0.95), ("x", 1.0), (None, 0.6), (None, 0.1)])
    table = fid.calibration(cases, lambda case: next(outcomes))
    assert [(r["bucket"], r["n"], r["agreement"]) for r in table if r["n"]] == [
        ("0.0-0.5", 1, 100.0), ("0.5-0.7", 1, 100.0), ("0.9-1.0", 2, 50.0)]


@pytest.mark.slow
def test_cli_assign_with_minilm(tmp_path):
    from pathlib import Path

    from pipeline.cli.main import main
    from transforms.core.models.loading import ModelUnavailable
    from transforms.core.models.minilm import check_minilm

    try:
        check_minilm()
    except ModelUnavailable as error:
        pytest.skip(str(error))
    data = Path(__file__).resolve().parents[1] / "data" / "protoqa_score"
    out = tmp_path / "assigned.jsonl"
    assert main(["protoqa", "assign", "--targets", str(data / "targets.jsonl"), "--answers",
                 str(data / "answers.jsonl"), "--output", str(out)]) == 0
    import json

    rows = [json.loads(line) for line in out.read_text().splitlines()]
    # puppies -> dog|puppy, kitty cat -> cat|kitten, a misspelt refrigerator, and no cluster
    assert [r["cluster"] for r in rows] == ["t1.0", "t1.1", "t2.0", None]
    assert all(0.5 < r["confidence"] <= 1.0 for r in rows)


def test_fidelity_cross_validation_predicts_each_question_from_the_other_folds():
    fid = _fidelity_module()
    spec = load_spec("protoqa")

    def case(qid: str, truth_is_none: bool) -> ps.Case:
        # the same signals in both questions: the lemma signal on cluster .0, a bias for "none"
        clusters = [mi.Cluster(f"{qid}.0", ("x",), 9), mi.Cluster(f"{qid}.1", ("y",), 1)]
        signals = np.zeros((2, len(ps.SIGNALS)))
        signals[0, ps.SIGNALS.index("lemma")] = 1.0
        none = np.zeros(len(ps.NONE_SIGNALS))
        none[ps.NONE_SIGNALS.index("bias")] = 1.0
        truth = None if truth_is_none else f"{qid}.0"
        return ps.Case(qid, "a", truth, clusters, signals, none, "new" if truth_is_none else "member")

    # A's truth is its cluster .0, B's is none. With 2 folds each question is predicted by a fit
    # on the other alone, which learns the opposite answer: B says "none", A says ".0", so every
    # case is missed. One fit on both would see identical signals and agree on half of them.
    cases = [case("A", False) for _ in range(20)] + [case("B", True) for _ in range(20)]
    result = fid.cross_validated(cases, spec.assign, None, folds=2, seed=spec.seed,
                                 use_embeddings=False)
    assert result["n"] == 40 and result["agreement"] == 0.0
    assert result["n_member"] == 20 and result["n_new"] == 20
