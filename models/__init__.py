"""Algebraic models under AID, one module per model (installed as ``aidopt.models``).

Each module defines an :class:`aidopt.contract.AggregatedModel` subclass, its data, aggregate and
solution classes, and the CLI hooks ``MODEL_CLASS``, ``add_cli_arguments(parser)`` and
``model_from_cli(args)``.
"""

#: model name → module, as used by ``aidopt solve MODEL``
MODEL_MODULES: dict[str, str] = {
    "lad": "aidopt.models.lad",
    "pu": "aidopt.models.pu",
    "svm": "aidopt.models.svm",
    "s3vm": "aidopt.models.s3vm",
    "cuts3vm": "aidopt.cuts3vm",
}


def special_solver_owners() -> dict[str, set[str]]:
    """Model-specific solver name → the models that offer it (e.g. 'fn' → {'lad'})."""
    import importlib

    owners: dict[str, set[str]] = {}
    for name, module in MODEL_MODULES.items():
        cls = getattr(importlib.import_module(module), "MODEL_CLASS", None)
        for solver in getattr(cls, "special_solvers", ()):
            owners.setdefault(solver, set()).add(name)
    return owners
