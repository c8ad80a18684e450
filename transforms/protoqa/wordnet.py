"""ProtoQA's WordNet answer similarity (Boratko et al. 2020, App. A), fast and offline.

The official evaluator (iesl/protoqa-evaluator) scores a predicted answer against one cluster
string as follows, and this module reproduces it number for number:

1. Tokenise both strings Treebank-style (NLTK's ``word_tokenize``) and drop the tokens that are
   in NLTK's classic 179-word English stopword list (kept in the repo as
   ``data_specs/nltk_english_stopwords.txt``, since the NLTK corpus cannot be downloaded here).
2. Enumerate every partition of each token list into contiguous groups (``2**(n-1)`` of them);
   a group is its tokens joined by single spaces. An empty token list has exactly one
   partition, made of the single empty group ``""``.
3. Two groups match (1) when they are equal strings or when ``wn.synsets`` of the two groups
   (spaces replaced by ``_``) share a synset; otherwise 0. A group without synsets only matches
   an equal group, so an empty / all-stopword answer matches exactly the all-stopword strings.
4. For a pair of partitions, take the maximum matching of groups (Hungarian assignment on the
   0/1 matrix) divided by the larger number of groups.
5. The score of the two strings is the maximum of (4) over all pairs of partitions.

Punkt is not installable offline, so ``word_tokenize``'s sentence split is replaced by a small
rule (`split_sentences`): it only matters for answers holding two sentences, which none of the
real files do. The tokenizer is NLTK's improved Treebank tokenizer, its rules copied into
`transforms.protoqa.treebank` so that scoring never imports NLTK; ``wn.synsets`` and morphy are
NLTK's own code, read through the cached index of `transforms.protoqa.wordnet_index`.

The official code is slow on whole files; here synsets are cached per group, token lists per
string, and each pair of token lists is scored once; a pair whose groups share no string or
synset anywhere is rejected by one set intersection before any partition is built.
"""
from __future__ import annotations

import importlib.util
import re
from functools import cache, lru_cache
from itertools import product
from pathlib import Path
from typing import FrozenSet, Iterable, List, Sequence, Tuple

from transforms.protoqa.treebank import word_tokenize_sentence
from transforms.protoqa.wordnet_index import wordnet, wordnet_index


def _spec_dir() -> Path:
    """The `data_specs` folder, found without importing it (its models import pydantic)."""
    spec = importlib.util.find_spec("data_specs")
    assert spec is not None and spec.origin is not None, "the data_specs package is installed with csdata"
    return Path(spec.origin).parent


STOPWORDS_PATH = _spec_dir() / "nltk_english_stopwords.txt"

# Abbreviations after which Punkt (English model) does not end a sentence. Only used by
# `split_sentences`, i.e. only for answers that hold ". " inside the first 50 characters.
_ABBREVIATIONS = frozenset(
    "mr mrs ms dr st jr sr vs etc e.g i.e u.s u.k prof inc co ltd corp no mt ft approx dept "
    "gen gov sen rep col lt sgt capt jan feb mar apr jun jul aug sep sept oct nov dec".split())
_SENTENCE_END = re.compile(r"(\S*?)([.!?]+)([\"')\]]*)(\s+)(?=\S)")


@lru_cache(maxsize=1)
def stopwords() -> FrozenSet[str]:
    """NLTK's classic 179-word English stopword list (lowercase; apostrophe forms included)."""
    words = STOPWORDS_PATH.read_text(encoding="utf-8").split()
    return frozenset(words)


def split_sentences(text: str) -> List[str]:
    """A Punkt-free stand-in for ``nltk.sent_tokenize`` on short answers.

    Splits after ``.``, ``!`` or ``?`` (plus closing quotes/brackets) followed by whitespace,
    unless the word before is a known abbreviation or a single letter (an initial), which is
    what Punkt does for the non-abbreviation case. Sentences are stripped, empty input gives [].
    """
    sentences, start = [], 0
    for m in _SENTENCE_END.finditer(text):
        word = m.group(1).lower()
        if m.group(2) == "." and (word in _ABBREVIATIONS or len(word) == 1 or "." in word):
            continue
        end = m.end(3)
        sentences.append(text[start:end].strip())
        start = m.end()
    sentences.append(text[start:].strip())
    return [s for s in sentences if s]


@cache
def tokenize(text: str) -> Tuple[str, ...]:
    """``nltk.word_tokenize(text)`` without Punkt: NLTK's Treebank tokenizer per sentence."""
    return tuple(tok for sent in split_sentences(text) for tok in word_tokenize_sentence(sent))


@cache
def content_tokens(text: str) -> Tuple[str, ...]:
    """Tokens of `text` minus the stopwords (case-sensitive, as the official code)."""
    stop = stopwords()
    return tuple(tok for tok in tokenize(text) if tok not in stop)


@cache
def synset_names(group: str) -> FrozenSet[str]:
    """Names of ``wn.synsets(group.replace(" ", "_"))`` (public API; slow: builds Synsets)."""
    if not group:
        return frozenset()
    return frozenset(s.name() for s in wordnet().synsets(group.replace(" ", "_")))


