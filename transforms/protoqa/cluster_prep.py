"""ProtoQA answer-clustering prep (`csdata protoqa cluster-prep`): normalise and propose clusters.

Each question has ~100 raw answers, so the prep runs per question in plain Python. Raw answers
are normalised (case, whitespace, punctuation, articles, lemmas), then joined into proposed
clusters by four kinds of evidence, combined with union-find:

* `exact`: the same normalised string;
* `wordnet`: the normalised strings share a WordNet 3.0 synset (among their first senses);
* `embedding`: MiniLM cosine similarity of the normalised strings at or above a threshold;
* `misspelling`: MinHash estimate of character-trigram Jaccard at or above a threshold.

Proposals are suggestions shown to annotators, never final clusters. Models sit behind two small
interfaces chosen in the spec (`answers.lemmatizer.name`, `answers.proposals.embedder.name`)
and are loaded once per process.
"""
from __future__ import annotations

import functools
import hashlib
import re
import string
from collections import Counter, OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Iterable, Optional, Protocol, Sequence, Union

import numpy as np

from data_specs.models import AnswersSection, LimitsSection, ProposalsOptions
from filters.protoqa import normalize_question, straighten_typography
from transforms.core.accounting import Reject
from transforms.core.errors import UserError
from transforms.core.io.cells import unescaped_dict
from transforms.core.io.tables import read_table
from transforms.core.io.untrusted import read_csv_rows
from transforms.core.models.loading import check_spacy, load_spacy
from transforms.core.models.minilm import MiniLMEncoder, check_minilm

READ = "read_answers"
PROPOSE = "propose_clusters"
PREP_STAGES = [READ, PROPOSE]

# sentence-transformers' all-MiniLM-L6-v2 truncates at 256 word pieces; so does the encoder.
MINILM_MAX_LENGTH = 256


# ---- model interfaces ------------------------------------------------------------------------

class Lemmatizer(Protocol):
    """Lemmas of tokenised answers, one list per answer."""

    def lemmas(self, token_lists: Sequence[Sequence[str]]) -> list[list[str]]: ...


class Embedder(Protocol):
    """Sentence vectors of answers, one row per text."""

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...   # rows L2-normalised


class IdentityLemmatizer:
    """No lemmatisation: tokens stay as normalised."""

    def lemmas(self, token_lists):
        return [list(tokens) for tokens in token_lists]


class SpacyLemmatizer:
    """spaCy's lemmatizer (tagger + attribute ruler + lemmatizer; no parser or NER)."""

    def __init__(self, model: str):
        self._nlp = load_spacy(model, exclude=["parser", "ner", "senter"],
                               option="answers.lemmatizer.model")

    def lemmas(self, token_lists):
        from spacy.tokens import Doc

        docs = [Doc(self._nlp.vocab, words=list(tokens)) for tokens in token_lists if tokens]
        lemmatized = iter([[t.lemma_.lower() or t.text for t in doc]
                           for doc in self._nlp.pipe(docs)])
        return [next(lemmatized) if tokens else [] for tokens in token_lists]


@functools.lru_cache(maxsize=4)
def make_lemmatizer(name: str, model: str = "en_core_web_sm") -> Lemmatizer:
    """The lemmatizer `answers.lemmatizer.name` (loaded once per process and model)."""
    if name == "none":
        return IdentityLemmatizer()
    if name == "spacy":
        return SpacyLemmatizer(model)
    raise ValueError(f"unknown answers.lemmatizer.name {name!r}; known: spacy, none")


@functools.lru_cache(maxsize=4)
def make_embedder(name: str, batch_size: int = 128) -> Optional[Embedder]:
    """The embedder `answers.proposals.embedder.name` (None for `none`; loaded once per process)."""
    if name == "none":
        return None
    if name == "minilm":
        return MiniLMEncoder(batch_size=batch_size, max_length=MINILM_MAX_LENGTH)
    raise ValueError(f"unknown answers.proposals.embedder.name {name!r}; known: minilm, none")


def check_models(answers: AnswersSection) -> None:
    """Check, before anything runs, the lemmatizer and embedder models the section names."""
    if answers.lemmatizer.name == "spacy":
        check_spacy(answers.lemmatizer.model, option="answers.lemmatizer.model")
    if answers.proposals.embedder.name == "minilm":
        check_minilm()


def load_models(answers: AnswersSection) -> tuple[Lemmatizer, Optional[Embedder]]:
    """The lemmatizer and embedder (None: no embedding proposals) of the `answers` section."""
    embedder = answers.proposals.embedder
    return (make_lemmatizer(answers.lemmatizer.name, answers.lemmatizer.model),
            make_embedder(embedder.name, embedder.batch_size))


# ---- reading raw answers ---------------------------------------------------------------------

