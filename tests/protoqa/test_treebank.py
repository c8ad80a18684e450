"""The vendored tokenizer (transforms/protoqa/treebank.py) against NLTK's own.

The reference is ``nltk.tokenize.NLTKWordTokenizer``, the tokenizer that ``nltk.word_tokenize``
(and so the official ProtoQA evaluator) runs on each sentence. It is not the older
``TreebankWordTokenizer``, which treats curly quotes and some other cases differently.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from nltk.tokenize.destructive import NLTKWordTokenizer

from tests.conftest import probe_modules
from transforms.protoqa import wordnet as pw
from transforms.protoqa.treebank import word_tokenize_sentence

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared" / "samples" / "protoqa"
NLTK = NLTKWordTokenizer()

# Made up for this test, one or more per rule of the tokenizer.
STRINGS = [
    "", " ", "\t\n", "dog", "hot dog", "  spaced   out  ",
    # contractions, clitics, possessives
    "they're snakes.", "don't", "DON'T stop", "I'm", "we'll", "you've", "she'd", "it's", "it'S",
    "cannot", "Cannot", "gonna", "gotta", "gimme", "lemme", "wanna go", "wanna", "d'ye", "more'n",
    "'tis true", "'twas night", "whaddya", "whatcha", "y'all", "ma'am", "o'clock", "rock 'n' roll",
    "'em", "the dogs' bowls", "James's car", "Jones' house", "can't won't shan't", "N'T",
    # quotes of every kind
    '"good game"', 'he said "hi"', "''quoted''", "``tex quotes''", "`single`", "'single'",
    "“curly”", "‘curly single’", "«chevrons»", "„low-9“", "say “hello” to ‘them’", '("nested")',
    "a ' b", "x' y",
    # sentence-final punctuation, abbreviations, ellipses
    "the end.", "the end. ", "U.S.", "e.g. a cat", "Mr. Smith.", "wait...", "wait... what",
    "no.", "(the end.)", 'he said "stop."', "yes!", "why?", "what?!", "a.b.c", "3.88",
    # colons, commas, numbers, symbols
    "3:30", "a:b", "a: b", "list,", "1,000", "a,b", "a, b", "$3.88", "100%", "AT&T", "@home",
    "#1", "a;b", "**bold**", "x*y", "hi -- there", "a--b", "pre-made", "em—dash", "en–dash",
    "figure‒dash", "bar―bar",
    # brackets
    "(roughly 3,36 euros)", "[brackets]", "{braces}", "<angle>", "f(x)",
    # unicode letters and spaces (the regex engine's \\s and \\w)
    "café au lait", "naïve", "ß", "Ωmega", "東京", "emoji 🐶 dog", "a\u00a0b", "a\u2009b", "a\u3000b",
    "a\u200bb", "a\x1cb", "a\x85b", "tab\tand\nnewline",
    # an answer cut at 50 characters, as the scorer does
    "a very long answer that goes on and on past the fift"[:50],
]


@pytest.mark.parametrize("text", STRINGS)
def test_tokens_equal_nltk(text):
    assert word_tokenize_sentence(text) == NLTK.tokenize(text)


def test_tokens_by_hand():
    """Expected tokens worked out by hand from the Treebank conventions."""
    assert word_tokenize_sentence("they're snakes.") == ["they", "'re", "snakes", "."]
    assert word_tokenize_sentence('"good game"') == ["``", "good", "game", "''"]
    assert word_tokenize_sentence("cannot") == ["can", "not"]
    assert word_tokenize_sentence("$3.88 (roughly)") == ["$", "3.88", "(", "roughly", ")"]


@pytest.mark.skipif(not SHARED.exists(), reason="needs ../shared/samples/protoqa")
def test_tokens_equal_nltk_on_the_real_dev_answers():
    strings = set()
    for line in (SHARED / "dev.crowdsourced.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            strings.update(a for c in row["answers"]["clusters"].values() for a in c["answers"])
    predictions = json.loads((SHARED / "dev.predictions.gpt2finetuned.json").read_text(encoding="utf-8"))
    for answers in predictions.values():
        strings.update(a.lower()[:50].strip() for a in answers)
    assert len(strings) > 1000
    differing = [s for s in strings
                 if pw.tokenize(s) != tuple(t for sent in pw.split_sentences(s) for t in NLTK.tokenize(sent))]
    assert differing == []


def test_scoring_does_not_import_nltk():
    probe = probe_modules("from transforms.protoqa import wordnet as pw; "
                          "print(pw.content_tokens(\"they're the snakes.\"))", ["nltk"])
    assert probe.loaded == []
    assert probe.stdout == "(\"'re\", 'snakes', '.')"   # "'re" is not a stopword ("re" is)
