"""aidopt: aggregate-and-iterative-disaggregate (AID) optimization of machine-learning models.

Park & Klabjan, "An aggregate and iterative disaggregate algorithm with proven optimality in
machine learning", Machine Learning 105 (2016). Models live in :mod:`aidopt.models`.
"""

from aidopt._version import __version__


def _checkout_models() -> None:
    """In a source checkout, let ``aidopt.models`` resolve to the top-level ``models/`` folder.

    The models live in ``models/`` and are installed as ``aidopt.models`` (pyproject.toml,
    ``[tool.setuptools.package-dir]``). An installed copy — regular or editable — finds them by
    itself; but when this very folder is imported from a checkout (``python -m pytest`` from the
    repository root puts the root first on sys.path, and the local ``aidopt/`` then shadows the
    installed package), ``aidopt/models`` does not exist. Then the repository root joins the
    package path, so that ``aidopt.models`` is ``<root>/models``. Nothing changes in an
    installed copy, where ``aidopt/models`` exists.
    """
    import os

    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(here)
    if (
        not os.path.isdir(os.path.join(here, "models"))
        and os.path.isfile(os.path.join(root, "models", "__init__.py"))
        and os.path.isfile(os.path.join(root, "pyproject.toml"))
        and root not in __path__
    ):
        __path__.append(root)


_checkout_models()

from aidopt.core.driver import AIDSolver, Hook, solve  # noqa: E402 (after the path set-up)
from aidopt.core.result import AIDResult, AIDStatus  # noqa: E402

__all__ = ["AIDResult", "AIDSolver", "AIDStatus", "Hook", "__version__", "solve"]
