"""stanza backend: conversion of real `stanza.Document`s (built without models) and the
fail-fast check of the model files."""
from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

stanza = pytest.importorskip("stanza")
from stanza.models.coref.coref_chain import CorefChain, CorefMention  # noqa: E402

from transforms.core.models.loading import ModelUnavailable  # noqa: E402
from transforms.record.annotate.backends.stanza_backend import (  # noqa: E402
    StanzaAnnotator,
    check_stanza_resources,
    document_from_stanza,
)

RESOURCES = Path(__file__).resolve().parents[1] / "data" / "backends" / "stanza" / "resources.json"
TEXT = ("Tracy Morgan met the Ravenwood Council.\n\nHe thanked the council in Oslo."
        "\n\n@highlight\n\nMorgan visits Oslo")
# (token, NER tag) per sentence, BIOES as stanza's NER writes them.
SENTENCES = [
    [("Tracy", "B-PERSON"), ("Morgan", "E-PERSON"), ("met", "O"), ("the", "O"),
     ("Ravenwood", "B-ORG"), ("Council", "E-ORG"), (".", "O")],
    [("He", "O"), ("thanked", "O"), ("the", "O"), ("council", "O"), ("in", "O"),
     ("Oslo", "S-GPE"), (".", "O")],
    [("@highlight", "O")],
    [("Morgan", "S-PERSON"), ("visits", "O"), ("Oslo", "S-GPE")],
]


def make_document() -> stanza.Document:
    sentences, pos = [], 0
    for sentence in SENTENCES:
        tokens = []
        for i, (word, tag) in enumerate(sentence, 1):
            start = TEXT.index(word, pos)
            pos = start + len(word)
            tokens.append({"id": i, "text": word, "start_char": start, "end_char": pos, "ner": tag})
        sentences.append(tokens)
    doc = stanza.Document(sentences, text=TEXT)  # builds doc.ents from the tags
    doc.coref = [
        # "Tracy Morgan", "He", "Morgan" (end_word exclusive)
        CorefChain(0, [CorefMention(0, 0, 2), CorefMention(1, 0, 1), CorefMention(3, 0, 1)],
                   "Tracy Morgan", 0),
        # "the Ravenwood Council", "the council"
        CorefChain(1, [CorefMention(0, 3, 6), CorefMention(1, 2, 4)], "the Ravenwood Council", 0),
    ]
    # A zero-anaphora chain (no text) is skipped; appended past the setter, which would look
    # for the empty word this document lacks.
    doc.coref.append(CorefChain(2, [CorefMention(1, (1, 1), (1, 1))], "_", None))
    return doc


def test_document_from_stanza():
    annotation = document_from_stanza(make_document())
    assert [(TEXT[s:e], label) for s, e, label in annotation.mentions] == [
        ("Tracy Morgan", "PERSON"), ("Ravenwood Council", "ORG"), ("Oslo", "GPE"),
        ("Morgan", "PERSON"), ("Oslo", "GPE")]
    assert annotation.chains == (0, 1, 2, 0, 2)
    assert [TEXT[a:b] for a, b in annotation.sentences] == [
        "Tracy Morgan met the Ravenwood Council.", "He thanked the council in Oslo.",
        "@highlight", "Morgan visits Oslo"]


def test_document_without_coref_chains_by_text():
    doc = make_document()
    doc.coref = []
    assert document_from_stanza(doc).chains == (0, 1, 2, 3, 2)


def write_resources(root: Path) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / "resources.json").write_text(RESOURCES.read_text())


def test_check_names_missing_model_files(tmp_path):
    write_resources(tmp_path)
    with pytest.raises(ModelUnavailable) as error:
        check_stanza_resources(str(tmp_path))
    message = str(error.value)
    for part in ("en/tokenize/combined.pt", "en/ner/ontonotes_charlm.pt",
                 "en/coref/ontonotes_electra-large.pt", "en/pretrain/conll17.pt",
                 "stanza.download('en', processors='tokenize,ner,coref')"):
        assert part in message


def test_check_passes_when_files_exist(tmp_path):
    write_resources(tmp_path)
    for relative in ("tokenize/combined.pt", "mwt/combined.pt", "ner/ontonotes_charlm.pt",
                     "coref/ontonotes_electra-large.pt", "pretrain/conll17.pt",
                     "forward_charlm/1billion.pt", "backward_charlm/1billion.pt"):
        path = tmp_path / "en" / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"")
    assert check_stanza_resources(str(tmp_path)) == str(tmp_path)


def test_annotator_fails_fast_without_models(tmp_path, monkeypatch):
    monkeypatch.setenv("STANZA_RESOURCES_DIR", str(tmp_path))
    began = time.monotonic()
    with pytest.raises(ModelUnavailable) as error:
        StanzaAnnotator()
    assert time.monotonic() - began < 5
    message = str(error.value)
    assert "no resources.json in " + str(tmp_path) in message
    assert re.search(r"stanza\.download\('en', processors='tokenize,ner,coref'\)", message)
    assert list(tmp_path.iterdir()) == []  # nothing downloaded


def test_unreadable_resources(tmp_path):
    (tmp_path / "resources.json").write_text(json.dumps({"fr": {}}))
    with pytest.raises(ModelUnavailable, match="no language 'en'"):
        check_stanza_resources(str(tmp_path))
