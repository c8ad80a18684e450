"""Read `allennlp predict` output (coreference + NER) into `DocumentAnnotation`s.

AllenNLP runs outside this project (it needs Python 3.8/3.9); this module writes its input
files and reads its predictions. Predictions carry no article id, so each prediction file is
paired with its input file line by line (`pair_lines`); AllenNLP skips blank input lines, and so
does `pair_lines`.

Producing the predictions
-------------------------
In a separate Python 3.8/3.9 environment (the URLs are the model archives AllenNLP published)::

    python3.9 -m venv allennlp-env && . allennlp-env/bin/activate
    pip install allennlp==2.10.1 allennlp-models==2.10.1
    python -m spacy download en_core_web_sm
    # coref_input.jsonl / ner_input.jsonl: the lines of `write_inputs(articles)`
    allennlp predict \
        https://storage.googleapis.com/allennlp-public-models/coref-spanbert-large-2021.03.10.tar.gz \
        coref_input.jsonl --output-file coref_pred.jsonl --cuda-device 0 --silent
    allennlp predict \
        https://storage.googleapis.com/allennlp-public-models/ner-elmo.2021-02-12.tar.gz \
        ner_input.jsonl --predictor sentence_tagger --output-file ner_pred.jsonl \
        --cuda-device 0 --silent

Do not pass `--use-dataset-reader`: the predictors must read the JSON lines (`document` for
coreference, `sentence` for NER). The fine-grained OntoNotes tagger
(`fine-grained-ner.2021-02-11.tar.gz`) works the same way; its labels are kept as they are.
"""
from __future__ import annotations

import json
import re
from itertools import zip_longest
from typing import Any, Iterable, Iterator, Optional, Sequence

from transforms.record.annotate.backends import chain_mentions
from transforms.record.annotation import AnnotationError, DocumentAnnotation
from transforms.record.article import Article, article_document, document_offsets

# CoNLL labels to spaCy's names; any other label (OntoNotes) is kept.
LABELS = {"PER": "PERSON", "LOC": "LOC", "ORG": "ORG", "MISC": "MISC"}
# Tokens a tokenizer may write differently from the text (PTB escapes, quotes).
_VARIANTS = {
    "``": ('"', "“", "``"), "''": ('"', "”", "''"), '"': ('"', "“", "”"),
    "-LRB-": ("(",), "-RRB-": (")",), "-LSB-": ("[",), "-RSB-": ("]",),
    "-LCB-": ("{",), "-RCB-": ("}",),
}
_ABBREVIATIONS = frozenset({
    "mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "mt", "ft", "gen", "gov", "sen", "rep",
    "lt", "col", "capt", "sgt", "insp", "det", "supt", "rev", "no", "vs", "etc", "inc", "ltd",
    "co", "corp", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov",
    "dec", "u.s", "u.k", "u.n", "e.g", "i.e", "a.m", "p.m",
})
_SENTENCE_END = re.compile(r"[.!?]+[\"'”’)\]]*(?=\s+[\"'“‘(\[]?[A-Z0-9])")


def align_tokens(text: str, tokens: Sequence[str], start: int = 0) -> list[tuple[int, int]]:
    """Character span (start, end exclusive) of each token in `text`, searched in order from `start`.

    Whitespace between tokens is skipped; a whitespace-only token (spaCy's "\\n\\n") takes the
    whitespace it names, or an empty span. PTB escapes and straight/curly quotes match each
    other. Raises AnnotationError("misaligned_tokens") at the first token not found.
    """
    spans: list[tuple[int, int]] = []
    pos = start
    for i, token in enumerate(tokens):
        nonspace = pos
        while nonspace < len(text) and text[nonspace].isspace():
            nonspace += 1
        if not token.strip():
            found = text.find(token, pos, nonspace) if token else -1
            spans.append((found, found + len(token)) if found >= 0 else (pos, pos))
            pos = spans[-1][1]
            continue
        for form in (token, *_VARIANTS.get(token, ())):
            if text.startswith(form, nonspace):
                spans.append((nonspace, nonspace + len(form)))
                pos = nonspace + len(form)
                break
        else:
            raise AnnotationError(
                "misaligned_tokens",
                f"token {i} {token!r} not at offset {nonspace}: {text[nonspace:nonspace + 30]!r}")
    return spans


def decode_tags(tags: Sequence[str]) -> list[tuple[int, int, str]]:
    """Spans (first word, last word inclusive, label) of BIO or BIOUL (or BIOES) tags.

    Lenient: an I-/L- without a matching open span starts one, and a label change closes the
    open span.
    """
    spans: list[tuple[int, int, str]] = []
    open_start: Optional[int] = None
    open_label = ""

    def close(last: int) -> None:
        nonlocal open_start
        if open_start is not None:
            spans.append((open_start, last, open_label))
            open_start = None

    for i, tag in enumerate(tags):
        prefix, _, label = tag.partition("-")
        if tag == "O" or not label:
            close(i - 1)
            continue
        if prefix in ("B", "U", "S") or open_start is None or label != open_label:
            close(i - 1)
            open_start, open_label = i, label
        if prefix in ("U", "S", "L", "E"):
            close(i)
    close(len(tags) - 1)
    return spans


