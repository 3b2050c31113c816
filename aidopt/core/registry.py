"""One registry for everything a name on the command line can mean: models, methods, solvers.

* **Models** (formulations solved by AID): every module of the package :mod:`aidopt.models`
  that defines ``MODEL`` (an :class:`~aidopt.core.contract.AggregatedModel` subclass whose ``name``
  is the module's name: ``models/lad.py`` registers ``lad``), and every
  entry point of the group ``aidopt.models`` (``name = "package.module:Class"``) of any
  installed distribution. A new model is one file in ``models/`` — or one entry point in a
  third-party package — and ``aidopt solve/generate/bench/solvers`` and the estimators find it.
* **Methods** that are not AID (CutS3VM, ...): modules of :mod:`aidopt.baselines` that define
  ``METHOD``, and the entry point group ``aidopt.methods``. Same command-line conventions.
* **Solvers**: the built-in adapters below and the entry point group ``aidopt.solvers``; any
  other name is handed to Pyomo's ``SolverFactory``.

Lookups are lazy (a module is imported when its name is first needed), and every unknown name
is an error that lists the known ones.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
import re
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any

from aidopt.exceptions import AidoptError, SolverUnavailableError

__all__ = [
    "Entry",
    "get_solver",
    "method",
    "methods",
    "model",
    "models",
    "register_solver",
    "solver_names",
    "solvers_for",
]

#: the built-in solvers, name → "module:Class" (in preference order)
BUILTIN_SOLVERS: dict[str, str] = {
    "highs": "aidopt.solvers.highs:HighsAdapter",
    "gurobi": "aidopt.solvers.gurobi:GurobiAdapter",
    "cplex": "aidopt.solvers.cplex:CplexAdapter",
    "scip": "aidopt.solvers.scip:ScipAdapter",
    "highs-oa": "aidopt.solvers.outer_approximation:HighsOuterApproximation",
    "bnb": "aidopt.solvers.s3vm_branch_and_bound:S3VMBranchAndBound",
    "fn": "aidopt.solvers.frisch_newton:FrischNewtonSolver",
    "libsvm": "aidopt.solvers.libsvm:LibsvmSolver",
    "liblinear": "aidopt.solvers.libsvm:LiblinearSolver",
    "usmo": "aidopt.solvers.usmo:USMOSolver",
    "boxqp": "aidopt.solvers.box_qp:BoxQPSolver",
    "decomposition": "aidopt.solvers.kernel_decomposition:DecompositionSolver",
    "activeset": "aidopt.solvers.svm_active_set:SVMActiveSetSolver",
}


@dataclass(frozen=True)
class Entry:
    """A registered model or method: its name, where it lives, and (once loaded) its class."""

    name: str
    target: str  # "module:attribute" or "module" (then the module's MODEL / METHOD)
    kind: str  # "model" or "method"

    def load(self) -> Any:
        """The class (its module imported on first use); its ``name`` must be the entry's."""
        module_name, _, attr = self.target.partition(":")
        module = importlib.import_module(module_name)
        cls = getattr(module, attr or ("MODEL" if self.kind == "model" else "METHOD"))
        if getattr(cls, "name", self.name) != self.name:
            raise AidoptError(
                f"The {self.kind} registered as {self.name!r} ({self.target}) is named "
                f"{cls.name!r}: a {self.kind} module's file name is its name."
            )
        return cls


def _load(target: str) -> Any:
    module_name, _, attr = target.partition(":")
    return getattr(importlib.import_module(module_name), attr)


