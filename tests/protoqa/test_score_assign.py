"""ProtoQA scoring (issue #5): the official evaluator's rules, the CLI, and the reference scores."""
from __future__ import annotations

import json
from itertools import product
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment

from data_specs import load_spec
from pipeline.cli.main import main
from tests.conftest import loaded_modules
from transforms.protoqa import assign as ps
from transforms.protoqa import assign_signals as sig
from transforms.protoqa import metric as pm
from transforms.protoqa import metric_inputs as mi
from transforms.protoqa import wordnet as pw

DATA = Path(__file__).resolve().parents[1] / "data" / "protoqa_score"
SHARED = Path(__file__).resolve().parents[3] / "shared" / "samples" / "protoqa"
REFERENCE = SHARED / "reference_scores"
SPEC = load_spec("protoqa")


@pytest.fixture(scope="module")
def targets():
    return pm.load_targets(DATA / "targets.jsonl")


@pytest.fixture(scope="module")
def predictions():
    return pm.load_predictions(DATA / "predictions.json")


def score(targets, predictions, qid, similarity="exact", **kw):
    return pm.score_question(predictions[qid], targets[qid], similarity=similarity, **kw)


def test_scoring_modules_import_without_beam_or_models():
    code = ("import transforms.protoqa.metric, transforms.protoqa.wordnet, transforms.protoqa.assign, "
            "transforms.protoqa.blanc")
    heavy = ["apache_beam", "torch", "transformers", "spacy", "sentence_transformers"]
    assert loaded_modules(code, heavy) == []


# ------------------------------------------------------------------------------------ loading
def test_loaders(targets, predictions):
    assert list(targets) == ["t1", "t2"]
    assert [c.cluster_id for c in targets["t1"].clusters] == ["t1.0", "t1.1", "t1.2", "t1.3"]
    assert targets["t1"].clusters[0].answers == ("dog", "puppy")
    assert targets["t1"].question == "name a pet."
    assert pm.load_predictions(DATA / "predictions.jsonl") == predictions
    several = mi.parse_predictions('{"a": ["x"]}\n{"b": ["y"], "c": []}\n')
    assert several == {"a": ["x"], "b": ["y"], "c": []}
    with pytest.raises(ValueError):
        mi.parse_predictions('{"a": "not a list"}')


def test_identical_clusters_merge_like_a_frozenset_dict():
    row = {"metadata": {"id": "q"}, "question": {"normalized": "q"},
           "answers": {"clusters": {"q.0": {"count": 2, "answers": ["a", "b"]},
                                    "q.1": {"count": 1, "answers": ["c"]},
                                    "q.2": {"count": 5, "answers": ["b", "a"]}}}}
    q = mi.question_from_json(row)
    assert [(c.cluster_id, c.count) for c in q.clusters] == [("q.0", 5), ("q.1", 1)]


def test_old_answers_cleaned_layout():
    row = {"questionid": "q", "normalized-question": "q",
           "answers-cleaned": [{"count": 3, "answers": ["x"]}, {"count": 1, "answers": ["y"]}]}
    q = mi.question_from_json(row)
    assert [(c.cluster_id, c.answers, c.count) for c in q.clusters] == [("q.0", ("x",), 3),
                                                                        ("q.1", ("y",), 1)]


def test_preprocessing():
    assert pm.preprocess_prediction("  Dog ") == "dog"
    long = "A" * 49 + " b"
    assert pm.preprocess_prediction(long) == "a" * 49  # cut to 50, then stripped


# ------------------------------------------------------------------------------ exact metrics
def test_max_answers(targets, predictions):
    # dog (10) + cat (6) + goldfish (3) of 20; puppy repeats cluster t1.0 and scores nothing
    assert score(targets, predictions, "t1").score == pytest.approx(19 / 20)
    assert score(targets, predictions, "t1", max_answers=1).score == 1.0  # oracle: 10
    assert score(targets, predictions, "t1", max_answers=3).score == pytest.approx(10 / 19)


def test_max_incorrect_cut_and_repeated_correct_answer(targets, predictions):
    # first incorrect is "car": the list is cut just after it
    assert score(targets, predictions, "t1", max_incorrect=1).score == pytest.approx(10 / 20)
    # "puppy" repeats a matched cluster but is not incorrect: only car and boat are, so
    # Max Incorrect - 3 keeps the whole list ...
    assert score(targets, predictions, "t1", max_incorrect=3).score == pytest.approx(19 / 20)
    # ... and Max Incorrect - 2 stops at boat, before goldfish
    assert score(targets, predictions, "t1", max_incorrect=2).score == pytest.approx(16 / 20)


