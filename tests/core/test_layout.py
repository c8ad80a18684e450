"""The layout rules of the design card, checked on the source: imports run one way
(data_specs <- filters <- transforms/core <- transforms/<dataset> <- pipeline), never between
datasets, never into private names, and never in a cycle (function-level imports count too, so a
cycle cannot hide behind one). transforms/core is a few shared modules and rooms by concern (io,
resume, progress, models, crowd, reporting); a new module goes in one of them. Inside `pipeline/` the four rooms import one way too:
cli -> graphs -> engine, cli -> outputs -> engine; the engine and the outputs never import a
dataset, and a dataset's graph or commands import only that dataset. Every module stays small."""
from __future__ import annotations

import ast
from pathlib import Path
from typing import Iterator, NamedTuple, Optional

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("data_specs", "filters", "transforms", "pipeline")
DATASETS = ("record", "cosmos", "protoqa")
ROOMS = ("cli", "graphs", "engine", "outputs")
# transforms/core: a small shared core beside rooms by concern.
CORE_ROOMS = ("io", "resume", "progress", "models", "crowd", "reporting")
CORE_TOP = {"accounting", "stages", "errors", "cache", "hashing", "dedup", "spread", "coders"}
# Which rooms of `pipeline/` each room may import (besides itself).
ROOM_IMPORTS = {"cli": {"graphs", "engine", "outputs"}, "graphs": {"engine"}, "outputs": {"engine"},
                "engine": set()}
# A module of one concern reads in one sitting; past this it holds two.
MAX_MODULE_LINES = 420


class Import(NamedTuple):
    source: str        # importing module
    target: str        # imported project module
    names: tuple[str, ...]
    line: int


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def project_modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            found[module_name(path)] = path
    return found


MODULES = project_modules()


def resolve(name: str) -> Optional[str]:
    """The project module an imported dotted name refers to (a module, or a name in one)."""
    while name:
        if name in MODULES:
            return name
        name = name.rpartition(".")[0]
    return None


def imports_of(module: str, path: Path) -> Iterator[Import]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = resolve(alias.name)
                if target:
                    yield Import(module, target, (), node.lineno)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            for alias in node.names:
                # `from transforms.record import queries` imports a module, not a name.
                target = resolve(f"{base}.{alias.name}") or resolve(base)
                if target:
                    names = () if target == f"{base}.{alias.name}" else (alias.name,)
                    yield Import(module, target, names, node.lineno)


ALL_IMPORTS = [imp for module, path in MODULES.items() for imp in imports_of(module, path)]


def layer(module: str) -> tuple[int, str]:
    """(rank, dataset or '') of a module in the one-way order."""
    parts = module.split(".")
    if parts[0] == "data_specs":
        return 0, ""
    if parts[0] == "filters":
        return 1, ""
    if parts[0] == "transforms":
        if len(parts) == 1 or parts[1] == "core":
            return 2, ""
        return 3, parts[1]
    return 4, ""


def where(imp: Import) -> str:
    return f"{MODULES[imp.source].relative_to(ROOT)}:{imp.line} imports {imp.target}"


def test_imports_run_one_way():
    upward = [where(i) for i in ALL_IMPORTS if layer(i.target)[0] > layer(i.source)[0]]
    assert upward == []


def test_datasets_share_only_through_core():
    sideways = [where(i) for i in ALL_IMPORTS
                if layer(i.source)[0] == layer(i.target)[0] == 3 and layer(i.source)[1] != layer(i.target)[1]]
    assert sideways == []


def test_filters_are_pure_predicates():
    heavy = ("apache_beam", "pyarrow", "torch", "transformers", "nltk")
    found = []
    for module, path in MODULES.items():
        if module.split(".")[0] != "filters":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            found += [f"{module}: {n}" for n in names if n.split(".")[0] in heavy]
    assert found == []


def test_no_private_names_across_modules():
    private = [f"{where(i)}: {n}" for i in ALL_IMPORTS for n in i.names
               if n.startswith("_") and not n.startswith("__") and i.target != i.source]
    assert private == []


def test_dataset_modules_in_known_packages():
    stray = [m for m in MODULES if m.startswith("transforms.") and m.split(".")[1] not in ("core", *DATASETS)]
    assert stray == []


