"""Stage 2 per-element logic: sentence filters in order, cloze queries, answers and ids."""
from data_specs import load_spec
from transforms.core.accounting import Reject
from transforms.record.annotation import AnnotatedArticle, Entity, Sentence
from transforms.record.article import Article, make_split
from transforms.record.curate import filter_passage, passage_row
from transforms.record.queries import make_queries, query_id, sentence_queries

BODY = ("Officials in Brighton said Mayor Ada Quill met Lumen Labs engineers at City Hall on Monday "
        "to discuss the plan for Harbor Park .")


def annotated(sentences) -> AnnotatedArticle:
    article = Article(id="p1", paragraphs=(BODY, "rest"), highlights=("Quill backs the plan",))
    split = make_split(article, 1, 120)
    find = split.text.index
    passage_entities = (
        Entity(find("Brighton"), find("Brighton") + 8, "Brighton", "GPE", 0),
        Entity(find("Ada Quill"), find("Ada Quill") + 9, "Ada Quill", "PERSON", 1),
        Entity(find("Lumen Labs"), find("Lumen Labs") + 10, "Lumen Labs", "ORG", 2),
        Entity(find("City Hall"), find("City Hall") + 9, "City Hall", "FAC", 3),
        Entity(find("Harbor Park"), find("Harbor Park") + 11, "Harbor Park", "LOC", 4),
        Entity(find("Quill backs"), find("Quill backs") + 5, "Quill", "PERSON", 1),
    )
    return AnnotatedArticle(split, passage_entities, tuple(sentences))


def sentence(index, text, *mentions):
    ents = tuple(Entity(text.index(m), text.index(m) + len(m), m, "PERSON", chain)
                 for m, chain in mentions)
    return Sentence(index, text, ents)


SPEC = load_spec("record")
GOOD = sentence(0, "Later that week Quill told reporters that construction would begin soon .",
                ("Quill", 1))


def test_each_sentence_filter_rejects_with_its_reason():
    cases = [
        sentence(1, "Quill left early .", ("Quill", 1)),
        sentence(2, "Will Quill really approve the budget before the winter holidays ?", ("Quill", 1)),
        sentence(3, "Reporters said Quill will discuss the plan for Harbor Park again tonight .",
                 ("Quill", 1)),
        sentence(4, "Nobody expected the budget vote to be delayed by another week ."),
        sentence(5, "Later that week Quill and Bo Vance told reporters nothing new .",
                 ("Quill", 1), ("Bo Vance", 9)),
    ]
    results = list(sentence_queries(annotated([GOOD, *cases]), SPEC.query))
    assert isinstance(results[0], list) and len(results[0]) == 1
    assert [r.reason for r in results[1:]] == [
        "too_short", "question", "shares_ngram", "no_entity", "entity_not_in_passage"]
    assert results[1].record_id == "p1#s1" and results[1].stage == "sentence_filter"


def test_shared_entity_names_do_not_count_as_overlap():
    shares_name_only = sentence(
        6, "Reporters later said that Mayor Ada Quill answered every question .", ("Ada Quill", 1))
    [result] = sentence_queries(annotated([shares_name_only]), SPEC.query)
    assert isinstance(result, list)  # "mayor ada quill" overlaps only through the entity


def test_queries_replace_one_mention_and_list_every_coreferent_answer():
    article = annotated([GOOD])
    [row] = make_queries("p1", GOOD, article.passage_entities)
    assert row["query"] == "Later that week @placeholder told reporters that construction would begin soon ."
    assert row["placeholder_start"] == GOOD.text.index("Quill")
    assert row["query_id"] == query_id("p1", GOOD.text, GOOD.text.index("Quill"))
    text = article.split.text
    assert [(a["text"], text[a["start"]: a["end"] + 1]) for a in row["answers"]] == [
        ("Ada Quill", "Ada Quill"), ("Quill", "Quill")]


def test_answer_rule_chain_texts_adds_same_text_mentions_of_other_chains():
    # Quill's chain (1) holds "Ada Quill" and the highlight's "Quill"; a second "Quill" (the
    # one inside "Ada Quill", given chain 7 here) belongs to another chain.
    article = annotated([GOOD])
    text = article.split.text
    inner = text.index("Ada Quill") + 4
    entities = (*article.passage_entities, Entity(inner, inner + 5, "Quill", "PERSON", 7))
    [chain] = make_queries("p1", GOOD, entities)
    [texts] = make_queries("p1", GOOD, entities, "chain_texts")
    highlight = text.rindex("Quill")
    assert [(a["start"], a["text"]) for a in chain["answers"]] == [
        (text.index("Ada Quill"), "Ada Quill"), (highlight, "Quill")]
    # The same text joins; other chains' other texts ("Lumen Labs", ...) do not.
    assert [(a["start"], a["text"]) for a in texts["answers"]] == [
        (text.index("Ada Quill"), "Ada Quill"), (inner, "Quill"), (highlight, "Quill")]


def test_passage_filter_counts_distinct_entities():
    article = annotated([])
    assert list(filter_passage(article, SPEC.passage)) == [article]
    few = AnnotatedArticle(article.split, article.passage_entities[:3], ())
    [reject] = filter_passage(few, SPEC.passage)
    assert isinstance(reject, Reject) and reject.reason == "too_few_entities"


def test_passage_row_uses_inclusive_ends():
    row = passage_row(annotated([]))
    assert all(row["text"][e["start"]: e["end"] + 1] == e["text"] for e in row["entities"])
    assert row["body_end"] == len(BODY)