def test_limit_incorrect_rows():
    m = np.array([[1, 0], [0, 0], [1, 0], [0, 0], [0, 1]], dtype=float)
    assert pm.limit_incorrect(m, 1).shape[0] == 2
    assert pm.limit_incorrect(m, 2).shape[0] == 4
    assert pm.limit_incorrect(m, 3).shape[0] == 5
    assert pm.limit_incorrect(m, None) is m


def test_assignment(targets, predictions):
    result = score(targets, predictions, "t1")
    # 6 answers, 4 clusters: only the 4 assigned answers appear
    assert len(result.assignment) == 4
    assert result.assignment["cat"] == "t1.1" and result.assignment["goldfish"] == "t1.2"
    assert [result.assignment.get(a) for a in ("dog", "puppy")].count("t1.0") == 1
    assert score(targets, predictions, "t2").assignment == {"knife": None, "fridge": "t2.0",
                                                             "oven": None}


def test_empty_list_and_oracle_with_unmatchable_representative():
    q = mi.Question("q", "q", [mi.Cluster("q.0", ("Big Dog",), 4), mi.Cluster("q.1", ("cat",), 2)])
    assert pm.score_question([], q).score == 0.0
    # "Big Dog" lowercases to "big dog", which no longer equals its own cluster: the oracle
    # then scores only the cat cluster, as the official evaluator does
    assert pm.score_question(["cat"], q).score == 1.0


def test_evaluate_means_and_missing(targets, predictions):
    means, per_q = pm.evaluate(targets, predictions, "exact")
    assert list(means) == pm.metric_names()
    assert means["Max Answers - None"] == pytest.approx((19 / 20 + 5 / 11) / 2)
    assert per_q["Max Answers - 1"]["t2"].score == 0.0
    with pytest.raises(KeyError):
        pm.evaluate(targets, {"zz": ["a"]})
    assert pm.missing_questions(targets, {"t1": []}) == ["t2"]


# ---------------------------------------------------------------------------------- WordNet
def test_stopword_list():
    words = pw.stopwords()
    assert len(words) == 179
    assert {"the", "mightn't", "ourselves", "s", "t"} <= words and "would" not in words


def test_tokenizer_without_punkt():
    assert pw.tokenize("they're snakes.") == ("they", "'re", "snakes", ".")
    assert pw.tokenize('"good game"') == ("``", "good", "game", "''")
    assert pw.tokenize("") == ()
    assert pw.split_sentences("snakes. dogs") == ["snakes.", "dogs"]
    assert pw.split_sentences("mr. smith and u.s. army") == ["mr. smith and u.s. army"]


def test_partitions():
    assert len(pw.partitions(3)) == 4 and pw.partitions(0) == (((0, 0),),)
    # only the grouping "hot dog" is a WordNet lemma (a synonym of frankfurter)
    assert pw.wordnet_score("hot dog", "frankfurter") == 1.0
    assert pw.wordnet_score("hot", "frankfurter") == 0.0
    # best pair: [big, red, dog] vs [large, dog] -> 2 matches / 3 groups
    assert pw.wordnet_score("big red dog", "large dog") == pytest.approx(2 / 3)
    assert pw.wordnet_score("puppies", "puppy") == 1.0  # morphy


def test_round_half_to_even():
    assert pw.wordnet_score("knife", "kitchen knife") == 0.5
    assert not pw.wordnet_match("knife", "kitchen knife")       # np.round(0.5) == 0
    assert pw.wordnet_match("big red dog", "large dog")          # np.round(2/3) == 1
    cluster = mi.Cluster("c", ("kitchen knife",), 2)
    assert pm.wordnet_cluster_score("knife", cluster) == 0.0
    assert pm.wordnet_cluster_score("large dog", mi.Cluster("d", ("cat", "big red dog"), 1)) == 1.0


def test_stopword_only_answers():
    assert pw.wordnet_score("", "the") == 1.0
    assert pw.wordnet_score("of the", "the") == 1.0
    assert pw.wordnet_score("", "dog") == 0.0 and pw.wordnet_score("dog", "the") == 0.0
    q = mi.Question("q", "q", [mi.Cluster("q.0", ("dog",), 3), mi.Cluster("q.1", ("the",), 1)])
    assert pm.score_question(["", "dog"], q, similarity="wordnet").score == 1.0
    assert pm.score_question(["", "dog"], q, similarity="exact").score == pytest.approx(3 / 4)


# The content tokens (NLTK's tokens minus its English stopwords) of the strings below, by hand.
CONTENT = {
    "hot dog": ["hot", "dog"], "frankfurter": ["frankfurter"], "big red dog": ["big", "red", "dog"],
    "large dog": ["large", "dog"], "ice cream cone": ["ice", "cream", "cone"], "ice cream": ["ice", "cream"],
    "go to the store": ["go", "store"], "store visit": ["store", "visit"], "cell phone": ["cell", "phone"],
    "mobile phone": ["mobile", "phone"], "the car": ["car"], "auto": ["auto"],
    "running shoes": ["running", "shoes"], "shoe": ["shoe"], "geese": ["geese"], "goose": ["goose"],
    "new york city": ["new", "york", "city"], "big apple": ["big", "apple"], "": [], "of": [],
}


