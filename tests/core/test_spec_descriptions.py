"""Every field of every spec model carries a description, and every section a docstring: the spec
reference page (reference/spec.md) is generated from them. Descriptions are the attribute
docstrings under the fields (`SpecModel.model_config["use_attribute_docstrings"]`)."""
from __future__ import annotations

import importlib
import pkgutil
from typing import Any, Iterator, get_args

import pytest

from data_specs import models
from data_specs.models import (
    SPEC_MODELS,
    CosmosSpec,
    PassageSection,
    ProtoqaSpec,
    RecordSpec,
    SpecModel,
    unwrap,
)

SPECS = [RecordSpec, CosmosSpec, ProtoqaSpec]


def nested_models(annotation: Any) -> Iterator[type[SpecModel]]:
    """The SpecModel classes inside a field's type (directly, or in Optional / Union / List / Dict)."""
    bare, _ = unwrap(annotation)
    if isinstance(bare, type) and issubclass(bare, SpecModel):
        yield bare
        return
    for arg in get_args(bare):
        yield from nested_models(arg)


def walk(model: type[SpecModel], prefix: str = "") -> Iterator[tuple[str, type[SpecModel], str]]:
    """(dotted YAML path, owning section class, attribute name) of every field, recursively."""
    for name, info in model.model_fields.items():
        path = f"{prefix}{info.alias or name}"
        yield path, model, name
        for sub in nested_models(info.annotation):
            yield from walk(sub, path + ".")


def sections(model: type[SpecModel]) -> set[type[SpecModel]]:
    found = {model}
    for _, owner, name in walk(model):
        found.add(owner)
        found.update(nested_models(owner.model_fields[name].annotation))
    return found


def test_the_specs_are_the_shipped_ones():
    assert set(SPECS) == set(SPEC_MODELS.values())


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.__name__)
def test_every_field_has_a_description(spec):
    fields = list(walk(spec))
    assert fields
    missing = [path for path, owner, name in fields
               if not (owner.model_fields[name].description or "").strip()]
    assert not missing, f"{spec.__name__}: fields without a description: {', '.join(missing)}"


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.__name__)
def test_every_section_has_a_docstring(spec):
    missing = sorted(cls.__name__ for cls in sections(spec)
                     if not (cls.__dict__.get("__doc__") or "").strip())
    assert not missing, f"{spec.__name__}: sections without a docstring: {', '.join(missing)}"


def test_paths_use_the_yaml_keys():
    paths = {path for path, _, _ in walk(RecordSpec)}
    assert "annotator.allennlp-predictions.coref_input" in paths
    assert "filter.readers.cross-encoder.window_chars" in paths
    assert "passage.min_tokens" in paths


def test_descriptions_come_from_the_attribute_docstrings():
    assert SpecModel.model_config.get("use_attribute_docstrings") is True
    description = PassageSection.model_fields["min_tokens"].description or ""
    assert "passage body" in description and "§3.2" in description


def defined_sections() -> set[type[SpecModel]]:
    """Every SpecModel subclass defined in a module of the `data_specs.models` package."""
    found = set()
    for info in pkgutil.iter_modules(models.__path__, prefix=f"{models.__name__}."):
        module = importlib.import_module(info.name)
        found.update(cls for cls in vars(module).values()
                     if isinstance(cls, type) and issubclass(cls, SpecModel) and cls is not SpecModel
                     and cls.__module__ == module.__name__)
    return found


def test_the_walk_reaches_every_section_model():
    # Every SpecModel subclass of the package's modules is a section of some spec: none is skipped.
    defined = defined_sections()
    reached = set().union(*(sections(spec) for spec in SPECS))
    assert defined == reached, sorted(cls.__name__ for cls in defined ^ reached)


def test_the_package_names_every_section_model():
    # `from data_specs.models import AnySection` works for the sections of every module.
    unnamed = sorted(cls.__name__ for cls in defined_sections()
                     if getattr(models, cls.__name__, None) is not cls or cls.__name__ not in models.__all__)
    assert unnamed == []
