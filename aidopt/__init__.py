"""aidopt: aggregate-and-iterative-disaggregate (AID) optimization of machine-learning models.

Park & Klabjan, "An aggregate and iterative disaggregate algorithm with proven optimality in
machine learning", Machine Learning 105 (2016). Models live in :mod:`aidopt.models`.
"""

__version__ = "0.1.0"

from aidopt.driver import AIDSolver, Hook, solve
from aidopt.result import AIDResult, AIDStatus

__all__ = ["AIDResult", "AIDSolver", "AIDStatus", "Hook", "__version__", "solve"]