def _official_style_score(a: str, b: str) -> float:
    """A direct transcription of the paper's rule with the public NLTK API and scipy, on the
    hand-written content tokens (not the scorer's tokenizer)."""
    from nltk.corpus import wordnet as wn

    def parts(text):
        toks = CONTENT[text]
        if not toks:
            return [[""]]
        out = []
        for cuts in product([0, 1], repeat=len(toks) - 1):
            groups, cur = [], [toks[0]]
            for cut, tok in zip(cuts, toks[1:]):
                if cut:
                    groups.append(" ".join(cur))
                    cur = [tok]
                else:
                    cur.append(tok)
            groups.append(" ".join(cur))
            out.append(groups)
        return out

    def match(x, y):
        sx, sy = wn.synsets(x.replace(" ", "_")), wn.synsets(y.replace(" ", "_"))
        return float(x == y or any(p == q for p in sx for q in sy))

    best = 0.0
    for pa in parts(a):
        for pb in parts(b):
            m = np.array([[match(x, y) for y in pb] for x in pa])
            r, c = linear_sum_assignment(-m)
            best = max(best, m[r, c].sum() / max(m.shape))
    return best


@pytest.mark.parametrize("a,b", [
    ("hot dog", "frankfurter"), ("big red dog", "large dog"), ("ice cream cone", "ice cream"),
    ("go to the store", "store visit"), ("cell phone", "mobile phone"), ("the car", "auto"),
    ("running shoes", "shoe"), ("geese", "goose"), ("new york city", "big apple"), ("", "of")])
def test_fast_wordnet_equals_public_api_transcription(a, b):
    assert pw.wordnet_score(a, b) == _official_style_score(a, b)
    assert pw.wordnet_match(a, b) == (np.round(_official_style_score(a, b)) == 1)


# ------------------------------------------------------------------------------------- CLI
def test_cli_score_json(capsys, tmp_path):
    per_q = tmp_path / "per_question.json"
    assert main(["protoqa", "score", "--targets", str(DATA / "targets.jsonl"), "--predictions",
                 str(DATA / "predictions.jsonl"), "--similarity", "wordnet", "--json",
                 "--per-question", str(per_q)]) == 0
    means = json.loads(capsys.readouterr().out)
    assert list(means) == pm.metric_names()
    report = json.loads(per_q.read_text())
    assert report["similarity_function"] == "wordnet"
    t2 = report["metrics"]["Max Answers - None"]["per_question"]["t2"]
    assert t2["assignment"]["fridge"] == "t2.0" and t2["assignment"]["knife"] is None


def test_cli_score_table(capsys):
    assert main(["protoqa", "score", "--targets", str(DATA / "targets.jsonl"),
                 "--predictions", str(DATA / "predictions.json")]) == 0
    assert "Max Incorrect - 3" in capsys.readouterr().out


def _assign(tmp_path, *options) -> list:
    out = tmp_path / "assigned.jsonl"
    assert main(["protoqa", "assign", "--targets", str(DATA / "targets.jsonl"), "--answers",
                 str(DATA / "answers.jsonl"), "--no-embeddings", "--output", str(out), *options]) == 0
    return [json.loads(line) for line in out.read_text().splitlines()]


def test_cli_assign_without_embeddings(tmp_path):
    rows = _assign(tmp_path, "--threshold", "0.2")
    assert [r["cluster"] for r in rows] == ["t1.0", "t1.1", "t2.0", None]
    assert all(0.0 <= r["confidence"] <= 1.0 for r in rows)


def test_cli_assign_threshold_from_the_spec_and_the_flag_over_it(tmp_path, capsys):
    by_flag = _assign(tmp_path, "--threshold", "0.2")
    assert _assign(tmp_path, "--set", "assign.threshold=0.2") == by_flag
    assert _assign(tmp_path, "--set", "assign.threshold=0.9", "--threshold", "0.2") == by_flag
    assert [r["cluster"] for r in _assign(tmp_path, "--set", "assign.threshold=1")] == [None] * 4
    capsys.readouterr()
    assert main(["protoqa", "assign", "--targets", str(DATA / "targets.jsonl"), "--leave-one-out",
                 "--no-embeddings", "--threshold", "1.5"]) == 2
    assert "assign.threshold=1.5" in capsys.readouterr().err


