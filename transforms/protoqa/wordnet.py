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
`transforms.protoqa.treebank` (importing it from NLTK would cost about 1.5 s per command);
``wn.synsets`` and morphy are NLTK's own code (see below).

Speed (the official code needs 6-10 minutes on the 52 dev questions): the scorer never loads
NLTK's WordNet reader. `synset_keys` reads a compact index of exactly what ``wn.synsets`` looks
up (per POS of POS_LIST: lemma -> synset offsets, plus the morphy exception lists; morphy's
rules are applied to it as NLTK does), pickled under `index_cache_dir` with a content hash of
the WordNet index/exception files in its name (~0.1 s to load). When that file is absent,
stale or corrupt it is rebuilt once by `read_index_files`, which parses the index and
exception files with plain Python exactly as NLTK's reader does (tested equal to `build_index`,
the NLTK-derived index), so NLTK is never imported by the command. Synsets are cached per group,
token lists per string, and each pair of token lists is scored once; a pair whose groups share
no string or synset anywhere is rejected by one set intersection before any partition is built.
"""
from __future__ import annotations

import gc
import hashlib
import importlib.util
import os
import pickle
import re
import sys
import tempfile
import warnings
from functools import cache, lru_cache
from itertools import product
from pathlib import Path
from typing import FrozenSet, Iterable, List, Optional, Sequence, Tuple

from transforms.core.cache import cache_dir
from transforms.protoqa.treebank import word_tokenize_sentence


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


# --------------------------------------------------------------------------------------------
# WordNet
# --------------------------------------------------------------------------------------------
_WORDNET = None


def _fast_reader(root=None):
    """A WordNetCorpusReader that skips the OMW 3.0 mapping and reads index files natively.

    ``WordNetCorpusReader.__init__`` spends most of its time mapping WordNet 3.0 sense keys for
    the multilingual data (unused by ``synsets(lang="eng")``) and reading the index files through
    NLTK's seekable stream reader; both are bypassed. Data files keep NLTK's own reader.
    Falls back to ``nltk.corpus.wordnet`` if NLTK's internals differ from what is expected.
    """
    from nltk.corpus.reader.wordnet import WordNetCorpusReader
    from nltk.data import FileSystemPathPointer, find

    root = find("corpora/wordnet") if root is None else FileSystemPathPointer(str(root))
    root_dir = getattr(root, "path", None)

    class _Reader(WordNetCorpusReader):
        def open(self, file):  # noqa: A003 - same name as the base method
            if root_dir is None or file.startswith("data."):
                return super().open(file)
            return open(os.path.join(root_dir, file), encoding="utf8")

        def map_wn(self, version="wordnet"):
            return None

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _Reader(root, None)


def wordnet():
    """The WordNet reader used for synsets (loaded once per process)."""
    global _WORDNET
    if _WORDNET is None:
        try:
            reader = _fast_reader()
            reader.synsets("dog")
        except Exception:  # pragma: no cover - other NLTK versions
            from nltk.corpus import wordnet as fallback

            fallback.ensure_loaded()
            reader = fallback
        _WORDNET = reader
    return _WORDNET


@cache
def synset_names(group: str) -> FrozenSet[str]:
    """Names of ``wn.synsets(group.replace(" ", "_"))`` (public API; slow: builds Synsets)."""
    if not group:
        return frozenset()
    return frozenset(s.name() for s in wordnet().synsets(group.replace(" ", "_")))


# The compact lemma index: exactly what `synset_keys` reads from WordNet, cached on disk.
INDEX_FORMAT = 1
POS_LIST = ("n", "v", "a", "r")     # nltk.corpus.reader.wordnet.POS_LIST (checked by the tests)
# WordNetCorpusReader.MORPHOLOGICAL_SUBSTITUTIONS for POS_LIST (checked by the tests).
MORPHOLOGICAL_SUBSTITUTIONS = {
    "n": (("s", ""), ("ses", "s"), ("ves", "f"), ("xes", "x"), ("zes", "z"), ("ches", "ch"),
          ("shes", "sh"), ("men", "man"), ("ies", "y")),
    "v": (("s", ""), ("ies", "y"), ("es", "e"), ("es", ""), ("ed", "e"), ("ed", ""),
          ("ing", "e"), ("ing", "")),
    "a": (("er", ""), ("est", ""), ("er", "e"), ("est", "e")),
    "r": (),
}
_FILEMAP = {"n": "noun", "v": "verb", "a": "adj", "r": "adv"}
INDEX_SOURCE_FILES = tuple(f"index.{s}" for s in _FILEMAP.values()) + tuple(
    f"{s}.exc" for s in _FILEMAP.values())
_INDEX = None


class WordNetIndex:
    """Per part of speech: lemma -> its synset keys (``"n2084071 n2085374"``), and the
    morphy exception lists; `forms` is NLTK's ``WordNetCorpusReader._morphy`` on them."""

    __slots__ = ("lemmas", "exceptions")

    def __init__(self, lemmas, exceptions):
        self.lemmas = lemmas            # {pos: {lemma: "p<offset> p<offset> ..."}}
        self.exceptions = exceptions    # {pos: {inflected form: [base forms]}}

    def forms(self, form: str, pos: str) -> List[str]:
        """``reader._morphy(form, pos, check_exceptions=True)``, line for line."""
        exceptions = self.exceptions[pos]
        if form in exceptions:
            forms = exceptions[form]
        else:
            forms = [form[: -len(old)] + new for old, new in MORPHOLOGICAL_SUBSTITUTIONS[pos]
                     if form.endswith(old)]
        known, result, seen = self.lemmas[pos], [], set()
        for candidate in [form] + forms:
            if candidate in known and candidate not in seen:
                result.append(candidate)
                seen.add(candidate)
        return result

    def keys(self, lemma: str) -> FrozenSet[str]:
        """The ``"{pos}{offset}"`` keys of ``wn.synsets(lemma)`` (lemma already lowercased)."""
        return frozenset(key for p in POS_LIST for form in self.forms(lemma, p)
                         for key in self.lemmas[p][form].split())

    def morphy(self, form: str, pos: Optional[str] = None) -> Optional[str]:
        """``wn.morphy(form, pos)``: the first base form found, trying POS_LIST when pos is None."""
        for p in [pos] if pos else POS_LIST:
            found = self.forms(form, p)
            if found:
                return found[0]
        return None


