"""The package's import graph has no cycles (issue 57: the four that had grown are gone, and the
linear and kernel SVM share ``models/svm_parts.py`` instead of importing each other), and no
layer imports one above it. Imports under ``if TYPE_CHECKING:`` do not count (they never run);
function-level ones do."""

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


#: who may not import whom (issue 57): the layers below never import the ones above them
FORBIDDEN = {
    # (a model may use aidopt.svc.domain, the kernel expansion f(x) its solution is)
    "aidopt.models": (
        "aidopt.bench",
        "aidopt.cli",
        "aidopt.estimators",
        "aidopt.svc.fit",
        "aidopt.svc.estimator",
        "aidopt.svc.command",
    ),
    "aidopt.baselines": ("aidopt.bench", "aidopt.models", "aidopt.cli", "aidopt.estimators"),
    "aidopt.estimators": ("aidopt.models",),  # the models come from the registry
    "aidopt.solvers": ("aidopt.models", "aidopt.bench", "aidopt.cli", "aidopt.estimators"),
    "aidopt.engine": ("aidopt.models", "aidopt.bench", "aidopt.cli", "aidopt.estimators"),
    "aidopt.data": ("aidopt.models", "aidopt.bench", "aidopt.cli", "aidopt.estimators"),
    "aidopt.driver": ("aidopt.models", "aidopt.bench", "aidopt.cli", "aidopt.estimators"),
    "aidopt.contract": ("aidopt.models", "aidopt.bench", "aidopt.cli", "aidopt.estimators"),
    "aidopt.certificate": ("aidopt.models", "aidopt.bench", "aidopt.cli", "aidopt.estimators"),
}


def test_no_upward_imports():
    modules = _modules()
    wrong = []
    for name, path in modules.items():
        for layer, banned in FORBIDDEN.items():
            if name != layer and not name.startswith(layer + "."):
                continue
            for target in _imports(path, name, modules):
                if any(target == b or target.startswith(b + ".") for b in banned):
                    wrong.append(f"{name} -> {target}")
    assert not wrong, wrong
