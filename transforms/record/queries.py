"""Stage 2 of ReCoRD (§3.2): passage entity filter, query-sentence filters and cloze queries.

Ids follow the published dataset: passage id = sha1(URL); query id =
`{passage id}-{sha1(original sentence, UTF-8)}-{offset of "@placeholder" in the query}`.
"""
from __future__ import annotations

import hashlib
from typing import Callable, Iterator, Union

from data_specs.models import QuerySection
from filters import record as record_filters
from filters.text import tokenize, word_ngrams
from transforms.core.accounting import Reject
from transforms.record.annotation import AnnotatedArticle, Entity, Sentence

PLACEHOLDER = "@placeholder"

SENTENCE_STAGE = "sentence_filter"

SENTENCE_FILTERS = ("min_tokens", "not_question", "no_shared_ngram", "min_entities",
                    "entities_in_passage")


def query_id(passage_id: str, sentence: str, placeholder_start: int) -> str:
    """The published ReCoRD query id."""
    digest = hashlib.sha1(sentence.encode("utf-8")).hexdigest()
    return f"{passage_id}-{digest}-{placeholder_start}"


def ngram_stopwords(query: QuerySection) -> frozenset[str]:
    """spaCy's English stop words when `query.ngram_skip_stopwords` is set, else none."""
    if not query.ngram_skip_stopwords:
        return frozenset()
    from spacy.lang.en.stop_words import STOP_WORDS

    return frozenset(STOP_WORDS)


def sentence_verdict(sentence: Sentence, passage_grams: set, passage_chains: set[int],
                     query: QuerySection, stopwords: frozenset[str] = frozenset()) -> Union[str, None]:
    """The first failing sentence filter's reason, or None when every filter passes."""
    tokens = tokenize(sentence.text)
    chains = [e.chain for e in sentence.entities]
    checks = (
        lambda: record_filters.min_tokens(tokens, query.min_tokens),
        lambda: (record_filters.not_question(sentence.text, query.question_rule)
                 if query.reject_questions else None),
        lambda: record_filters.no_shared_ngram(
            sentence.text, passage_grams, query.ngram,
            [(e.start, e.end) for e in sentence.entities] if query.ngram_skip_entities else (),
            stopwords),
        lambda: record_filters.min_entities(chains, query.min_entities),
        lambda: (record_filters.entities_in_passage(chains, passage_chains)
                 if query.require_entities_in_passage else None),
    )
    for check in checks:
        verdict = check()
        if verdict:
            return verdict
    return None


def chain_answers(mention: Entity, passage_entities: tuple[Entity, ...]) -> list[Entity]:
    """Answer rule `chain`: the passage mentions in the placeholder mention's chain."""
    return [e for e in passage_entities if e.chain == mention.chain]


def chain_text_answers(mention: Entity, passage_entities: tuple[Entity, ...]) -> list[Entity]:
    """Answer rule `chain_texts`: the chain's passage mentions and every passage mention whose
    text equals one of theirs, whatever its chain (a "Smith" of another Smith's chain too)."""
    texts = {e.text for e in chain_answers(mention, passage_entities)}
    return [e for e in passage_entities if e.chain == mention.chain or e.text in texts]


ANSWER_RULES: dict[str, Callable[[Entity, tuple[Entity, ...]], list[Entity]]] = {
    "chain": chain_answers, "chain_texts": chain_text_answers}


def make_queries(passage_id: str, sentence: Sentence, passage_entities: tuple[Entity, ...],
                 answer_rule: str = "chain") -> list[dict]:
    """One cloze query per entity mention of the sentence, with its passage answers as
    `answer_rule` (spec `query.answers`, a key of ANSWER_RULES) forms them."""
    answers_of = ANSWER_RULES[answer_rule]
    rows = []
    for mention in sentence.entities:
        query = sentence.text[: mention.start] + PLACEHOLDER + sentence.text[mention.end :]
        answers = sorted({(e.start, e.end - 1, e.text) for e in answers_of(mention, passage_entities)})
        rows.append({
            "query_id": query_id(passage_id, sentence.text, mention.start),
            "passage_id": passage_id,
            "query": query,
            "sentence": sentence.text,
            "sentence_index": sentence.index,
            "placeholder_start": mention.start,
            "mention": mention.text,
            "label": mention.label,
            "chain": mention.chain,
            "answers": [{"start": s, "end": e, "text": t} for s, e, t in answers],
            "filters_passed": list(SENTENCE_FILTERS),
        })
    return rows


def sentence_queries(article: AnnotatedArticle,
                     query: QuerySection) -> Iterator[Union[list[dict], Reject]]:
    """Per rest sentence: its queries (a list) when it passes every filter, else a Reject."""
    passage_id = article.split.article.id
    n = query.ngram
    # Body and each highlight separately: the "@highlight" markers are layout, not text.
    stopwords = ngram_stopwords(query)
    passage_grams = set().union(*(word_ngrams(part, n, stopwords=stopwords)
                                  for part in (article.split.body, *article.split.article.highlights)))
    passage_chains = {e.chain for e in article.passage_entities}
    for sentence in article.sentences:
        verdict = sentence_verdict(sentence, passage_grams, passage_chains, query, stopwords)
        if verdict:
            yield Reject(SENTENCE_STAGE, verdict, f"{passage_id}#s{sentence.index}",
                         sentence.text[:200])
        else:
            yield make_queries(passage_id, sentence, article.passage_entities, query.answers)
