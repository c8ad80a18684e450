"""The spaCy annotator: span trimming, placement in passage/sentence coordinates, model loading."""
import pytest

from transforms.core.models.loading import ModelUnavailable
from transforms.record.annotate.spacy_ner import SpacyAnnotator, load_ner_pipeline
from transforms.record.annotate.spans import trim_span
from transforms.record.article import Article, make_split


@pytest.mark.parametrize("raw, trimmed", [
    ("the White House's", "White House"),
    ("Marc Chivers -", "Marc Chivers"),
    ("Morgan’s", "Morgan"),
    ("Jesus'", "Jesus"),
    ("The Hague", "Hague"),
    ("Tracy Morgan", "Tracy Morgan"),
])
def test_trim_span(raw, trimmed):
    text = f"<{raw}>"
    start, end = trim_span(text, 1, 1 + len(raw))
    assert text[start:end] == trimmed


@pytest.fixture(scope="module")
def spacy_annotator():
    return SpacyAnnotator(labels=["PERSON", "ORG", "GPE", "NORP", "LOC", "FAC"])


def test_annotator_places_entities_and_chains_them(spacy_annotator):
    article = Article(
        id="a1",
        paragraphs=("Tracy Morgan met officials from Germany in Berlin on Monday.",
                    "Later that day, Morgan told German reporters about the trip."),
        highlights=("Morgan visits Berlin",),
    )
    [result] = spacy_annotator.annotate([make_split(article, 1, 100)])
    text = result.split.text
    assert all(text[e.start:e.end] == e.text for e in result.passage_entities)
    by_text = {e.text: e.chain for e in result.passage_entities}
    assert {"Tracy Morgan", "Germany", "Berlin", "Morgan"} <= set(by_text)
    assert by_text["Morgan"] == by_text["Tracy Morgan"]  # highlight surname -> full name
    [sentence] = result.sentences
    assert sentence.text == "Later that day, Morgan told German reporters about the trip."
    ents = {e.text: e.chain for e in sentence.entities}
    [morgan] = [e for e in sentence.entities if e.text == "Morgan"]
    assert (morgan.start, morgan.end) == (16, 22)   # after "Later that day, " (16 characters)
    assert sentence.text[morgan.start:morgan.end] == "Morgan"
    assert ents["Morgan"] == by_text["Tracy Morgan"]
    assert ents["German"] == by_text["Germany"]  # demonym


def test_sentences_of_the_rest_keep_their_characters(spacy_annotator):
    article = Article(id="a2", paragraphs=("Lead about Paris.",
                                           "Anna Berg went to Oslo.\u00a0Then “Berg” flew to Rome."),
                      highlights=("h",))
    [result] = spacy_annotator.annotate([make_split(article, 1, 100)])
    texts = [s.text for s in result.sentences]
    assert "".join(texts).replace(" ", "") == article.paragraphs[1].replace(" ", "").replace("\u00a0", "")
    for s in result.sentences:
        assert all(s.text[e.start:e.end] == e.text for e in s.entities)


def test_a_text_longer_than_spacys_limit_is_a_quiet_reject_not_a_crash(spacy_annotator, caplog):
    import logging

    from transforms.core.accounting import Reject

    caplog.set_level(logging.DEBUG)
    short = Article(id="short", paragraphs=("Anna Berg went to Oslo.", "Berg came back."), highlights=("h",))
    long = Article(id="long", paragraphs=("Anna Berg went to Oslo. " * 4, "Berg came back."), highlights=("h",))
    limit = spacy_annotator.nlp.max_length
    spacy_annotator.nlp.max_length = 60           # the long body: 4 x 24 = 96 characters
    try:
        results = spacy_annotator.annotate([make_split(long, 1, 20), make_split(short, 1, 5)])
    finally:
        spacy_annotator.nlp.max_length = limit
    rejected, annotated = results
    assert rejected == Reject("annotate", "text_too_long", "long",
                              "a text of 96 characters, more than spaCy's max_length (60)")
    assert annotated.split.article.id == "short"
    assert {e.text for e in annotated.passage_entities} >= {"Anna Berg", "Oslo"}
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_missing_model_fails_with_a_clear_message():
    with pytest.raises(ModelUnavailable, match="not installed"):
        load_ner_pipeline("xx_no_such_model", "senter")


