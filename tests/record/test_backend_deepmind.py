"""DeepMind rc-data metadata (tokens/, entities/, .question) read into DocumentAnnotations."""
from __future__ import annotations

from pathlib import Path

import pytest

from transforms.record.annotate.backends.deepmind import (
    document_annotation,
    parse_entity_mapping,
    parse_question_file,
    parse_token_mapping,
    read_article_metadata,
)
from transforms.record.annotation import AnnotationError

ROOT = Path(__file__).resolve().parents[1] / "data" / "backends" / "deepmind"
GOOD = "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c"
BAD_OFFSETS = "1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d"
BAD_ENTITY = "2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e"
NO_ENTITIES = "3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f"


def story(article_id: str) -> str:
    return (ROOT / "stories" / f"{article_id}.story").read_text(encoding="utf-8")


def annotate(article_id: str, **options):
    tokens, entities = read_article_metadata(str(ROOT), article_id)
    return document_annotation(story(article_id), tokens, entities, **options)


def test_token_mapping_is_inclusive_and_sorted_by_end():
    assert parse_token_mapping("5,6;0,3;\n") == [(0, 3), (5, 11)]
    assert parse_token_mapping("") == []


def test_entity_mapping_sorted_by_last_token():
    assert parse_entity_mapping("1,3,3;3,0,1;") == [(3, 0, 1), (1, 3, 3)]


def test_malformed_mapping_is_an_annotation_error():
    with pytest.raises(AnnotationError) as error:
        parse_token_mapping("0,3;5")
    assert error.value.reason == "bad_token_offsets"


def test_document_annotation_byte_offsets_and_chains():
    text = story(GOOD)
    annotation = annotate(GOOD)
    spans = [(text[s:e], label) for s, e, label in annotation.mentions]
    assert spans == [("Lena Ørsted", "ENTITY"), ("Kalmar", "ENTITY"), ("Ørsted", "ENTITY"),
                     ("Kalmar", "ENTITY"), ("Ørsted", "ENTITY"), ("Kalmar", "ENTITY")]
    # @entity3 appears first, so it becomes chain 0 and @entity1 chain 1.
    assert annotation.chains == (0, 1, 0, 1, 0, 1)
    assert [m[:2] for m in annotation.mentions] == sorted(m[:2] for m in annotation.mentions)
    assert text[annotation.mentions[-2][0]:].startswith("Ørsted in Kalmar")


def test_character_offsets_mode():
    text = "Ada met Bo."
    annotation = document_annotation(text, "0,2;4,2;8,1;10,0", "0,0,0;1,2,2", unit="chars")
    assert [text[s:e] for s, e, _ in annotation.mentions] == ["Ada", "Bo"]
    assert annotation.chains == (0, 1)


def test_offsets_outside_the_story():
    with pytest.raises(AnnotationError) as error:
        annotate(BAD_OFFSETS)
    assert error.value.reason == "bad_token_offsets"


def test_offset_inside_a_utf8_character():
    with pytest.raises(AnnotationError) as error:
        document_annotation("Ørsted", "1,4", "0,0,0")
    assert error.value.reason == "bad_token_offsets"


def test_entity_on_whitespace_is_misaligned():
    with pytest.raises(AnnotationError) as error:
        document_annotation("Ada met Bo.", "1,2", "0,0,0", unit="chars")
    assert error.value.reason == "misaligned_tokens"


def test_entity_tokens_out_of_range():
    with pytest.raises(AnnotationError) as error:
        annotate(BAD_ENTITY)
    assert error.value.reason == "bad_entity_tokens"


def test_empty_entities_line_gives_no_mentions():
    annotation = annotate(NO_ENTITIES)
    assert annotation.mentions == () and annotation.chains == ()


def test_missing_metadata_file():
    with pytest.raises(AnnotationError) as error:
        read_article_metadata(str(ROOT), "ffffffffffffffffffffffffffffffffffffffff")
    assert error.value.reason == "annotation_missing"
    assert "tokens/ffff" in error.value.detail


def test_question_file():
    path = next((ROOT / "questions" / "training").glob("*.question"))
    url, context, question, answer, names = parse_question_file(path.read_text(encoding="utf-8"))
    assert url == "http://www.example.com/news/2015/03/ravens-return.html"
    assert context.startswith("@entity3 visited") and question == "@placeholder in @entity1"
    assert answer == "@entity3"
    assert names == {"@entity3": "Lena Ørsted", "@entity1": "Kalmar"}


def test_check_entity_names_against_question_file_names():
    from transforms.record.annotate.backends.deepmind import check_entity_names

    story = "Ana Ruiz met Wal - Mart staff.\n\n@highlight\n\nRuiz smiled"
    tokens = [(0, 2), (4, 7), (9, 11), (13, 15), (17, 17), (19, 22), (24, 28), (29, 29)]
    tokens_line = ";".join(f"{s},{e - s}" for s, e in tokens)
    entities_line = "0,0,1;1,3,5"
    check_entity_names(story, tokens_line, entities_line, {"@entity0": "Ana Ruiz", "@entity1": "Wal-Mart"})
    check_entity_names(story, tokens_line, entities_line, {})   # no names: nothing to check
    with pytest.raises(AnnotationError) as error:
        check_entity_names(story, tokens_line, entities_line, {"@entity0": "Ann Ruiz"})
    assert error.value.reason == "entity_name_mismatch"
