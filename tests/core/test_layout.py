"""The layout rules of the design card, checked on the source: imports run one way
(data_specs <- filters <- transforms/core <- transforms/<dataset> <- pipeline), never between
datasets, never into private names, and never in a cycle (function-level imports count too, so a
cycle cannot hide behind one)."""
from __future__ import annotations

import ast
from pathlib import Path
from typing import Iterator, NamedTuple, Optional

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("data_specs", "filters", "transforms", "pipeline")
DATASETS = ("record", "cosmos", "protoqa")


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


@pytest.mark.parametrize("source, target, expected", [
    ("filters.record", "data_specs", 0), ("transforms.core.io", "data_specs", 0),
    ("transforms.record.queries", "transforms.cosmos.read", 1), ("pipeline.cli.main", "transforms.core.io", 0),
])
def test_layer_rules_classify_examples(source, target, expected):
    """The rules themselves: a sideways dataset import is caught, downward imports are not."""
    imp = Import(source, target, (), 1)
    sideways = layer(imp.source)[0] == layer(imp.target)[0] == 3 and layer(imp.source)[1] != layer(imp.target)[1]
    upward = layer(imp.target)[0] > layer(imp.source)[0]
    assert int(sideways or upward) == expected
