"""BLANC on hand-computed cases (Recasens & Hovy 2011; Luo et al. 2014 for differing mentions)."""
from __future__ import annotations

import pytest

from transforms.protoqa.blanc import blanc, clusters_to_mapping, corpus_blanc, link_counts, links

approx = pytest.approx


def m(*clusters):
    return clusters_to_mapping(clusters)


def test_links_of_a_small_clustering():
    coref, noncoref = links(m(["a", "b"], ["c"]))
    assert coref == {frozenset("ab")}
    assert noncoref == {frozenset("ac"), frozenset("bc")}


def test_identical_clusterings_score_one():
    key = m(["a"], ["b", "c"], ["d", "e", "f"])
    score = blanc(key, dict(key))
    assert score.blanc == 1.0 and score.recall == 1.0 and score.precision == 1.0
    # 6 mentions: 15 pairs, 1 + 3 = 4 coreference links, 11 non-coreference links
    assert (score.counts.key_coref, score.counts.key_noncoref) == (4, 11)


def test_labels_do_not_matter_only_the_partition():
    assert blanc({"a": "x", "b": "x", "c": "y"}, {"a": 7, "b": 7, "c": 1}).blanc == 1.0


def test_disjoint_links_score_zero():
    # key: one cluster {a,b,c,d}; response: the split {a,b} {c,d}... shares coref links, so use
    # key {a,b} {c,d} and response {a,c} {b,d}: Ck={ab,cd}, Cr={ac,bd}, Nk={ac,ad,bc,bd},
    # Nr={ab,ad,bc,cd}; Ck&Cr = {} -> Fc = 0; Nk&Nr = {ad, bc}: Rn = Pn = 2/4 -> Fn = 0.5
    score = blanc(m("ab", "cd"), m("ac", "bd"))
    assert score.f_coref == 0.0
    assert score.f_noncoref == approx(0.5)
    assert score.blanc == approx(0.25)


def test_partial_agreement():
    # key {a,b,c} {d}; response {a,b} {c,d}
    # Ck = {ab, ac, bc}, Cr = {ab, cd}: common 1 -> Rc = 1/3, Pc = 1/2, Fc = 0.4
    # Nk = {ad, bd, cd}, Nr = {ac, ad, bc, bd}: common {ad, bd} -> Rn = 2/3, Pn = 2/4, Fn = 4/7
    score = blanc(m("abc", "d"), m("ab", "cd"))
    assert score.recall_coref == approx(1 / 3) and score.precision_coref == approx(1 / 2)
    assert score.f_coref == approx(0.4)
    assert score.f_noncoref == approx(4 / 7)
    assert score.blanc == approx((0.4 + 4 / 7) / 2)
    assert score.recall == approx((1 / 3 + 2 / 3) / 2)
    assert score.precision == approx((1 / 2 + 2 / 4) / 2)


def test_swapping_key_and_response_swaps_recall_and_precision():
    a, b = m("abc", "d"), m("ab", "cd")
    forward, backward = blanc(a, b), blanc(b, a)
    assert forward.blanc == approx(backward.blanc)
    assert forward.recall == approx(backward.precision)


def test_differing_mention_sets_luo_extension():
    # key {a} {b,c} {d,e,f}; response {a} {d,e} (b, c, f missing from the response)
    # Ck = {bc, de, df, ef} (4), Cr = {de} (1): common 1 -> Rc = 1/4, Pc = 1, Fc = 0.4
    # Nk = 15 - 4 = 11 links, Nr = {ad, ae} (2), both in Nk -> Rn = 2/11, Pn = 1, Fn = 4/13
    score = blanc(m("a", "bc", "def"), m("a", "de"))
    assert not score.counts.same_mentions
    assert score.f_coref == approx(0.4)
    assert score.f_noncoref == approx(4 / 13)
    assert score.blanc == approx((0.4 + 4 / 13) / 2)


def test_extra_response_mention_lowers_precision_only():
    # key {a,b} {c}; response {a,b} {c} {x}: Cr = Ck = {ab}; Nk = {ac, bc}; Nr = {ac, bc, ax, bx, cx}
    score = blanc(m("ab", "c"), m("ab", "c", "x"))
    assert score.f_coref == 1.0
    assert score.recall_noncoref == 1.0
    assert score.precision_noncoref == approx(2 / 5)
    assert score.blanc == approx((1 + 2 * (2 / 5) / (1 + 2 / 5)) / 2)


def test_all_singletons_on_both_sides_uses_fn_only():
    score = blanc(m("a", "b", "c"), m("a", "b", "c"))
    assert score.blanc == 1.0
    # response drops c: Nk = {ab, ac, bc}, Nr = {ab} -> Rn = 1/3, Pn = 1, Fn = 0.5 = BLANC
    assert blanc(m("a", "b", "c"), m("a", "b")).blanc == approx(0.5)


def test_one_cluster_on_both_sides_uses_fc_only():
    assert blanc(m("abc"), m("abc")).blanc == 1.0
    # Ck = {ab, ac, bc}, Cr = {ab}: Rc = 1/3, Pc = 1 -> Fc = 0.5 = BLANC
    assert blanc(m("abc"), m("ab")).blanc == approx(0.5)


def test_one_side_without_coref_links_gets_fc_zero():
    # key all singletons, response one cluster: Fc = 0 (Ck empty), Fn = 0 (Nr empty)
    assert blanc(m("a", "b"), m("ab")).blanc == 0.0


def test_single_mentions():
    assert blanc(m("a"), m("a")).blanc == 1.0
    assert blanc(m("a"), m("b")).blanc == 0.0
    assert blanc({}, {}).blanc == 1.0


def test_corpus_macro_and_micro():
    items = [(m("ab", "c"), m("ab", "c")), (m("abc", "d"), m("ab", "cd"))]
    result = corpus_blanc(items)
    second = (0.4 + 4 / 7) / 2
    assert result["items"] == 2
    assert result["macro"] == approx((1 + second) / 2)
    # summed counts: Ck 1+3, Cr 1+2, common 1+1; Nk 2+3, Nr 2+4, common 2+2
    rc, pc, rn, pn = 2 / 4, 2 / 3, 4 / 5, 4 / 6
    fc, fn = 2 * rc * pc / (rc + pc), 2 * rn * pn / (rn + pn)
    assert result["micro"] == approx((fc + fn) / 2)
    total = link_counts(*items[0]) + link_counts(*items[1])
    assert total.key_coref == 4 and total.common_noncoref == 4


def test_mention_in_two_clusters_is_an_error():
    with pytest.raises(ValueError):
        clusters_to_mapping([["a"], ["a"]])
