"""Exceptions and warnings raised by aidopt.

Every error a user can trigger is one of these, with a message that names the problem
(the parameter, the shapes, the solver) so that no traceback from inside a solver is needed.
"""

from __future__ import annotations


class AidoptError(Exception):
    """Base class of every aidopt error."""


class InvalidParameterError(AidoptError, ValueError, TypeError):
    """A parameter has a wrong type or value.

    Messages follow scikit-learn: "The 'M' parameter of SVMModel must be a float in the range
    (0.0, inf). Got -1 instead."
    """


class DataError(AidoptError, ValueError):
    """The data cannot be used: wrong shapes, NaN/inf, a missing column, a single class, ..."""


class SolverUnavailableError(AidoptError, RuntimeError):
    """The requested solver is not installed (the message carries an install hint)."""


class SolverCapabilityError(AidoptError, RuntimeError):
    """The solver cannot handle this problem class (raised before any solve)."""


class SolverLicenseError(AidoptError, RuntimeError):
    """The solver refused the model because of its licence (e.g. gurobipy's size limit)."""


class SolverError(AidoptError, RuntimeError):
    """The solver failed; the message names the solver and its own status."""


class TimeLimitError(SolverError):
    """The time limit was reached before any aggregated problem was solved: no solution."""


class InfeasibleSettingError(AidoptError, ValueError):
    """The options make the model infeasible (e.g. a balance constraint no solution can meet)."""


class DataWarning(UserWarning):
    """The data are legal but make the answer less than it seems (e.g. a rank-deficient design:
    the coefficients are not unique)."""


class ConvergenceWarning(UserWarning):
    """A run stopped on an iteration or time limit before it could certify optimality."""
