"""NLTK's improved Treebank word tokenizer (``nltk.tokenize.NLTKWordTokenizer``), vendored.

``nltk.word_tokenize`` runs this tokenizer on each sentence, and the official ProtoQA evaluator
tokenises answers with it. Importing it from NLTK is slow, because any ``nltk.tokenize``
import first imports the whole of ``nltk``, which is more than the rest of
``csdata protoqa score`` needs. So the rules are copied here: the same regular expressions and
substitutions, in the same order, as NLTK 3.10.4 (the version pinned in pyproject.toml). They
are compiled with the engines NLTK itself uses: NLTK compiles its own patterns through
``nltk.redos``, which uses the third-party ``regex`` module (installed with NLTK), and it
compiles the MacIntyre contractions with the stdlib ``re``. Same engines, so the same
``\\w``/``\\s``/``\\b`` classes and the same tokens. ``redos`` also puts a 5 s time limit on each
match; that limit never changes a result, so it is left out. ``convert_parentheses`` is left
out too (``word_tokenize`` never sets it).
tests/protoqa/test_treebank.py compares the output with NLTK's tokenizer on varied strings and
on every answer of the real dev files when they are present.

Rules copied from NLTK (Apache License 2.0; Copyright (C) 2001-2026 NLTK Project; authors
Liling Tan, Tom Aarsen), nltk/tokenize/destructive.py.
"""
from __future__ import annotations

import re
from typing import List, Tuple

import regex

_Rule = Tuple["regex.Pattern[str]", str]


def _rules(*pairs: Tuple[str, str, int]) -> List[_Rule]:
    return [(regex.compile(pattern, flags), substitution) for pattern, substitution, flags in pairs]


STARTING_QUOTES = _rules(
    ("([«“‘„]|[`]+)", r" \1 ", re.U),
    (r"^\"", r"``", 0),
    (r"(``)", r" \1 ", 0),
    (r"([ \(\[{<])(\"|\'{2})", r"\1 `` ", 0),
    (r"(?i)(?<!\w)(\')(?!(?:re|ve|ll|m|t|s|d|n)\b)(?=\w)", r"\1 ", re.U),
)

ENDING_QUOTES = _rules(
    ("([»”’])", r" \1 ", re.U),
    (r"''", " '' ", 0),
    (r'"', " '' ", 0),
    (r"\s+", " ", 0),
    (r"([^' ])('[sS]|'[mM]|'[dD]|') ", r"\1 \2 ", 0),
    (r"([^' ])('ll|'LL|'re|'RE|'ve|'VE|n't|N'T) ", r"\1 \2 ", 0),
)

PUNCTUATION = _rules(
    (r'([^\.])(\.)([\]\)}>"\'' "»”’ " r"]*+)\s*$", r"\1 \2 \3 ", re.U),
    (r"([:,])([^\d])", r" \1 \2", 0),
    (r"([:,])$", r" \1 ", 0),
    (r"\.{2,}", r" \g<0> ", re.U),
    (r"[;@#$%&]", r" \g<0> ", 0),
    (r"[\u2012-\u2015]", r" \g<0> ", re.UNICODE),
    (r'([^\.])(\.)([\]\)}>"\']*)\s*$', r"\1 \2\3 ", 0),
    (r"[?!]", r" \g<0> ", 0),
    (r"([^'])' ", r"\1 ' ", 0),
    (r"[*]", r" \g<0> ", re.U),
)

PARENS_BRACKETS = _rules((r"[\]\[\(\)\{\}\<\>]", r" \g<0> ", 0))
DOUBLE_DASHES = _rules((r"--", r" -- ", 0))

# Robert MacIntyre's contractions; NLTK compiles these with the stdlib `re`.
CONTRACTIONS2 = [re.compile(p) for p in (
    r"(?i)\b(can)(?#X)(not)\b",
    r"(?i)\b(d)(?#X)('ye)\b",
    r"(?i)\b(gim)(?#X)(me)\b",
    r"(?i)\b(gon)(?#X)(na)\b",
    r"(?i)\b(got)(?#X)(ta)\b",
    r"(?i)\b(lem)(?#X)(me)\b",
    r"(?i)\b(more)(?#X)('n)\b",
    r"(?i)\b(wan)(?#X)(na)(?=\s)",
)]
CONTRACTIONS3 = [re.compile(p) for p in (r"(?i) ('t)(?#X)(is)\b", r"(?i) ('t)(?#X)(was)\b")]


def word_tokenize_sentence(text: str) -> List[str]:
    """``NLTKWordTokenizer().tokenize(text)``: the Treebank tokens of one sentence."""
    for rules in (STARTING_QUOTES, PUNCTUATION, PARENS_BRACKETS, DOUBLE_DASHES):
        for pattern, substitution in rules:
            text = pattern.sub(substitution, text)
    text = " " + text + " "
    for pattern, substitution in ENDING_QUOTES:
        text = pattern.sub(substitution, text)
    for contraction in CONTRACTIONS2 + CONTRACTIONS3:
        text = contraction.sub(r" \1 \2 ", text)
    return text.split()