@dataclass
class QuestionAnswers:
    """One question's raw answers: distinct raw strings in first-seen order with their counts."""

    question_id: str
    question: str
    counts: OrderedDict[str, int] = field(default_factory=OrderedDict)


def question_id_for(question: str) -> str:
    """An id for a question that comes without one: `q` + sha1 of its normalised text."""
    return "q" + hashlib.sha1(normalize_question(question).encode("utf-8")).hexdigest()[:10]


def read_crowd_answers(source: Union[str, Path, IO[bytes]], limits: LimitsSection
                       ) -> tuple[list[QuestionAnswers], list[Reject], int]:
    """Parse a crowd answers CSV: `question_id, question, answer[, count]` (header required).

    One row per response (count 1) or per distinct answer with its count; `question_id` may be
    empty (an id is derived from the question). Rows over `limits` or damaged are rejects
    (`transforms.core.io.untrusted`; record id `line N`). Returns (questions, rejects, rows read).
    """
    table = read_csv_rows(source, limits)
    fields = {f.strip().lower(): f for f in table.header}
    if "answer" not in fields or "question" not in fields:
        raise UserError("crowd answers CSV needs the columns question and answer "
                        "(and optionally question_id, count)")
    questions: OrderedDict[str, QuestionAnswers] = OrderedDict()
    rejects = [Reject(READ, s.reason, s.where.replace(" ", ""), s.detail) for s in table.skipped]
    rows = len(table.skipped)
    for n, raw in table.rows:
        row = unescaped_dict(raw)    # the CSV `protoqa hits import` wrote
        rows += 1
        question = row[fields["question"]].strip()
        qid = row.get(fields.get("question_id", ""), "").strip() or question_id_for(question)
        answer = row[fields["answer"]].strip()
        raw_count = row.get(fields.get("count", ""), "1").strip() or "1"
        if not question:
            rejects.append(Reject(READ, "no_question", f"line{n}", answer))
            continue
        if not answer:
            rejects.append(Reject(READ, "empty_answer", f"{qid}#line{n}", ""))
            continue
        try:
            count = int(raw_count)
        except ValueError:
            rejects.append(Reject(READ, "bad_count", f"{qid}#{answer}", raw_count))
            continue
        entry = questions.setdefault(qid, QuestionAnswers(qid, question))
        entry.counts[answer] = entry.counts.get(answer, 0) + count
    return list(questions.values()), rejects, rows


# ---- normalisation and proposals -------------------------------------------------------------

# Punctuation removed from answers; apostrophes inside words ("dad's") survive as word characters.
_ANSWER_PUNCT = re.compile("[" + re.escape(string.punctuation.replace("'", "")) + "]")


def normalize_answer_text(text: str, articles: Sequence[str] = ("a", "an", "the")) -> list[str]:
    """Lowercased answer tokens without punctuation or articles (before lemmatisation)."""
    text = _ANSWER_PUNCT.sub(" ", straighten_typography(text).lower())
    dropped = set(articles)
    tokens = [t.strip("'") for t in text.split()]
    return [t for t in tokens if t and t not in dropped]


def normalize_answers(answers: Sequence[str], lemmatizer: Lemmatizer,
                      articles: Sequence[str]) -> list[str]:
    """Each answer normalised (`normalize_answer_text`), lemmatised and joined by spaces."""
    token_lists = [normalize_answer_text(a, articles) for a in answers]
    return [" ".join(tokens) for tokens in lemmatizer.lemmas(token_lists)]


class UnionFind:
    """Disjoint sets over 0..n-1; the smaller index is a merged set's root."""

    def __init__(self, n: int):
        self.parent = list(range(n))

    def find(self, i: int) -> int:
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def union(self, a: int, b: int) -> bool:
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return False
        self.parent[max(ra, rb)] = min(ra, rb)
        return True


@functools.lru_cache(maxsize=100000)
def wordnet_synsets(text: str, max_senses: int) -> frozenset:
    """Names of the first `max_senses` WordNet synsets of the phrase (multiword as `a_b`)."""
    from nltk.corpus import wordnet

    if not text:
        return frozenset()
    synsets = wordnet.synsets(text.replace(" ", "_"))[:max_senses]
    return frozenset(s.name() for s in synsets)


def char_trigrams(text: str) -> set[bytes]:
    """The character trigrams of `text`, padded at both ends, as bytes for MinHash."""
    padded = f"  {text} "
    return {padded[i:i + 3].encode("utf-8") for i in range(len(padded) - 2)}


def minhash_signatures(texts: Sequence[str], num_perm: int, seed: int) -> list[np.ndarray]:
    """The seeded MinHash signature of each text's character trigrams."""
    from datasketch import MinHash

    template = MinHash(num_perm=num_perm, seed=seed)
    signatures = []
    for text in texts:
        minhash = template.copy()
        minhash.update_batch(sorted(char_trigrams(text)))
        signatures.append(minhash.hashvalues)
    return signatures