def test_no_import_cycles():
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for imp in ALL_IMPORTS:
        if imp.target != imp.source:
            graph[imp.source].add(imp.target)
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, stack)
        stack.pop()
        state[node] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [])
    assert [" -> ".join(c) for c in cycles] == []


def room(module: str) -> str:
    """The room of a `pipeline` module ('' for the package itself and for other packages)."""
    parts = module.split(".")
    return parts[1] if parts[0] == "pipeline" and len(parts) > 1 else ""


def dataset_of(module: str) -> str:
    """The dataset a module belongs to: transforms.<dataset>.*, pipeline.<room>.<dataset>."""
    parts = module.split(".")
    if parts[0] == "transforms" and len(parts) > 1 and parts[1] in DATASETS:
        return parts[1]
    if parts[0] == "pipeline" and len(parts) > 2 and parts[2] in DATASETS:
        return parts[2]
    return ""


def room_breaches(imports: list[Import]) -> list[str]:
    """Imports between `pipeline` rooms against ROOM_IMPORTS, and dataset imports out of place:
    the engine or the outputs importing a dataset, one dataset's graph or commands another's."""
    found = []
    for imp in imports:
        source, target = room(imp.source), room(imp.target)
        if source and target and source != target and target not in ROOM_IMPORTS[source]:
            found.append(where(imp))
        wanted = dataset_of(imp.target) if imp.target.startswith("transforms.") else ""
        if source in ("engine", "outputs") and wanted:
            found.append(where(imp))
        elif source and wanted and dataset_of(imp.source) not in ("", wanted):
            found.append(where(imp))
    return found


def test_pipeline_is_four_rooms():
    loose = [m for m in MODULES if m.startswith("pipeline.") and room(m) not in ROOMS]
    assert loose == []


def test_transforms_core_is_a_small_core_and_rooms_by_concern():
    core = [m.split(".")[2:] for m in MODULES if m.startswith("transforms.core.")]
    loose = [".".join(parts) for parts in core
             if not (len(parts) == 1 and (parts[0] in CORE_TOP or parts[0] in CORE_ROOMS))
             and not (len(parts) == 2 and parts[0] in CORE_ROOMS)]
    assert loose == []
    assert {parts[0] for parts in core if len(parts) == 2} == set(CORE_ROOMS)


def test_rooms_import_one_way():
    assert room_breaches(ALL_IMPORTS) == []


def test_modules_stay_small():
    long = [f"{path.relative_to(ROOT)}: {n} lines" for path in MODULES.values()
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES]
    assert long == []


@pytest.mark.parametrize("source, target, breach", [
    ("pipeline.engine.runner", "pipeline.graphs.record", True),
    ("pipeline.engine.runner", "transforms.record.read", True),
    ("pipeline.outputs.protocol", "transforms.cosmos.read", True),
    ("pipeline.graphs.record", "pipeline.cli.main", True),
    ("pipeline.graphs.record", "transforms.cosmos.read", True),
    ("pipeline.cli.protoqa", "transforms.record.read", True),
    ("pipeline.graphs.record", "pipeline.engine.runner", False),
    ("pipeline.graphs.record", "transforms.record.read", False),
    ("pipeline.cli.main", "pipeline.outputs.protocol", False),
    ("pipeline.outputs.storage", "pipeline.engine.stores", False),
    ("pipeline.engine.runner", "transforms.core.progress.steps", False),
])
def test_room_rules_classify_examples(source, target, breach):
    """The room rules themselves, on hand-picked imports (modules need not exist)."""
    saved = dict(MODULES)
    MODULES.setdefault(source, ROOT / "x.py")
    try:
        assert bool(room_breaches([Import(source, target, (), 1)])) == breach
    finally:
        MODULES.clear()
        MODULES.update(saved)


@pytest.mark.parametrize("source, target, expected", [
    ("filters.record", "data_specs", 0), ("transforms.core.io.tables", "data_specs", 0),
    ("transforms.record.queries", "transforms.cosmos.read", 1), ("pipeline.cli.main", "transforms.core.io.tables", 0),
])
def test_layer_rules_classify_examples(source, target, expected):
    """The rules themselves: a sideways dataset import is caught, downward imports are not."""
    imp = Import(source, target, (), 1)
    sideways = layer(imp.source)[0] == layer(imp.target)[0] == 3 and layer(imp.source)[1] != layer(imp.target)[1]
    upward = layer(imp.target)[0] > layer(imp.source)[0]
    assert int(sideways or upward) == expected
