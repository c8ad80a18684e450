"""Beam's `RunInference` and its model-handler types, imported without Beam's `ModelManager`.

`apache_beam.ml.inference.base` imports its `ModelManager` as it is imported (Beam 2.76 and
newer), and that module imports torch, scipy and their dependencies wherever they are installed:
hundreds of MB more in every process that so much as imports a graph with `RunInference` (the
driver of `record generate`, each worker of `record filter` with the lexical reader; figures in
docs/benchmarks.md#beam-262-against-beam-278-2026-12-06-same-machine-same-hour). The
`ModelManager` serves `RunInference(..., use_model_manager=True)`, which csdata never asks for,
and Beam imports it again itself on that path. So the base module is imported while Beam's
`model_manager` module reads as absent (Beam catches that ImportError), and the entry is removed
again right after, so that a later import of it works as usual. The same `try` of Beam's imports
the standard `resource` module, by which RunInference reads its memory use; the failed import
leaves it None there (and a warning per bundle), so it is given back.
"""
from __future__ import annotations

import sys
from types import ModuleType
from typing import Optional

try:
    import resource as _resource
    stdlib_resource: Optional[ModuleType] = _resource
except ImportError:   # not on Windows: Beam has none there either
    stdlib_resource = None

BASE = "apache_beam.ml.inference.base"
MODEL_MANAGER = "apache_beam.ml.inference.model_manager"


def import_inference_base() -> ModuleType:
    """`apache_beam.ml.inference.base`, imported without `MODEL_MANAGER` if not yet imported."""
    if BASE in sys.modules:
        return sys.modules[BASE]
    blocked = MODEL_MANAGER not in sys.modules
    if blocked:
        sys.modules[MODEL_MANAGER] = None  # type: ignore[assignment]   # import raises ImportError
    try:
        import apache_beam.ml.inference.base as base
    finally:
        if blocked and sys.modules.get(MODEL_MANAGER, 0) is None:
            del sys.modules[MODEL_MANAGER]
    if getattr(base, "resource", 0) is None:
        setattr(base, "resource", stdlib_resource)  # noqa: B010
    return base


_base = import_inference_base()
ModelHandler = _base.ModelHandler
ModelMetadata = _base.ModelMetadata
PredictionResult = _base.PredictionResult
RunInference = _base.RunInference

__all__ = ["ModelHandler", "ModelMetadata", "PredictionResult", "RunInference", "import_inference_base"]
