"""AllenNLP coreference + NER predictions (hand-written in its output format) read back."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from transforms.record.annotate.backends.allennlp import (
    align_tokens,
    decode_tags,
    document_annotation,
    pair_lines,
    split_sentences,
    write_inputs,
)
from transforms.record.annotation import AnnotationError
from transforms.record.article import Article, article_document

DATA = Path(__file__).resolve().parents[1] / "data" / "backends" / "allennlp"
ARTICLES = [
    Article("a1b2c3", ("Tracy Morgan met the Ravenwood Council on Monday.",
                       "Morgan said he would return.  The council agreed."),
            ("Morgan visits Ravenwood",)),
    Article("d4e5f6", ("Ada Lindqvist joined Kestrel Labs in Oslo. Mr. Hale did not.",
                       "Kestrel Labs thanked Ada Lindqvist."),
            ("Lindqvist moves to Oslo",)),
]


def lines(name: str) -> list[str]:
    return (DATA / name).read_text(encoding="utf-8").splitlines()


def annotations(coref_pred_file: str = "coref_pred.jsonl"):
    ner: dict[str, list] = {}
    for article_id, source, prediction in pair_lines(lines("ner_input.jsonl"),
                                                     lines("ner_pred.jsonl")):
        ner.setdefault(article_id, []).append((source, prediction))
    result = {}
    for article_id, source, prediction in pair_lines(lines("coref_input.jsonl"),
                                                     lines(coref_pred_file)):
        result[article_id] = document_annotation(source["document"], prediction, ner[article_id])
    return result


def texts(annotation, document):
    return [(document[s:e], label) for s, e, label in annotation.mentions]


def test_write_inputs_matches_files():
    coref, ner = write_inputs(ARTICLES)
    assert coref == lines("coref_input.jsonl")
    assert ner == lines("ner_input.jsonl")
    document = article_document(ARTICLES[0])
    for line in ner:
        record = json.loads(line)
        if record["id"] == "a1b2c3":
            offset = record["offset"]
            assert document[offset:offset + len(record["sentence"])] == record["sentence"]


def test_sentence_splitter_keeps_abbreviations_and_initials():
    text = 'Mr. Hale met J. K. Rowe in the U.S. on Friday. "Fine," he said! Then 3 left.'
    pieces = [text[a:b] for a, b in split_sentences(text)]
    assert pieces == ['Mr. Hale met J. K. Rowe in the U.S. on Friday.', '"Fine," he said!',
                      "Then 3 left."]


def test_align_tokens_whitespace_and_quotes():
    text = "He said  “no” (twice).\n\nEnd"
    tokens = ["He", "said", " ", "``", "no", "''", "-LRB-", "twice", "-RRB-", ".", "\n\n", "End"]
    spans = align_tokens(text, tokens)
    assert [text[a:b] for a, b in spans] == ["He", "said", " ", "“", "no", "”", "(", "twice",
                                             ")", ".", "\n\n", "End"]


def test_align_tokens_misaligned():
    with pytest.raises(AnnotationError) as error:
        align_tokens("Tracy Morgan", ["Tracy", "Morgen"])
    assert error.value.reason == "misaligned_tokens"
    assert "'Morgen'" in error.value.detail and "offset 6" in error.value.detail


def test_decode_bioul_bio_and_lenient():
    assert decode_tags(["B-PER", "L-PER", "O", "U-LOC", "B-ORG", "I-ORG", "L-ORG"]) == [
        (0, 1, "PER"), (3, 3, "LOC"), (4, 6, "ORG")]
    assert decode_tags(["B-PER", "I-PER", "B-PER", "O", "B-GPE"]) == [
        (0, 1, "PER"), (2, 2, "PER"), (4, 4, "GPE")]
    assert decode_tags(["O", "I-ORG", "I-ORG", "I-LOC", "L-MISC"]) == [
        (1, 2, "ORG"), (3, 3, "LOC"), (4, 4, "MISC")]


def test_coref_clusters_give_chains():
    annotation = annotations()["a1b2c3"]
    document = article_document(ARTICLES[0])
    assert texts(annotation, document) == [
        ("Tracy Morgan", "PERSON"), ("Ravenwood Council", "ORG"), ("Morgan", "PERSON"),
        ("Morgan", "PERSON"), ("Ravenwood", "LOC")]
    # Ravenwood Council lies inside the cluster mention "the Ravenwood Council"; the
    # highlight's "Ravenwood" is in no cluster and shares no text with one: its own chain.
    assert annotation.chains == (0, 1, 0, 0, 2)
    assert [document[a:b] for a, b in annotation.sentences] == [
        "Tracy Morgan met the Ravenwood Council on Monday.", "Morgan said he would return.",
        "The council agreed.", "Morgan visits Ravenwood"]


def test_empty_clusters_chain_by_exact_text():
    annotation = annotations()["d4e5f6"]
    document = article_document(ARTICLES[1])
    assert [t for t, _ in texts(annotation, document)] == [
        "Ada Lindqvist", "Kestrel Labs", "Oslo", "Hale", "Kestrel Labs", "Ada Lindqvist",
        "Lindqvist", "Oslo"]
    assert annotation.chains == (0, 1, 2, 3, 1, 0, 4, 2)


def test_unclustered_mention_joins_cluster_with_same_text():
    document = "Nia Brook spoke. Nia Brook left. Nia Brook"
    coref = {"document": ["Nia", "Brook", "spoke", ".", "Nia", "Brook", "left", ".", "Nia",
                          "Brook"], "clusters": [[[0, 1], [4, 5]]]}
    ner = [({"sentence": document, "offset": 0},
            {"words": coref["document"],
             "tags": ["B-PER", "L-PER", "O", "O", "B-PER", "L-PER", "O", "O", "B-PER", "L-PER"]})]
    assert document_annotation(document, coref, ner).chains == (0, 0, 0)


def test_misaligned_coref_tokens():
    with pytest.raises(AnnotationError) as error:
        annotations("coref_pred_misaligned.jsonl")
    assert error.value.reason == "misaligned_tokens"


def test_out_of_range_cluster():
    coref = {"document": ["Nia", "Brook"], "clusters": [[[0, 4]]]}
    with pytest.raises(AnnotationError) as error:
        document_annotation("Nia Brook", coref, [])
    assert error.value.reason == "bad_token_offsets"


def test_sentence_offset_mismatch():
    ner = [({"sentence": "Brook", "offset": 0}, {"words": ["Brook"], "tags": ["U-PER"]})]
    with pytest.raises(AnnotationError) as error:
        document_annotation("Nia Brook", None, ner)
    assert error.value.reason == "misaligned_tokens"


def test_pair_lines_count_mismatch():
    with pytest.raises(ValueError, match="1 pairs, then 1 more inputs"):
        list(pair_lines(lines("coref_input.jsonl"), lines("coref_pred_short.jsonl")))