def split_sentences(text: str, start: int = 0) -> list[tuple[int, int]]:
    """Sentence spans of `text` (offsets + `start`) by a punctuation rule, whitespace trimmed.

    A sentence ends at . ! or ? (plus closing quotes/brackets) followed by whitespace and a
    capital, digit or opening quote, unless the word before the dot is a known abbreviation or
    a single letter (an initial).
    """
    spans: list[tuple[int, int]] = []
    begin = 0
    for match in _SENTENCE_END.finditer(text):
        word = text[:match.start()].rsplit(None, 1)[-1] if text[:match.start()].strip() else ""
        word = word.lstrip("\"'“‘([").lower()
        if match.group().startswith(".") and (word in _ABBREVIATIONS or len(word) == 1):
            continue
        spans.append((begin, match.end()))
        begin = match.end()
    spans.append((begin, len(text)))
    trimmed = []
    for a, b in spans:
        piece = text[a:b]
        if piece.strip():
            a += len(piece) - len(piece.lstrip())
            b -= len(piece) - len(piece.rstrip())
            trimmed.append((a + start, b + start))
    return trimmed


def article_sentences(article: Article) -> list[tuple[int, int]]:
    """Sentence spans in `article_document(article)` of each paragraph and highlight."""
    paragraph_starts, highlight_starts = document_offsets(article)
    spans: list[tuple[int, int]] = []
    for part, offset in zip(article.paragraphs + article.highlights,
                            paragraph_starts + highlight_starts):
        spans.extend(split_sentences(part, offset))
    return spans


def write_inputs(articles: Iterable[Article]) -> tuple[list[str], list[str]]:
    """JSON lines for `allennlp predict`: one coreference line per article, one NER line per
    sentence (`{"sentence", "id", "offset"}`, offset in the article document)."""
    coref_lines, ner_lines = [], []
    for article in articles:
        document = article_document(article)
        coref_lines.append(json.dumps({"document": document, "id": article.id}, ensure_ascii=False))
        for a, b in article_sentences(article):
            ner_lines.append(json.dumps({"sentence": document[a:b], "id": article.id, "offset": a},
                                        ensure_ascii=False))
    return coref_lines, ner_lines


def pair_lines(input_lines: Iterable[str], prediction_lines: Iterable[str]
               ) -> Iterator[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(article id, input, prediction) for input and prediction lines in the same order.

    Blank lines are skipped on both sides, as `allennlp predict` skips blank inputs. Raises
    ValueError naming both counts when one file runs out before the other.
    """
    inputs = (line for line in input_lines if line.strip())
    predictions = (line for line in prediction_lines if line.strip())
    count = 0
    for source, prediction in zip_longest(inputs, predictions):
        if source is None or prediction is None:
            longer = "predictions" if source is None else "inputs"
            extra = sum(1 for _ in (predictions if source is None else inputs)) + 1
            raise ValueError(
                f"AllenNLP inputs and predictions differ in length: {count} pairs, then {extra} "
                f"more {longer}; was the prediction file written from this input file?")
        count += 1
        record = json.loads(source)
        yield str(record.get("id", "")), record, json.loads(prediction)


def _field(record: dict[str, Any], key: str) -> Any:
    if key not in record:
        raise AnnotationError("bad_prediction", f"prediction has no {key!r}")
    return record[key]


def document_annotation(document_text: str, coref_pred: Optional[dict[str, Any]],
                        ner_preds: Sequence[tuple[dict[str, Any], dict[str, Any]]]
                        ) -> DocumentAnnotation:
    """Combine one article's coreference prediction and its NER (input, prediction) pairs.

    `coref_pred` is a coreference output line (`document` tokens, `clusters` of inclusive token
    spans), or None for no coreference. Each NER pair is the sentence input line (`sentence`,
    `offset`) and its tagger output (`words`, `tags`). Raises AnnotationError.
    """
    clusters: list[list[tuple[int, int]]] = []
    if coref_pred is not None:
        token_spans = align_tokens(document_text, _field(coref_pred, "document"))
        for cluster in _field(coref_pred, "clusters"):
            spans = []
            for first, last in cluster:
                if not 0 <= first <= last < len(token_spans):
                    raise AnnotationError("bad_token_offsets",
                                          f"cluster span {[first, last]} of {len(token_spans)} tokens")
                spans.append((token_spans[first][0], token_spans[last][1]))
            clusters.append(spans)
    mentions: list[tuple[int, int, str]] = []
    sentences: list[tuple[int, int]] = []
    for source, prediction in ner_preds:
        sentence, offset = _field(source, "sentence"), int(_field(source, "offset"))
        if document_text[offset:offset + len(sentence)] != sentence:
            raise AnnotationError("misaligned_tokens",
                                  f"sentence at offset {offset} differs from the document")
        sentences.append((offset, offset + len(sentence)))
        words, tags = _field(prediction, "words"), _field(prediction, "tags")
        if len(words) != len(tags):
            raise AnnotationError("bad_prediction", f"{len(words)} words but {len(tags)} tags")
        word_spans = align_tokens(sentence, words)
        for first, last, label in decode_tags(tags):
            mentions.append((offset + word_spans[first][0], offset + word_spans[last][1],
                             LABELS.get(label, label)))
    return chain_mentions(document_text, mentions, clusters, sorted(sentences))
