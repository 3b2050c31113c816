"""scikit-learn facades, generated from the models' declared options.

An estimator's parameters are its model's declared :class:`~aidopt.options.Option` tuple plus
the run's (:data:`aidopt.driver.RUN_OPTIONS`: solver, tol, max_iter, time_limit, rate,
random_state, interface, solver_options, verbose) — no third copy of any option. ``__init__``
only stores its keyword arguments (scikit-learn's convention: ``get_params``/``clone`` work);
``fit`` validates and solves; fitted attributes end with an underscore (``result_``,
``certificate_``, ``history_``, ``n_iter_``, ``status_``, ``n_features_in_``).

Every registered model has one (:func:`estimator_for`, built from the registry: a model added as
one file or through the ``aidopt.models`` entry points gets it with no edit here); the LAD model
also has the hand-finished :class:`AIDLADRegressor` (``coef_``, ``predict``).
"""

from __future__ import annotations

import inspect
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted

from aidopt.data.containers import RegressionData
from aidopt.driver import RUN_OPTIONS, AIDSolver
from aidopt.models.lad import LADModel
from aidopt.options import Option
from aidopt.result import AIDResult
from aidopt.validation import check_predict_input

__all__ = ["AIDEstimator", "AIDLADRegressor", "estimator_for", "estimator_parameters"]


def estimator_parameters(model_options: tuple[Option, ...]) -> tuple[Option, ...]:
    """The parameters of an estimator: the model's options, then the run's."""
    return (*model_options, *RUN_OPTIONS)


class AIDEstimator(BaseEstimator):
    """Base of the generated estimators: the model from the model parameters, the run from
    the run parameters, and the fitted attributes every estimator has."""

    _model_class: ClassVar[Any]
    _parameters: ClassVar[tuple[Option, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "_parameters" in cls.__dict__:
            cls.__init__ = _keyword_init(cls._parameters)  # type: ignore[method-assign]

    def _model(self) -> Any:
        names = {o.name for o in self._model_class.options}
        return self._model_class(**{k: v for k, v in self.get_params().items() if k in names})

    def _run(self, data: Any) -> AIDResult:
        run = {o.name: getattr(self, o.name) for o in RUN_OPTIONS}
        result = AIDSolver(self._model(), **run).solve(data)
        self.result_ = result
        self.certificate_ = result.certificate
        self.history_ = result.history
        self.n_iter_ = result.iterations
        self.status_ = result.status.value
        return result


def _keyword_init(parameters: tuple[Option, ...]):
    """__init__(self, *, <parameters>) that stores each argument as given."""
    signature = inspect.Signature(
        [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
        + [
            inspect.Parameter(o.name, inspect.Parameter.KEYWORD_ONLY, default=o.default)
            for o in parameters
        ]
    )

    def __init__(self, **kwargs: Any) -> None:
        bound = signature.bind(self, **kwargs)
        bound.apply_defaults()
        for name, value in list(bound.arguments.items())[1:]:
            setattr(self, name, value)

    __init__.__signature__ = signature  # type: ignore[attr-defined]
    return __init__


class _GenericEstimator(AIDEstimator):
    """``fit(X, y=None)``: the model's data from the arrays (``data_type.from_arrays``), then
    the run; ``solution_`` is the model's solution, ``objective_`` its certified objective."""

    def fit(self, X: ArrayLike, y: ArrayLike | None = None) -> _GenericEstimator:
        data_type = self._model_class.data_type
        data = data_type.from_arrays(X) if y is None else data_type.from_arrays(X, y)
        result = self._run(data)
        self.solution_ = result.solution
        self.objective_ = result.objective
        self.n_features_in_ = data.m
        return self


def estimator_for(model: str | type) -> type[AIDEstimator]:
    """A scikit-learn estimator class for a registered model (by name) or a model class: its
    parameters are the model's options and the run's, ``fit`` solves by AID."""
    if isinstance(model, str):
        from aidopt.registry import model as registered

        model = registered(model)
    name = f"AID{model.__name__.removesuffix('Model')}"
    attributes = {
        "_model_class": model,
        "_parameters": estimator_parameters(model.options),
        "__doc__": f"{(model.__doc__ or model.__name__).strip().splitlines()[0]} (fitted by AID)",
        "__module__": __name__,
    }
    return type(name, (_GenericEstimator,), attributes)


class AIDLADRegressor(RegressorMixin, AIDEstimator):
    """Least absolute deviations regression fitted by AID, with an optimality certificate.

    Parameters: those of :class:`aidopt.models.lad.LADModel` and of the run (see
    ``aidopt models --markdown``). After ``fit``: ``coef_``, ``intercept_``, ``status_``
    ('optimal' when certified), ``certificate_``, ``result_`` (the :class:`aidopt.AIDResult`),
    ``history_`` (per-iteration DataFrame), ``n_iter_``. The aggregated problems go to the
    model's default solver (Frisch–Newton, measured the fastest) unless ``solver`` names another.
    """

    _model_class: ClassVar[Any] = LADModel
    _parameters: ClassVar[tuple[Option, ...]] = estimator_parameters(LADModel.options)

    def fit(self, X: ArrayLike, y: ArrayLike) -> AIDLADRegressor:
        names = getattr(X, "columns", None)
        data = RegressionData.from_arrays(X, y, None if names is None else [str(c) for c in names])
        result = self._run(data)
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
