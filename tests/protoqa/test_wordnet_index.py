"""The cached WordNet lemma index (issue #11): same synsets as NLTK, rebuilt when stale/corrupt."""
from __future__ import annotations

import pickle

import pytest
from nltk.corpus.reader.wordnet import POS_LIST, WordNetCorpusReader

from transforms.protoqa import wordnet_index as wi
from transforms.protoqa.wordnet import synset_keys

FIXED_WORDS = [
    # morphy exceptions (noun/verb/adj/adv .exc files)
    "geese", "mice", "children", "feet", "teeth", "women", "oxen", "went", "ran", "was", "were",
    "better", "best", "worse", "worst", "further", "abaci", "aardwolves", "corpora", "lice",
    # regular inflections through the substitution rules
    "dogs", "churches", "boxes", "buzzes", "wishes", "wolves", "puppies", "firemen", "running",
    "baked", "bakes", "tried", "carries", "bigger", "biggest", "nicer", "nicest", "hopped",
    "glasses", "potatoes", "tomatoes", "clothes", "pants", "jobs", "drinking", "swimming",
    # multiword lemmas (groups join tokens with "_"), with inflected heads
    "ice_cream", "hot_dog", "cell_phone", "fax_machine", "red_cross", "movie_theater",
    "security_guard", "ice_creams", "hot_dogs", "police_officer", "traffic_jam",
    # case, punctuation, numbers, words absent from WordNet, odd strings
    "Dog", "ICE_CREAM", "xyzzyq", "qwertyuiop", "hairsprayz", "they're", "he/she", '"score',
    "n't", "'s", "&", "-", "s", "es", "ing", "ed", "er", "est", "men", "ies", "1", "2nd", "",
    "u.s.", "a", "i", "ca", "wo", "_", "__", "dog_", "_dog",
]


@pytest.fixture(scope="module")
def reader() -> WordNetCorpusReader:
    return wi.wordnet()


@pytest.fixture(scope="module")
def built(reader) -> wi.WordNetIndex:
    return wi.build_index()


def _sample_words(reader) -> list:
    words = list(FIXED_WORDS)
    lemmas = sorted(reader._lemma_pos_offset_map)
    words += lemmas[::997]                                      # ~150 lemmas of every kind
    words += [w + suffix for w in lemmas[5::4001] for suffix in ("s", "es", "ed", "ing", "er")]
    for p in POS_LIST:
        words += sorted(reader._exception_map[p])[::211]       # inflected exception forms
    return words


def _nltk_keys(reader, lemma: str) -> frozenset:
    index = reader._lemma_pos_offset_map
    return frozenset(f"{p}{offset}" for p in POS_LIST
                     for form in reader._morphy(lemma, p, True)
                     for offset in index[form].get(p, []))


def test_constants_match_nltk():
    assert tuple(POS_LIST) == wi.POS_LIST
    for p in wi.POS_LIST:
        assert tuple(WordNetCorpusReader.MORPHOLOGICAL_SUBSTITUTIONS[p]) == \
            wi.MORPHOLOGICAL_SUBSTITUTIONS[p]


def test_root_is_nltks(reader):
    root = wi.wordnet_root()
    assert root is not None and str(root) == str(reader.root.path)


def test_index_gives_nltks_synsets(reader, built):
    words = _sample_words(reader)
    assert len(words) > 300
    nonempty = 0
    for word in words:
        lemma = word.lower()
        keys = built.keys(lemma)
        assert keys == _nltk_keys(reader, lemma), word
        names = {reader.synset_from_pos_and_offset(k[0], int(k[1:])).name() for k in keys}
        assert names == {s.name() for s in reader.synsets(word)}, word
        for p in (None,) + wi.POS_LIST:
            assert built.morphy(lemma, p) == reader.morphy(lemma, p), (word, p)
        nonempty += bool(keys)
    assert nonempty > 200
    assert built.keys("geese") & built.keys("goose")
    assert built.keys("ice_cream") and not built.keys("xyzzyq")


def test_synset_keys_use_the_index(reader):
    synset_keys.cache_clear()
    for group in ("ice cream", "Hot Dog", "geese", "xyzzyq", "big red dog"):
        assert synset_keys(group) == _nltk_keys(reader, group.replace(" ", "_").lower())
    assert synset_keys("") == frozenset()


