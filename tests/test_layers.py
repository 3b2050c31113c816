"""The package's import graph has no cycles (issue 57: the four that had grown are gone, and the
linear and kernel SVM share framework modules instead of importing each other), no layer
imports one above it, and the folders are the layers. Imports under ``if TYPE_CHECKING:`` do not
count (they never run); function-level ones do."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _modules() -> dict[str, Path]:
    found = {}
    for path in [*(ROOT / "aidopt").rglob("*.py"), *(ROOT / "models").glob("*.py")]:
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[0] == "models":
            parts = ("aidopt", *parts)
        name = ".".join(p for p in parts if p != "__init__")
        found[name] = path
    return found


def _imports(path: Path, name: str, modules: dict[str, Path]) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    hidden = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            hidden |= {id(n) for n in ast.walk(node)}
    out = set()
    for node in ast.walk(tree):
        if id(node) in hidden:
            continue
        if isinstance(node, ast.Import):
            out |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                out.add(full if full in modules else node.module)
    return {m for m in out if m in modules and m != name}


def _cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[frozenset[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(frozenset(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycles():
    modules = _modules()
    graph = {name: _imports(path, name, modules) for name, path in modules.items()}
    assert not _cycles(graph), sorted(sorted(c) for c in _cycles(graph))


def test_the_version_is_the_projects():
    from aidopt import __version__

    project = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert re.search(r'^version = "([^"]+)"', project, re.M).group(1) == __version__


#: the layers of the package, bottom to top (issue 57): a module imports only its own layer and
#: the ones below it. The folders are the layers; the top-level modules are the front ends.
LAYERS = (
    ("aidopt._version", "aidopt.exceptions", "aidopt.common"),
    ("aidopt.numerics",),
    ("aidopt.solvers", "aidopt.data"),
    ("aidopt.core", "aidopt.engine"),
    ("aidopt.models", "aidopt.baselines"),
    ("aidopt.plots",),
    ("aidopt.svc", "aidopt.estimators", "aidopt.show", "aidopt.verify"),
    ("aidopt.bench",),
    ("aidopt.cli",),
    ("aidopt",),
)


def _layer(module: str) -> int:
    for level, members in enumerate(LAYERS):
        if any(module == m or module.startswith(m + ".") for m in members if m != "aidopt"):
            return level
    assert module == "aidopt", f"{module} belongs to no layer: add it to LAYERS"
    return len(LAYERS) - 1


def test_no_upward_imports():
    modules = _modules()
    wrong = [
        f"{name} -> {target}"
        for name, path in modules.items()
        for target in _imports(path, name, modules)
        if _layer(target) > _layer(name)
    ]
    assert not wrong, wrong


def test_estimators_take_models_from_the_registry():
    modules = _modules()
    for name in ("aidopt.estimators", "aidopt.svc.estimator"):
        imported = _imports(modules[name], name, modules)
        assert not any(t.startswith("aidopt.models") for t in imported), name


def test_at_most_eight_top_level_modules():
    top = sorted(p.name for p in (ROOT / "aidopt").glob("*.py"))
    assert len(top) <= 8, top