def _scan(package: str, attribute: str, kind: str) -> dict[str, Entry]:
    """Modules of ``package`` that assign ``attribute`` at top level, by module name.

    The modules are not imported (a command that uses one model does not pay for the others):
    the source is read for a line ``MODEL = ...``; :meth:`Entry.load` checks that the class's
    ``name`` is the module's name.
    """
    found: dict[str, Entry] = {}
    pkg = importlib.import_module(package)
    assignment = re.compile(rf"^{attribute}\s*(?::[^=]*)?=", re.MULTILINE)
    for info in pkgutil.iter_modules(pkg.__path__):
        if info.name.startswith("_") or info.ispkg:
            continue
        module_name = f"{package}.{info.name}"
        spec = info.module_finder.find_spec(module_name, None)  # type: ignore[call-arg]
        loader = getattr(spec, "loader", None)
        source = loader.get_source(module_name) if hasattr(loader, "get_source") else None  # type: ignore[union-attr]
        if source is not None and assignment.search(source):
            found[info.name] = Entry(info.name, f"{module_name}:{attribute}", kind)
    return found


@functools.cache
def _installed_entry_points() -> Any:
    """Every installed distribution's entry points, read once (each read scans them all)."""
    return entry_points()


def _entry_points(group: str, kind: str) -> dict[str, Entry]:
    found = _installed_entry_points().select(group=group)
    return {ep.name: Entry(ep.name, ep.value, kind) for ep in found}


@functools.cache
def models() -> dict[str, Entry]:
    """Every model: the package's own, then third-party entry points (group ``aidopt.models``)."""
    return {**_scan("aidopt.models", "MODEL", "model"), **_entry_points("aidopt.models", "model")}


@functools.cache
def methods() -> dict[str, Entry]:
    """Every method that is not AID (group ``aidopt.methods``)."""
    return {
        **_scan("aidopt.baselines", "METHOD", "method"),
        **_entry_points("aidopt.methods", "method"),
    }


def model(name: str) -> Any:
    """The model class registered under ``name``."""
    found = models().get(name)
    if found is None:
        raise AidoptError(f"Unknown model {name!r}; the models are: {', '.join(sorted(models()))}.")
    return found.load()


def method(name: str) -> Any:
    """The method class registered under ``name``."""
    found = methods().get(name)
    if found is None:
        known = ", ".join(sorted(methods()))
        raise AidoptError(f"Unknown method {name!r}; the methods are: {known}.")
    return found.load()


@functools.cache
def _solver_targets() -> dict[str, str]:
    extra = {ep.name: ep.value for ep in _installed_entry_points().select(group="aidopt.solvers")}
    return {**BUILTIN_SOLVERS, **extra}


_REGISTERED: dict[str, type] = {}


def register_solver(name: str, cls: type) -> None:
    """Register a solver adapter class under ``name`` at run time (entry points do it for
    installed packages; tests and notebooks can do it here)."""
    _REGISTERED[name.lower()] = cls


def solver_names() -> list[str]:
    """The registered solver names, in preference order."""
    return list(dict.fromkeys([*_solver_targets(), *_REGISTERED]))


def get_solver(name: str) -> Any:
    """The adapter for a solver name: a registered one, ``pyomo:NAME``, or any Pyomo name."""
    from aidopt.solvers.pyomo import PyomoAdapter

    if not isinstance(name, str) or not name:
        raise ValueError(f"A solver name must be a non-empty string, got {name!r}.")
    if name.startswith("pyomo:"):
        return PyomoAdapter(name.removeprefix("pyomo:"))
    if name.lower() in _REGISTERED:
        return _REGISTERED[name.lower()]()
    target = _solver_targets().get(name.lower())
    return _load(target)() if target is not None else PyomoAdapter(name)


def solvers_for(model_cls: Any, *, available_only: bool = True) -> list[str]:
    """The registered solvers that can take this model's aggregated problem (a structure it
    offers, or its problem class), in preference order."""
    names = []
    for name in solver_names():
        adapter = get_solver(name)
        if available_only and not adapter.is_available():
            continue
        structures, traits = tuple(model_cls.structures), model_cls.structure_traits
        if adapter.handles(model_cls.problem_class, structures, traits):
            names.append(name)
    return names


def check_solver_available(name: str) -> Any:
    """The adapter, or SolverUnavailableError with its install hint."""
    adapter = get_solver(name)
    if not adapter.is_available():
        raise SolverUnavailableError(
            f"Solver '{adapter.name}' is not available. {adapter.INSTALL_HINT}".strip()
        )
    return adapter