def test_assign_helpers_and_leave_one_out(targets):
    assert sig.levenshtein("refridgerator", "refrigerator") == 1
    assert sig.spelling_similarity("", "x") == 0.0 and sig.spelling_similarity("a", "a") == 1.0
    assert sig.lemma_set("the puppies") == frozenset({"puppy"})
    result = ps.leave_one_out(targets, ps.ClusterAssigner(SPEC.assign, embedder=None))
    # t1: dog|puppy, cat|kitten (4 strings whose cluster stays), goldfish, the (singletons);
    # t2: fridge|refrigerator (2), stove top, kitchen knife (singletons)
    assert result["combined"]["n_with_cluster"] == 6 and result["combined"]["n_singleton"] == 4
    # WordNet alone, by hand (NLTK's wn.synsets): no held-out string shares a synset with a string
    # left in its question (dog: dog.n.01 ..., puppy: puppy.n.01/02; cat: cat.n.01 ..., kitten:
    # kitten.n.01; fridge: electric_refrigerator.n.01, refrigerator: refrigerator.n.01), so it
    # says None every time: wrong for the 6 with a cluster, right for the 4 singletons -> 4/10
    only = result["wordnet_only"]
    assert (only["held_out_with_cluster"], only["held_out_singleton_new"], only["overall"]) == (0.0, 1.0, 0.4)
    assert result["threshold"] == SPEC.assign.threshold
    # without an embedder the `without_embeddings` coefficients are used
    assert result["weights"] == SPEC.assign.without_embeddings.weights.model_dump()
    assert result["none"]["question_similarity"] == 0.0


def test_assigner_takes_its_coefficients_threshold_and_partition_limit_from_the_spec():
    spec = load_spec("protoqa", ["assign.weights.embedding=2", "assign.none.bias=0.5",
                                 "assign.without_embeddings.weights.lemma=7",
                                 "assign.threshold=0.45", "assign.max_partition_pairs=2"])
    with_model = ps.ClusterAssigner(spec.assign, embedder=lambda texts: np.ones((len(texts), 1)))
    assert with_model.weights["embedding"] == 2.0 and with_model.none_weights["bias"] == 0.5
    plain = ps.ClusterAssigner(spec.assign, embedder=None)
    assert plain.weights["lemma"] == 7.0 and plain.weights["embedding"] == 0.0
    assert plain.threshold == 0.45 and plain.max_partition_pairs == 2
    # two 3-token strings have 4 x 4 partition pairs: over the limit, the bounded score
    assert sig.bounded_wordnet_score("big red dog", "large red hound", 16) == \
        pw.wordnet_score("big red dog", "large red hound")
    assert sig.bounded_wordnet_score("big red dog", "large red hound", 2) <= \
        pw.wordnet_score("big red dog", "large red hound")


def test_assign_with_fake_embedder(targets):
    vectors = {"puppy": [1, 0], "dog": [1, 0], "hound": [1, 0]}

    def embed(texts):
        out = np.array([vectors.get(t, [0, 1]) for t in texts], dtype=float)
        return out / np.linalg.norm(out, axis=1, keepdims=True)

    zero = [f"assign.weights.{k}=0" for k in ps.SIGNALS if k != "embedding"]
    spec = load_spec("protoqa", ["assign.weights.embedding=1", *zero,
                                 *[f"assign.none.{k}=0" for k in ps.NONE_SIGNALS]])
    assigner = ps.ClusterAssigner(spec.assign, embedder=embed)
    proposal = assigner.assign(targets["t1"], "Hound")
    # utilities: t1.0 = 1 (cosine 1), the other three clusters and "none" 0
    assert proposal.cluster == "t1.0" and proposal.signals["embedding"] == pytest.approx(1.0)
    assert proposal.confidence == pytest.approx(np.e / (np.e + 4))
    assert proposal.none_probability == pytest.approx(1 / (np.e + 4))


# ------------------------------------------------------------------------ reference scores
@pytest.mark.skipif(not REFERENCE.exists(), reason="needs ../shared/samples/protoqa")
@pytest.mark.parametrize("similarity,name", [("exact", "exact_match"), ("wordnet", "wordnet")])
def test_reference_scores(similarity, name):
    reference = json.loads((REFERENCE / f"iesl_gpt2finetuned.{name}.json").read_text())
    targets = pm.load_targets(SHARED / reference["targets"])
    predictions = pm.load_predictions(SHARED / reference["predictions"])
    means, per_question = pm.evaluate(targets, predictions, similarity)
    assert set(means) == set(reference["metrics"])
    for metric, ref in reference["metrics"].items():
        assert means[metric] == pytest.approx(ref["mean"], abs=1e-9), metric
        assert set(per_question[metric]) == set(ref["per_question"])
        for qid, expected in ref["per_question"].items():
            got = per_question[metric][qid]
            assert got.score == pytest.approx(expected["score"], abs=1e-9), (metric, qid)
            assert list(got.assignment.items()) == list(expected["assignment"].items()), (metric, qid)