def wordnet_root() -> Optional[Path]:
    """The WordNet directory ``nltk.data.find("corpora/wordnet")`` resolves to, found without
    importing NLTK (same search path, in order); None when the first hit is not a plain folder."""
    paths = [os.path.expanduser(d) for d in os.environ.get("NLTK_DATA", "").split(os.pathsep) if d]
    if "APPENGINE_RUNTIME" not in os.environ and os.path.expanduser("~/") != "~/":
        paths.append(os.path.expanduser("~/nltk_data"))
    paths += [os.path.join(sys.prefix, "nltk_data"), os.path.join(sys.prefix, "share", "nltk_data"),
              os.path.join(sys.prefix, "lib", "nltk_data"), "/usr/share/nltk_data",
              "/usr/local/share/nltk_data", "/usr/lib/nltk_data", "/usr/local/lib/nltk_data"]
    for base in paths:
        folder = Path(base, "corpora", "wordnet")
        if folder.is_dir():
            return folder if all((folder / f).is_file() for f in INDEX_SOURCE_FILES) else None
        if Path(base, "corpora", "wordnet.zip").exists():
            return None
    return None


def index_cache_dir() -> Path:
    """Where the compact index is pickled: csdata's cache (`transforms.core.cache.cache_dir`)."""
    return cache_dir()


def wordnet_data_hash(root: Path) -> str:
    """A content hash of the WordNet files the index is built from (plus the index format)."""
    digest = hashlib.blake2b(f"format {INDEX_FORMAT}".encode(), digest_size=12)
    for name in INDEX_SOURCE_FILES:
        data = (root / name).read_bytes()
        digest.update(f"\0{name}\0{len(data)}\0".encode())
        digest.update(data)
    return digest.hexdigest()


def index_cache_path(root: Path) -> Path:
    return index_cache_dir() / f"wordnet-index-{wordnet_data_hash(root)}.pickle"