@dataclass(frozen=True)
class Proposal:
    """One answer's proposed cluster: its count, normalised form, cluster number and label, and
    the evidence that joined it to the cluster."""

    answer: str
    count: int
    normalized: str
    cluster: int
    label: str
    evidence: tuple[str, ...]


def propose_clusters(answers: OrderedDict[str, int], normalized: Sequence[str],
                     proposals: ProposalsOptions, seed: int,
                     embedder: Optional[Embedder] = None) -> list[Proposal]:
    """Proposed clusters of one question's distinct raw answers (in the answers' order).

    `proposals` is the spec's `answers.proposals` section and `seed` the spec's seed (the
    misspelling MinHash). Clusters are numbered by descending total count, ties by first
    appearance; a cluster's label is its most frequent normalised answer.
    """
    raw = list(answers)
    texts = sorted(set(normalized), key=list(normalized).index)   # distinct, first-seen order
    index = {t: i for i, t in enumerate(texts)}
    union = UnionFind(len(texts))
    evidence: dict[int, set[str]] = {i: set() for i in range(len(texts))}

    def join(i: int, j: int, kind: str) -> None:
        if union.union(i, j):
            evidence[i].add(f"{kind}:{texts[j]}")
            evidence[j].add(f"{kind}:{texts[i]}")

    if proposals.wordnet:
        synsets = [wordnet_synsets(t, proposals.wordnet_max_senses) for t in texts]
        for i in range(len(texts)):
            for j in range(i):
                if synsets[i] & synsets[j]:
                    join(i, j, "wordnet")
    if embedder is not None and len(texts) > 1:
        threshold = proposals.embedder.threshold
        vectors = embedder.encode(texts)
        similarity = vectors @ vectors.T
        for i in range(len(texts)):
            for j in range(i):
                if similarity[i, j] >= threshold:
                    join(i, j, "embedding")
    spelling = proposals.misspellings
    if spelling.enabled:
        signatures = minhash_signatures(texts, spelling.num_perm, seed)
        for i in range(len(texts)):
            for j in range(i):
                if min(len(texts[i]), len(texts[j])) >= spelling.min_chars and \
                        float(np.mean(signatures[i] == signatures[j])) >= spelling.threshold:
                    join(i, j, "misspelling")

    totals: Counter = Counter()
    first: dict[int, int] = {}
    by_text: dict[int, Counter] = {}
    for position, (answer, text) in enumerate(zip(raw, normalized)):
        root = union.find(index[text])
        totals[root] += answers[answer]
        first.setdefault(root, position)
        by_text.setdefault(root, Counter())[text] += answers[answer]
    order = sorted(totals, key=lambda r: (-totals[r], first[r]))
    number = {root: n for n, root in enumerate(order)}
    labels = {root: max(by_text[root].items(),
                        key=lambda kv: (kv[1], -list(normalized).index(kv[0])))[0] for root in order}
    result = []
    for answer, text in zip(raw, normalized):
        i = index[text]
        root = union.find(i)
        kinds = sorted(evidence[i])
        same = [a for a, t in zip(raw, normalized) if t == text and a != answer]
        if same:
            kinds = [f"exact:{text}"] + kinds
        result.append(Proposal(answer, int(answers[answer]), text, number[root], labels[root],
                               tuple(kinds)))
    return result


def prepare_question(question: QuestionAnswers, answers: AnswersSection, seed: int,
                     lemmatizer: Lemmatizer, embedder: Optional[Embedder]) -> list[dict]:
    """Rows of the `answers` table for one question."""
    counts = question.counts
    normalized = normalize_answers(list(counts), lemmatizer, answers.articles)
    return [{
        "question_id": question.question_id, "question": question.question,
        "answer": p.answer, "count": p.count, "normalized": p.normalized,
        "proposed_cluster": p.cluster, "proposed_label": p.label, "evidence": list(p.evidence),
    } for p in propose_clusters(counts, normalized, answers.proposals, seed, embedder)]


def prepare_all(questions: Iterable[QuestionAnswers], answers: AnswersSection, seed: int,
                models: Optional[tuple[Lemmatizer, Optional[Embedder]]] = None) -> list[dict]:
    """`answers` rows of every question; `models` defaults to `load_models(answers)`."""
    lemmatizer, embedder = models or load_models(answers)
    rows = []
    for question in questions:
        rows += prepare_question(question, answers, seed, lemmatizer, embedder)
    return rows


def read_prep(prep_dir: str) -> list[dict]:
    """The `answers` rows of a `cluster-prep` run."""
    return read_table(prep_dir, "answers").to_pylist()
