"""Whole-document annotations placed into passage and rest-sentence coordinates."""
import pytest

from transforms.record.annotate.document import assemble_document
from transforms.record.annotate.spans import trim_span
from transforms.record.annotation import AnnotationError, DocumentAnnotation
from transforms.record.article import Article, article_document, make_split

ARTICLE = Article(
    id="a1",
    paragraphs=("Ada Quill met Bo Vance in Leeds.", "They spoke.",
                "Later Quill told reporters in Leeds that the deal was done. Vance agreed."),
    highlights=("Quill signs deal",),
)


def mention(document: str, text: str, nth: int = 0, label: str = "PERSON"):
    start = -1
    for _ in range(nth + 1):
        start = document.index(text, start + 1)
    return (start, start + len(text), label)


def test_mentions_land_in_passage_highlights_and_rest_sentences():
    split = make_split(ARTICLE, 2, 100)
    doc = article_document(ARTICLE)
    mentions = (mention(doc, "Ada Quill"), mention(doc, "Bo Vance"), mention(doc, "Leeds", 0, "GPE"),
                mention(doc, "Quill", 1), mention(doc, "Leeds", 1, "GPE"), mention(doc, "Vance", 1),
                mention(doc, "Quill", 2))
    chains = (7, 3, 5, 7, 5, 3, 7)
    result = assemble_document(split, DocumentAnnotation(mentions, chains))
    text = split.text
    assert [(text[e.start:e.end], e.chain) for e in result.passage_entities] == [
        ("Ada Quill", 0), ("Bo Vance", 1), ("Leeds", 2), ("Quill", 0)]
    assert [s.text for s in result.sentences] == [
        "Later Quill told reporters in Leeds that the deal was done.", "Vance agreed."]
    first, second = result.sentences
    assert [(first.text[e.start:e.end], e.chain) for e in first.entities] == [("Quill", 0), ("Leeds", 2)]
    assert [(e.text, e.chain) for e in second.entities] == [("Vance", 1)]


def test_tool_sentences_are_clipped_to_paragraphs_and_trim_applies():
    split = make_split(ARTICLE, 2, 100)
    doc = article_document(ARTICLE)
    rest = doc.index("Later")
    one_sentence = ((rest, len(doc)),)   # a tool sentence running past the paragraph end
    ann = DocumentAnnotation((mention(doc, "Quill", 1), mention(doc, "the deal", 0, "ORG")), (0, 1),
                             one_sentence)
    result = assemble_document(split, ann, trim=trim_span)
    [sentence] = result.sentences
    assert sentence.text == ARTICLE.paragraphs[2]
    assert [e.text for e in sentence.entities] == ["Quill", "deal"]


def test_bad_offsets_and_mismatched_chains_are_errors():
    split = make_split(ARTICLE, 2, 100)
    with pytest.raises(AnnotationError) as error:
        assemble_document(split, DocumentAnnotation(((0, 10_000, "PERSON"),), (0,)))
    assert error.value.reason == "bad_mention_offsets"
    with pytest.raises(AnnotationError) as error:
        assemble_document(split, DocumentAnnotation(((0, 3, "PERSON"),), ()))
    assert error.value.reason == "chains_mismatch"