def read_index_files(root: Path) -> WordNetIndex:
    """The index read straight from WordNet's ``index.<pos>`` and ``<pos>.exc`` files (wndb(5WN)),
    field for field as NLTK's ``_load_lemma_pos_offset_map`` / ``_load_exception_map`` keep them,
    without importing NLTK (the cold-cache path of `load_index`).

    An index line is ``lemma pos synset_cnt p_cnt [ptr_symbol...] sense_cnt tagsense_cnt
    synset_offset...``; lines starting with a space are the licence header. The line's own pos
    field decides the POS (as in NLTK); offsets are ints, so leading zeros go. An exception line
    is ``inflected base...``; a later line for the same word replaces an earlier one.
    """
    lemmas: dict = {p: {} for p in POS_LIST}
    exceptions: dict = {}
    for p, suffix in _FILEMAP.items():
        with open(root / f"index.{suffix}", encoding="utf8") as fh:
            for number, line in enumerate(fh, 1):
                if line.startswith(" "):
                    continue
                fields = line.split()
                try:
                    lemma, pos, n_synsets = fields[0], fields[1], int(fields[2])
                    rest = 4 + int(fields[3])
                    n_senses = int(fields[rest])
                    offsets = fields[rest + 2: rest + 2 + n_synsets]
                    if n_synsets <= 0 or n_senses != n_synsets or len(offsets) != n_synsets:
                        raise ValueError("synset counts disagree")
                    keys = " ".join(f"{pos}{int(offset)}" for offset in offsets)
                except (IndexError, ValueError) as error:
                    raise ValueError(f"file index.{suffix}, line {number}: {error}") from error
                if pos in lemmas:
                    lemmas[pos][lemma] = keys
        with open(root / f"{suffix}.exc", encoding="utf8") as fh:
            exceptions[p] = {terms[0]: terms[1:] for terms in map(str.split, fh)}
    return WordNetIndex(lemmas, exceptions)


def build_index(root: Optional[Path] = None) -> WordNetIndex:
    """The index from NLTK's own WordNet reader (its lemma map and exception lists) on `root`
    (default: the process's reader, `wordnet()`). The reference `read_index_files` is tested on."""
    reader = wordnet() if root is None else _fast_reader(root)
    lemmas: dict = {p: {} for p in POS_LIST}
    for lemma, by_pos in reader._lemma_pos_offset_map.items():
        for p in POS_LIST:
            if p in by_pos:
                lemmas[p][lemma] = " ".join(f"{p}{offset}" for offset in by_pos[p])
    exceptions = {p: {form: list(bases) for form, bases in reader._exception_map[p].items()}
                  for p in POS_LIST}
    return WordNetIndex(lemmas, exceptions)


def _read_index(path: Path, data_hash: str) -> Optional[WordNetIndex]:
    try:
        gc_was_enabled = gc.isenabled()
        gc.disable()        # ~155k small objects: the cyclic GC would only slow the load
        try:
            with open(path, "rb") as fh:
                payload = pickle.load(fh)
        finally:
            if gc_was_enabled:
                gc.enable()
        if (payload.get("format") != INDEX_FORMAT or payload.get("hash") != data_hash
                or set(payload["lemmas"]) != set(POS_LIST)
                or set(payload["exceptions"]) != set(POS_LIST)):
            return None
        return WordNetIndex(payload["lemmas"], payload["exceptions"])
    except Exception:   # missing, truncated, corrupt or foreign: rebuild
        return None


def _write_index(path: Path, data_hash: str, index: WordNetIndex) -> None:
    """Atomic write (temp file + rename); old indexes of other WordNet data are removed."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
        os.chmod(tmp, 0o644)
        with os.fdopen(fd, "wb") as fh:
            pickle.dump({"format": INDEX_FORMAT, "hash": data_hash, "lemmas": index.lemmas,
                         "exceptions": index.exceptions}, fh, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)
        for old in path.parent.glob("wordnet-index-*.pickle"):
            if old != path:
                old.unlink(missing_ok=True)
    except OSError:     # read-only cache dir: keep the in-memory index only
        try:
            os.unlink(tmp)
        except (OSError, UnboundLocalError):
            pass


def load_index(root: Optional[Path] = None) -> WordNetIndex:
    """The cached index for the WordNet files under `root` (read from them by `read_index_files`
    when absent or stale; from NLTK's reader, each run, when WordNet is zipped or laid out
    unusually)."""
    root = root if root is not None else wordnet_root()
    if root is None:        # zipped or unusual NLTK data: build in memory from NLTK each run
        return build_index()
    data_hash = wordnet_data_hash(root)
    path = index_cache_dir() / f"wordnet-index-{data_hash}.pickle"
    index = _read_index(path, data_hash)
    if index is None:
        index = read_index_files(root)
        _write_index(path, data_hash, index)
    return index


def wordnet_index() -> WordNetIndex:
    """The compact lemma index used by `synset_keys` (loaded once per process)."""
    global _INDEX
    if _INDEX is None:
        _INDEX = load_index()
    return _INDEX


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