def test_a_bad_sentence_splitter_is_rejected():
    with pytest.raises(ValueError, match="annotator.sentences"):
        load_ner_pipeline("en_core_web_sm", "sentencizer")


def test_the_ner_pipeline_keeps_tok2vec_only_for_the_parser():
    # en_core_web_sm's ner and senter embed tokens themselves; only the parser listens to tok2vec.
    assert load_ner_pipeline("en_core_web_sm", "corenlp").pipe_names == ["ner"]
    assert load_ner_pipeline("en_core_web_sm", "senter").pipe_names == ["senter", "ner"]
    assert load_ner_pipeline("en_core_web_sm", "parser").pipe_names == ["tok2vec", "parser", "ner"]


def test_corenlp_sentences_need_no_model_component_and_keep_quotes_whole():
    from transforms.record.annotate.spacy_ner import required_pipes

    assert required_pipes("corenlp") == [] and required_pipes("senter") == ["senter"]
    nlp = load_ner_pipeline("en_core_web_sm", "corenlp")
    assert "senter" not in nlp.pipe_names and "parser" not in nlp.pipe_names
    quoted = '"We must wait ... the town needs a rest!" said Mayor Anna Berg in Oslo on Monday.'
    article = Article(id="a3", paragraphs=("Lead about Paris.", quoted + " Then she left for Rome."),
                      highlights=("h",))
    corenlp = SpacyAnnotator(sentences="corenlp", labels=["PERSON", "GPE"])
    [result] = corenlp.annotate([make_split(article, 1, 100)])
    assert [s.text for s in result.sentences] == [quoted, "Then she left for Rome."]
    assert {e.text for e in result.sentences[0].entities} >= {"Anna Berg", "Oslo"}


def test_ner_rules_apply_after_the_model_and_unknown_ones_are_refused():
    article = Article(id="a4", paragraphs=("Ms Anna Berg met Mr Olav Lund in Oslo on Monday.", "rest"),
                      highlights=("h",))
    plain = SpacyAnnotator(labels=["PERSON", "GPE"])
    ruled = SpacyAnnotator(labels=["PERSON", "GPE"], ner_rules=["honorifics"])
    split = make_split(article, 1, 100)
    [before], [after] = plain.annotate([split]), ruled.annotate([split])
    texts = {e.text for e in after.passage_entities}
    assert "Anna Berg" in texts and not any(t.startswith(("Ms ", "Mr ")) for t in texts)
    assert len(after.passage_entities) == len(before.passage_entities)
    with pytest.raises(ValueError, match="unknown NER rule"):
        SpacyAnnotator(ner_rules=["no_such_rule"])


class _FailsOnBoom:
    """A test annotator: raises on any article whose id contains "boom"."""

    name = "fails-on-boom"

    def __init__(self, **_options):
        pass

    def annotate(self, splits):
        from transforms.record.annotation import AnnotatedArticle

        if any("boom" in s.article.id for s in splits):
            raise RuntimeError("model crashed")
        return [AnnotatedArticle(s, (), ()) for s in splits]


