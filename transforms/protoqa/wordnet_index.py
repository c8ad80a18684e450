"""WordNet for ProtoQA's answer similarity, without loading NLTK's WordNet reader.

`transforms.protoqa.wordnet` asks one question of WordNet: which synsets ``wn.synsets(group)``
gives. `WordNetIndex` answers it from a compact index of exactly what that call looks up (per POS
of POS_LIST: lemma -> synset offsets, plus the morphy exception lists; morphy's rules are applied
to it as NLTK does), pickled under `index_cache_dir` with a content hash of the WordNet
index/exception files in its name, so that loading it is cheap. When that file is absent, stale
or corrupt it is rebuilt once by `read_index_files`, which parses the index and exception files
with plain Python exactly as NLTK's reader does (tested equal to `build_index`, the NLTK-derived
index), so NLTK is never imported by a scoring command. `wordnet()` is NLTK's own reader, for
the callers that need Synsets.
"""
from __future__ import annotations

import gc
import hashlib
import os
import pickle
import sys
import tempfile
import warnings
from pathlib import Path
from typing import FrozenSet, List, Optional

from transforms.core.cache import cache_dir

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
    """The pickled index's path for the WordNet files under `root`."""
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
        gc.disable()        # many small objects and no cycles: the cyclic GC would only slow the load
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