def test_cache_roundtrip_and_rebuild(tmp_path, monkeypatch, built):
    monkeypatch.setenv("CSDATA_CACHE_DIR", str(tmp_path))
    calls = []

    def counting_build(root=None):
        calls.append(root)
        return built

    monkeypatch.setattr(wi, "read_index_files", counting_build)
    root = wi.wordnet_root()
    path = wi.index_cache_path(root)
    assert path.parent == tmp_path and wi.wordnet_data_hash(root) in path.name

    stale = tmp_path / "wordnet-index-000000000000000000000000.pickle"
    stale.write_bytes(b"old")
    first = wi.load_index()                                     # absent: built and written
    assert len(calls) == 1 and path.exists() and not stale.exists()
    second = wi.load_index()                                    # present: read, not built
    assert len(calls) == 1 and second.lemmas == first.lemmas
    assert second.exceptions == first.exceptions

    for damage in (b"", b"not a pickle", path.read_bytes()[:1000]):
        path.write_bytes(damage)                                # corrupt / truncated
        wi.load_index()
        assert wi._read_index(path, wi.wordnet_data_hash(root)) is not None
    assert len(calls) == 4

    with open(path, "wb") as fh:                                # valid pickle, other data
        pickle.dump({"format": wi.INDEX_FORMAT, "hash": "elsewhere", "lemmas": {},
                     "exceptions": {}}, fh)
    wi.load_index()
    assert len(calls) == 5
    assert wi._read_index(path, wi.wordnet_data_hash(root)).lemmas == built.lemmas


def test_plain_reader_equals_nltks_index(built):
    """Reading index.<pos> / <pos>.exc directly gives exactly NLTK's lemma map and exceptions."""
    direct = wi.read_index_files(wi.wordnet_root())
    for p in wi.POS_LIST:
        assert direct.lemmas[p] == built.lemmas[p], p
        assert direct.exceptions[p] == built.exceptions[p], p
    assert len(direct.lemmas["n"]) > 100000


def test_tiny_wordnet_folder(tmp_path):
    """Hand-written index/exception files (wndb(5WN) format), values worked out by hand."""
    header = "  1 This is a licence line\n"
    files = {
        "index.noun": header + "dog n 2 3 @ ~ + 2 1 02084071 10114209\ngoose n 1 0 1 0 01855672\n",
        "index.verb": header + "run v 1 1 @ 1 1 01926311\n",
        "index.adj": header + "big a 1 0 1 0 01382086\n",
        "index.adv": header,
        "noun.exc": "geese goose\nmice mouse\n",
        "verb.exc": "ran run\nran run2\n",
        "adj.exc": "bigger big\n",
        "adv.exc": "",
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    index = wi.read_index_files(tmp_path)
    assert index.lemmas == {"n": {"dog": "n2084071 n10114209", "goose": "n1855672"},
                            "v": {"run": "v1926311"}, "a": {"big": "a1382086"}, "r": {}}
    assert index.exceptions == {"n": {"geese": ["goose"], "mice": ["mouse"]},
                                "v": {"ran": ["run2"]}, "a": {"bigger": ["big"]}, "r": {}}
    assert index.keys("geese") == {"n1855672"}
    assert index.keys("dogs") == {"n2084071", "n10114209"}
    (tmp_path / "index.adv").write_text(header + "fast r 2 0 1 0 00086000\n", encoding="utf-8")
    with pytest.raises(ValueError, match="index.adv, line 2"):
        wi.read_index_files(tmp_path)


def test_cold_build_into_empty_cache(tmp_path, monkeypatch, built):
    """A real cold build into an empty cache dir equals NLTK's index."""
    monkeypatch.setenv("CSDATA_CACHE_DIR", str(tmp_path / "fresh"))
    index = wi.load_index()
    assert index.lemmas == built.lemmas and index.exceptions == built.exceptions
    assert list((tmp_path / "fresh").glob("wordnet-index-*.pickle"))


def test_unwritable_cache_dir_still_scores(tmp_path, monkeypatch, built):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("CSDATA_CACHE_DIR", str(blocker / "sub"))
    monkeypatch.setattr(wi, "read_index_files", lambda root=None: built)
    assert wi.load_index().keys("dog") == built.keys("dog")