def test_annotate_transform_turns_a_failing_article_into_a_reject():
    import apache_beam as beam
    from apache_beam.testing.util import assert_that, equal_to

    from data_specs import load_spec
    from tests.conftest import beam_test_pipeline
    from transforms.record.annotate.registry import ANNOTATORS
    from transforms.record.annotate.stage import Annotate

    ANNOTATORS["fails-on-boom"] = lambda annotator, coref: _FailsOnBoom()
    spec = load_spec("record", ["annotator.min_articles_per_call=3"])
    # Not a backend the spec allows: registered here, so the section is copied, not validated.
    annotator = spec.annotator.model_copy(update={"name": "fails-on-boom"})
    splits = [make_split(Article(id=i, paragraphs=("p", "q"), highlights=("h",)), 1, 1)
              for i in ("a", "boom", "c")]
    try:
        with beam_test_pipeline() as p:
            annotated, rejects, _ = p | beam.Create(splits) | Annotate(annotator, spec.coref)
            assert_that(annotated | beam.Map(lambda a: a.split.article.id), equal_to(["a", "c"]))
            assert_that(rejects | beam.Map(lambda r: (r.stage, r.reason, r.record_id)),
                        equal_to([("annotate", "annotation_error", "boom")]), label="rejects")
    finally:
        del ANNOTATORS["fails-on-boom"]


def test_propagate_names_marks_missed_occurrences_without_overlaps():
    from transforms.record.annotate.propagate import propagate_names
    from transforms.record.annotation import Mention

    segments = ["Bill Cosby spoke. Cosby left.", "Later, Cosby and Bill Cosby met Cosbyfans in May."]
    found = [Mention(0, 0, 10, "Bill Cosby", "PERSON"), Mention(0, 18, 23, "Cosby", "PERSON"),
             Mention(1, 45, 48, "May", "DATE")]
    result = propagate_names(found, segments)
    assert [(m.segment, segments[m.segment][m.start:m.end]) for m in result] == [
        (0, "Bill Cosby"), (0, "Cosby"), (1, "Cosby"), (1, "Bill Cosby"), (1, "May")]
    assert all(m.label == "PERSON" for m in result if m.text != "May")


def test_name_finder_finds_whole_words_inside_one_segment_only():
    from transforms.record.annotate.propagate import NameFinder

    segments = ["Ann met Anna.", "Ann_x, Annette, xAnn and Ann.", "Ann", "", "Ann Ann", "Müller-Ann Ann2"]
    find = NameFinder(segments)
    # Hand-listed: whole-word "Ann" (not before or after a letter, digit or "_"), per segment.
    assert find("Ann") == [(0, 0, 3), (1, 25, 28), (2, 0, 3), (4, 0, 3), (4, 4, 7), (5, 7, 10)]
    assert find("Ann\nAnn") == []                  # never across two segments
    assert find("aaa") == [] and NameFinder(["aaaa aaa"])("aaa") == [(0, 5, 8)]
    assert NameFinder(["Los Angeles, Los Angeles"])("Los Angeles") == [(0, 0, 11), (0, 13, 24)]


def test_memory_zones_free_the_new_words_and_change_no_annotation():
    from transforms.record.annotate.spacy_ner import unit_annotation

    annotator = SpacyAnnotator(labels=["PERSON", "GPE"])
    annotator.nlp.tokenizer.max_cache_size = 8   # the warm-up budget: 8 distinct words
    texts = ["Zanthorp Quibbleworth met officials from Germany in Berlin on Monday.",
             "Later that day, Quibbleworth told reporters in Vlorimsk about the trip. He left.",
             "Anna Berg went to Oslo. Then Berg flew to Rome."]
    annotator.run_model(["The first call warms the tokenizer cache, outside a zone."])   # 10 words
    zoned = annotator.run_model(texts)
    strings = annotator.nlp.vocab.strings
    assert "Quibbleworth" not in strings and "Vlorimsk" not in strings   # freed with the zone
    # The same texts through spaCy outside a zone: what the annotator gave before zones.
    plain = [unit_annotation(doc, annotator.sentences) for doc in annotator.nlp.pipe(texts)]
    assert "Quibbleworth" in strings and "Vlorimsk" in strings           # kept without one
    assert zoned == plain
    assert annotator.run_model(texts) == plain                           # a later zone alike
    germany, berlin = texts[0].index("Germany"), texts[0].index("Berlin")
    assert {(germany, germany + 7, "GPE"), (berlin, berlin + 6, "GPE")} <= set(zoned[0].entities)
    assert zoned[1].sentences[1] == (texts[1].index("He left."), len(texts[1]))


