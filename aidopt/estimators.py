"""scikit-learn facades: AID models as estimators (``fit``/``predict``, ``get_params``, clone).

``__init__`` only stores its arguments; everything is validated and computed in ``fit``; fitted
attributes end with an underscore (``coef_``, ``result_``, ``history_``, ``n_iter_``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted

from aidopt.driver import AIDSolver
from aidopt.models.lad import LADData, LADModel
from aidopt.validation import check_predict_input

__all__ = ["AIDLADRegressor"]


class _AIDParams:
    """The driver options shared by every facade."""

    def _solver(self, model) -> AIDSolver:
        return AIDSolver(
            model,
            solver=self.solver,
            tol=self.tol,
            max_iter=self.max_iter,
            time_limit=self.time_limit,
            rate=self.rate,
            random_state=self.random_state,
            solver_options=self.solver_options,
            verbose=self.verbose,
        )

    def _store(self, result) -> None:
        self.result_ = result
        self.history_ = result.history
        self.n_iter_ = result.iterations
        self.status_ = result.status.value


class AIDLADRegressor(_AIDParams, RegressorMixin, BaseEstimator):
    """Least-absolute-deviation regression fitted by AID, with an optimality certificate.

    After ``fit``: ``coef_``, ``intercept_``, ``status_`` ('optimal' when certified),
    ``result_`` (the :class:`aidopt.AIDResult`), ``history_`` (per-iteration DataFrame).
    The aggregated problems are solved by Frisch–Newton (``solver="fn"``, measured faster than
    HiGHS dual simplex, docs/lad.md); any aidopt solver name ("highs", "gurobi", ...) works.
    """

    def __init__(
        self,
        *,
        fit_intercept: bool = True,
        solver: str = "fn",
        tol: float = 1e-4,
        max_iter: int | None = None,
        time_limit: float | None = None,
        rate: float | None = None,
        random_state: int | None = 0,
        solver_options: dict[str, Any] | None = None,
        verbose: int | bool = False,
    ) -> None:
        self.fit_intercept = fit_intercept
        self.solver = solver
        self.tol = tol
        self.max_iter = max_iter
        self.time_limit = time_limit
        self.rate = rate
        self.random_state = random_state
        self.solver_options = solver_options
        self.verbose = verbose

    def fit(self, X: ArrayLike, y: ArrayLike) -> AIDLADRegressor:
        names = getattr(X, "columns", None)
        data = LADData.from_arrays(X, y, None if names is None else [str(c) for c in names])
        result = self._solver(LADModel(fit_intercept=self.fit_intercept)).solve(data)
        self._store(result)
        self.coef_ = result.solution.coef
        self.intercept_ = result.solution.intercept
        self.n_features_in_ = data.m
        if names is not None:
            self.feature_names_in_ = np.asarray(data.feature_names, dtype=object)
        return self

    def predict(self, X: ArrayLike) -> NDArray[np.float64]:
        check_is_fitted(self, "coef_")
        X = check_predict_input(X, self.n_features_in_, type(self).__name__)
        return X @ self.coef_ + self.intercept_