@cache
def synset_keys(group: str) -> FrozenSet[str]:
    """Identities of ``wn.synsets(group.replace(" ", "_"))`` as ``"{pos}{offset}"`` strings.

    ``synsets()`` returns ``synset_from_pos_and_offset(p, offset)`` for each part of speech p
    of ``POS_LIST``, each morphy form and each offset in the lemma index; a synset is one line
    of one data file, so two groups share a synset iff they share a (p, offset) key. The keys
    come from `wordnet_index` (NLTK's lemma index and exception lists, cached on disk under
    `index_cache_dir`), so neither NLTK's reader nor any Synset is built when the cache exists.
    """
    if not group:
        return frozenset()
    return wordnet_index().keys(group.replace(" ", "_").lower())


def groups_match(a: str, b: str) -> bool:
    """Two token groups match when they are equal or share a WordNet synset."""
    return a == b or not synset_keys(a).isdisjoint(synset_keys(b))


@cache
def partitions(n: int) -> Tuple[Tuple[Tuple[int, int], ...], ...]:
    """All partitions of range(n) into contiguous spans; n = 0 gives the one empty span."""
    if n == 0:
        return (((0, 0),),)
    result = []
    for cuts in range(1 << (n - 1)):
        spans, start = [], 0
        for i in range(1, n):
            if cuts >> (i - 1) & 1:
                spans.append((start, i))
                start = i
        spans.append((start, n))
        result.append(tuple(spans))
    return tuple(result)


def _spans(n: int) -> List[Tuple[int, int]]:
    return [(0, 0)] if n == 0 else [(i, j) for i in range(n) for j in range(i + 1, n + 1)]


@cache
def span_keys(tokens: Tuple[str, ...]) -> FrozenSet[str]:
    """Every group string and synset name reachable from a contiguous span of `tokens`.

    Two token lists can only score above 0 when these sets intersect (used as a fast filter).
    """
    keys = set()
    for i, j in _spans(len(tokens)):
        group = " ".join(tokens[i:j])
        keys.add("=" + group)
        keys.update(synset_keys(group))
    return frozenset(keys)


def max_matching(edges: Sequence[Sequence[int]], n_right: int) -> int:
    """Size of a maximum bipartite matching (Kuhn's augmenting paths; graphs here are tiny)."""
    match_right = [-1] * n_right

    def augment(u: int, seen: List[bool]) -> bool:
        for v in edges[u]:
            if not seen[v]:
                seen[v] = True
                if match_right[v] == -1 or augment(match_right[v], seen):
                    match_right[v] = u
                    return True
        return False

    return sum(1 for u in range(len(edges)) if augment(u, [False] * n_right))


def _partition_pairs(a: Tuple[str, ...], b: Tuple[str, ...]):
    """Yield (matching size, larger group count) for every pair of partitions of a and b."""
    spans_a, spans_b = _spans(len(a)), _spans(len(b))
    group_a = {s: " ".join(a[s[0]:s[1]]) for s in spans_a}
    group_b = {s: " ".join(b[s[0]:s[1]]) for s in spans_b}
    match = {(sa, sb) for sa in spans_a for sb in spans_b if groups_match(group_a[sa], group_b[sb])}
    for pa, pb in product(partitions(len(a)), partitions(len(b))):
        edges = [[j for j, sb in enumerate(pb) if (sa, sb) in match] for sa in pa]
        yield max_matching(edges, len(pb)), max(len(pa), len(pb))


@cache
def token_score(a: Tuple[str, ...], b: Tuple[str, ...]) -> float:
    """The exact WordNet score of two content-token tuples (rules 2-5 of the module doc)."""
    if a == b:
        return 1.0
    if span_keys(a).isdisjoint(span_keys(b)):
        return 0.0
    best = 0.0
    for matched, size in _partition_pairs(a, b):
        best = max(best, matched / size)
        if best == 1.0:
            break
    return best


@cache
def token_match(a: Tuple[str, ...], b: Tuple[str, ...]) -> bool:
    """Whether ``round(token_score(a, b)) == 1`` (round half to even, so 0.5 gives False).

    Stops at the first partition pair whose matching exceeds half of its larger group count.
    """
    if a == b:
        return True
    if span_keys(a).isdisjoint(span_keys(b)):
        return False
    return any(2 * matched > size for matched, size in _partition_pairs(a, b))


def wordnet_score(prediction: str, answer: str) -> float:
    """The official ``wordnet_score(prediction, answer)`` in [0, 1] (not rounded)."""
    return token_score(content_tokens(prediction), content_tokens(answer))


def wordnet_match(prediction: str, answer: str) -> bool:
    """``np.round(wordnet_score(prediction, answer)) == 1``, computed with early exits."""
    return token_match(content_tokens(prediction), content_tokens(answer))


def cluster_keys(answers: Iterable[str]) -> FrozenSet[str]:
    """Union of `span_keys` over a cluster's strings (a cluster-level fast filter)."""
    keys: set = set()
    for answer in answers:
        keys.update(span_keys(content_tokens(answer)))
    return frozenset(keys)


def clear_caches() -> None:
    """Drop every memoised token list, synset set and pair score (the reader stays loaded)."""
    for fn in (tokenize, content_tokens, synset_names, synset_keys, span_keys, token_score, token_match):
        fn.cache_clear()