def test_the_first_texts_run_outside_zones_until_their_words_could_fill_the_cache():
    from transforms.record.annotate.spacy_ner import unit_annotation

    annotator = SpacyAnnotator(labels=["PERSON", "GPE"])
    annotator.nlp.tokenizer.max_cache_size = 6
    # 4 distinct words, then 4 more (8 >= 6 only after the second text): two texts warm.
    texts = ["Xylophrast visited Paris today.", "Brondelvik left Madrid early.",
             "Quarmely stayed in Lisbon.", "Then Zentrovar came too."]
    units = annotator.run_model(texts)
    strings = annotator.nlp.vocab.strings
    assert "Xylophrast" in strings and "Brondelvik" in strings           # outside a zone: kept
    assert "Quarmely" not in strings and "Zentrovar" not in strings      # inside one: freed
    assert annotator.run_model(["Flonderquist met Brondelvik."])
    assert "Flonderquist" not in strings                                 # later calls: zoned
    assert units == [unit_annotation(doc, annotator.sentences) for doc in annotator.nlp.pipe(texts)]


def test_a_cnn_pipeline_loads_without_importing_torch_and_torch_stays_importable():
    from tests.conftest import probe_modules

    load = ("from transforms.record.annotate.spacy_ner import load_ner_pipeline\n"
            "nlp = load_ner_pipeline('en_core_web_sm', 'corenlp')\n"
            "print([e.text for e in nlp('Tracy Morgan met officials in Berlin.').ents])\n")
    probe = probe_modules(load, ["torch"], then="import torch\nprint(torch.tensor([1, 2]).sum().item())\n",
                          timeout=120)
    assert probe.loaded == []
    assert probe.stdout.splitlines() == ["['Tracy Morgan', 'Berlin']", "3"]


def _sized(article_id: str, paragraph: int, highlight: int = 0) -> Article:
    return Article(id=article_id, paragraphs=("p" * paragraph,), highlights=("h" * highlight,) if highlight else ())


def test_by_work_orders_by_text_length_then_id():
    from transforms.record.annotate.order import annotation_work, by_work

    articles = [_sized("b", 10), _sized("a", 7, 3), _sized("c", 30), _sized("d", 1)]
    assert annotation_work(articles[1]) == 10     # paragraphs and highlights: 7 + 3 characters
    assert [a.id for a in by_work(articles)] == ["c", "a", "b", "d"]   # a ties b at 10: by id


def test_order_by_work_fn_sorts_within_chunks_and_holds_at_most_one():
    """Chunks of 2: each full chunk leaves, sorted, when it fills; the rest at the bundle's end."""
    from transforms.record.annotate.order import OrderByWorkFn

    fn = OrderByWorkFn(chunk=2)
    fn.start_bundle()
    out = []
    for article in [_sized("a", 1), _sized("b", 5), _sized("c", 9), _sized("d", 3), _sized("e", 4)]:
        out += [a.id for a in fn.process(article)]
    assert out == ["b", "a", "c", "d"]
    assert [wv.value.id for wv in fn.finish_bundle()] == ["e"]
    assert list(fn.finish_bundle()) == []


def test_order_by_work_keeps_every_article(test_pipeline):
    import apache_beam as beam
    from apache_beam.testing.util import assert_that, equal_to

    from transforms.record.annotate.order import OrderByWork

    articles = [_sized(f"x{i}", (i * 37) % 101 + 1) for i in range(25)]
    with test_pipeline as p:
        ordered = p | beam.Create(articles) | OrderByWork(chunk=4)
        assert_that(ordered | beam.Map(lambda a: a.id), equal_to([a.id for a in articles]))
