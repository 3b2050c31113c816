"""scikit-learn facades, generated from the models' declared options.

An estimator's parameters are its model's declared :class:`~aidopt.common.options.Option` tuple
(with the command-line extras the model's ``from_options`` takes, e.g. the SVM's ``kernel``) plus
the run's (:data:`aidopt.core.driver.RUN_OPTIONS`: solver, tol, max_iter, time_limit, rate,
random_state, interface, solver_options, verbose) — no third copy of any option. ``__init__`` only
stores its keyword arguments (scikit-learn's convention: ``get_params``/``clone`` work); ``fit``
validates with scikit-learn's own ``validate_data`` (so NaN, complex, empty or mis-shaped input
fails with scikit-learn's messages) and solves; fitted attributes end with an underscore
(``result_``, ``certificate_``, ``history_``, ``n_iter_``, ``status_``, ``n_features_in_``).

Every registered model has one (:func:`estimator_for`, built from the registry: a model added as
one file or through the ``aidopt.models`` entry points gets it with no edit here). Finished
estimators with the attributes scikit-learn users expect: :class:`AIDLADRegressor`,
:class:`AIDQuantileRegressor` and :class:`AIDSVC`; support-vector clustering is
:class:`SupportVectorClustering` (:mod:`aidopt.svc.estimator`).

A model option whose name scikit-learn reserves for another meaning is renamed here
(``warm_start`` means "reuse the last fit" to scikit-learn; LAD's is the inner solver's warm
start: ``inner_warm_start``).
"""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import (
    _check_sample_weight,
    check_consistent_length,
    check_is_fitted,
    column_or_1d,
    validate_data,
)

from aidopt.baselines.cuts3vm import CutS3VM
from aidopt.common.options import Option, keyword_init
from aidopt.common.validation import check_predict_input, in_memory
from aidopt.core.driver import RUN_OPTIONS, AIDSolver
from aidopt.core.registry import model as registered_model
from aidopt.core.result import AIDResult
from aidopt.data.containers import (
    BinaryData,
    PositiveUnlabeledData,
    RegressionData,
    SemiSupervisedData,
)
from aidopt.exceptions import DataError
from aidopt.svc.estimator import SupportVectorClustering

# the models come from the registry, as for any model (the estimators import none of them)
LADModel = registered_model("lad")
QuantileModel = LADModel.variants()["--quantile TAU"]
PUModel = registered_model("pu")
S3VMModel = registered_model("s3vm")
SVMModel = registered_model("svm")

__all__ = [
    "AIDS3VC",
    "AIDSVC",
    "AIDEstimator",
    "AIDLADRegressor",
    "AIDPUClassifier",
    "AIDQuantileRegressor",
    "CutS3VMClassifier",
    "SupportVectorClustering",
    "estimator_for",
    "estimator_parameters",
]

#: model options renamed in the estimators (scikit-learn gives these names another meaning)
RENAMED = {"warm_start": "inner_warm_start"}


def estimator_parameters(model_class: Any, *, extras: bool = True) -> tuple[Option, ...]:
    """The parameters of an estimator: the model's options (with ``extras``, the command-line
    extras that its ``from_options`` takes, replacing an option of the same name), then the
    run's."""
    taken: tuple[Option, ...] = tuple(getattr(model_class, "cli_extras", ())) if extras else ()
    replaced = {o.name for o in taken}
    model = [o for o in model_class.options if o.name not in replaced] + list(taken)
    return (
        *(dataclasses.replace(o, name=RENAMED.get(o.name, o.name)) for o in model),
        *RUN_OPTIONS,
    )


class AIDEstimator(BaseEstimator):
    """Base of the estimators: the model from the model parameters, the run from the run
    parameters, and the fitted attributes every estimator has."""

    _model_class: ClassVar[Any]
    _parameters: ClassVar[tuple[Option, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "_parameters" in cls.__dict__:
            cls.__init__ = keyword_init(cls._parameters)  # type: ignore[method-assign]

    def _model(self) -> Any:
        params = self.get_params()
        run = {o.name for o in RUN_OPTIONS}
        back = {new: old for old, new in RENAMED.items()}
        values = {back.get(k, k): v for k, v in params.items() if k not in run}
        return self._model_class.from_options(**values)

    def _run(self, data: Any, model: Any = None) -> AIDResult:
        """AID on ``data`` with the run parameters (the model: this estimator's, or ``model``),
        and the fitted attributes every estimator has."""
        run = {o.name: getattr(self, o.name) for o in RUN_OPTIONS}
        result = AIDSolver(self._model() if model is None else model, **run).solve(data)
        self.result_ = result
        self.certificate_ = result.certificate
        self.history_ = result.history
        self.n_iter_ = result.iterations
        self.status_ = result.status.value
        return result

    #: the estimator keeps scipy.sparse X sparse (CSR), in fit and predict
    _accepts_sparse: ClassVar[bool] = False

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = self._accepts_sparse
        return tags

    def _rows(self, X: ArrayLike) -> NDArray[np.float64]:
        """Rows to score: fitted, finite, float64, with the fitted number of features."""
        check_is_fitted(self)
        (X,) = in_memory(X)
        sparse = self._accepts_sparse
        rows = check_predict_input(
            X, self.n_features_in_, type(self).__name__, accept_sparse=sparse
        )
        validate_data(self, X, reset=False, skip_check_array=True)  # feature names
        return rows


class _GenericEstimator(AIDEstimator):
    """``fit(X, y=None, sample_weight=None)``: the model's data from the arrays
    (``data_type.from_arrays``; y only for a model with a target), validated as scikit-learn
    does, then the run; ``solution_`` is the model's solution, ``objective_`` its certified
    objective."""

    def fit(
        self, X: ArrayLike, y: ArrayLike | None = None, sample_weight: ArrayLike | None = None
    ) -> _GenericEstimator:
        """``sample_weight`` ω_i ≥ 0 makes row i's loss count ω_i times (rows of weight 0 are
        left out); a model that takes no weights refuses them by name."""
        data_type = self._model_class.data_type
        X, y, sample_weight = in_memory(X, y, sample_weight)
        names = getattr(X, "columns", None)
        features = None if names is None else [str(c) for c in names]
        unsupervised = data_type.target == "none"
        if unsupervised:
            X = validate_data(self, X, dtype=np.float64, ensure_min_samples=2)
            y = np.zeros(np.shape(X)[0])  # a stand-in that the weight-0 filter below cuts like X
        else:
            X, y = validate_data(self, X, y, dtype=np.float64, ensure_min_samples=2)
        X, y, weight = _weighted_rows(X, y, sample_weight)
        rows = (X,) if unsupervised else (X, y)
        data = data_type.from_arrays(*rows, features, weight=weight)
        result = self._run(data)
        self.solution_ = result.solution
        self.objective_ = result.objective
        return self


class _GenericRegressor(RegressorMixin, _GenericEstimator):
    """A model with a linear predictor x·w + b (its solution's ``coef``, ``intercept``):
    ``coef_``, ``intercept_`` and ``predict`` after ``fit``."""

    def fit(
        self, X: ArrayLike, y: ArrayLike | None = None, sample_weight: ArrayLike | None = None
    ) -> _GenericRegressor:
        super().fit(X, y, sample_weight)
        self.coef_ = self.solution_.coef
        self.intercept_ = self.solution_.intercept
        return self

    def predict(self, X: ArrayLike) -> NDArray[np.float64]:
        """The fitted linear predictor x·w + b on the rows of X."""
        return np.asarray(self._rows(X) @ self.coef_).ravel() + self.intercept_


_GENERATED: dict[str, type[AIDEstimator]] = {}  # the classes estimator_for made, by name


def estimator_for(model: str | type) -> type[AIDEstimator]:
    """A scikit-learn estimator class for a registered model (by name) or a model class: its
    parameters are the model's options and the run's, ``fit`` solves by AID. The class is
    ``aidopt.estimators.AID<Model>`` (found by that name, so its estimators pickle)."""
    cls: Any = registered_model(model) if isinstance(model, str) else model
    name = f"AID{cls.__name__.removesuffix('Model')}"
    made = _GENERATED.get(name)
    if made is not None and made._model_class is cls:
        return made
    attributes = {
        "_model_class": cls,
        "_parameters": estimator_parameters(cls),
        "__doc__": f"{(cls.__doc__ or cls.__name__).strip().splitlines()[0]} (fitted by AID)",
        "__module__": __name__,
    }
    base = _GenericRegressor if cls.data_type is RegressionData else _GenericEstimator
    made = _GENERATED[name] = type(name, (base,), attributes)
    return made


def __getattr__(name: str) -> type[AIDEstimator]:
    """``aidopt.estimators.AID<Model>`` for every registered model (PEP 562), as pickle looks
    estimators up."""
    from aidopt.core.registry import model as registered
    from aidopt.core.registry import models

    for key in models():
        cls = registered(key)
        if f"AID{cls.__name__.removesuffix('Model')}" == name:
            return estimator_for(cls)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class _LinearRegressor(RegressorMixin, AIDEstimator):
    _accepts_sparse: ClassVar[bool] = True

    def fit(
        self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None
    ) -> _LinearRegressor:
        """Fit by AID; ``sample_weight`` w_i ≥ 0 makes row i's loss count w_i times (rows of
        weight 0 are left out: they do not count); a scipy.sparse X stays sparse."""
        X, y, sample_weight = in_memory(X, y, sample_weight)
        names = getattr(X, "columns", None)
        X, y = validate_data(
            self, X, y, y_numeric=True, dtype=np.float64, ensure_min_samples=2, accept_sparse="csr"
        )
        features = None if names is None else [str(c) for c in names]
        X, y, weight = _weighted_rows(X, y, sample_weight)
        result = self._run(RegressionData.from_arrays(X, y, features, weight=weight))
        self.coef_ = result.solution.coef
        self.intercept_ = result.solution.intercept
        return self

    def predict(self, X: ArrayLike) -> NDArray[np.float64]:
        """The fitted linear predictor x β + β₀ on the rows of X."""
        return np.asarray(self._rows(X) @ self.coef_).ravel() + self.intercept_


class AIDLADRegressor(_LinearRegressor):
    """Least absolute deviations regression fitted by AID, with an optimality certificate.

    Parameters: those of :class:`aidopt.models.lad.LADModel` (its ``warm_start`` as
    ``inner_warm_start``) and of the run (see ``aidopt models --markdown``). After ``fit``:
    ``coef_``, ``intercept_``, ``status_`` ('optimal' when certified), ``certificate_``,
    ``result_`` (the :class:`aidopt.AIDResult`), ``history_`` (per-iteration DataFrame),
    ``n_iter_``. The aggregated problems go to the model's default solver (Frisch–Newton,
    measured the fastest) unless ``solver`` names another.
    """

    _model_class: ClassVar[Any] = LADModel
    _parameters: ClassVar[tuple[Option, ...]] = estimator_parameters(LADModel, extras=False)


class AIDQuantileRegressor(_LinearRegressor):
    """Quantile regression at level ``quantile`` fitted by AID (scikit-learn's
    ``QuantileRegressor(alpha=0)`` problem), with an optimality certificate; as
    :class:`AIDLADRegressor` otherwise (``quantile=0.5`` is LAD)."""

    _model_class: ClassVar[Any] = QuantileModel
    _parameters: ClassVar[tuple[Option, ...]] = estimator_parameters(QuantileModel, extras=False)


class _BinaryClassifier(ClassifierMixin, AIDEstimator):
    """Two classes; ``classes_[1]`` where the decision function f is positive."""

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        return tags

    def decision_function(self, X: ArrayLike) -> NDArray[np.float64]:
        """f(x); > 0 means ``classes_[1]``."""
        rows = self._rows(X)
        return np.asarray(self.solution_.decision_function(rows), dtype=np.float64)

    def predict(self, X: ArrayLike) -> NDArray:
        """The class of each row: the positive class where the decision function is > 0."""
        scores = self.decision_function(X)  # checks that the estimator is fitted first
        return self.classes_[(scores > 0).astype(np.int64)]

    def _two_classes(self, y: Any, needs: str) -> NDArray:
        """The two sorted label values of y, or scikit-learn's binary-only error."""
        classes = np.unique(y)
        if classes.size != 2:
            raise DataError(
                f"Only binary classification is supported. {type(self).__name__} needs {needs}; "
                f"y has {classes.size}."
            )
        return classes


def _semi_supervised_target(y: Any) -> tuple[NDArray, NDArray[np.bool_], NDArray]:
    """(y as objects, the unlabeled mask — y = -1, NaN or None, scikit-learn's semi-supervised
    convention — and the labeled rows' labels in one dtype, checked as classification targets)."""
    target = np.asarray(y, dtype=object)
    unlabeled = np.asarray(pd.isna(target) | (target == -1), dtype=bool)
    labels = np.asarray(y[~unlabeled].tolist())  # one dtype once the NaN/None are gone
    check_classification_targets(labels)
    return target, unlabeled, labels


def _weighted_rows(X, y, sample_weight):
    """(X, y, w) without the rows of weight 0 (they do not count), or (X, y, None)."""
    if sample_weight is None:
        return X, y, None
    weight = _check_sample_weight(sample_weight, X, ensure_non_negative=True)
    keep = weight > 0
    return X[keep], y[keep], weight[keep]


class AIDSVC(_BinaryClassifier):
    """Soft-margin SVM (hinge loss, unpenalised bias; ``M`` is scikit-learn's ``C``) fitted by
    AID, linear or with a kernel (``kernel``, ``gamma``, ``degree``, ``coef0``), with an
    optimality certificate. Binary: ``classes_[0]`` is the negative class.

    After ``fit``: ``classes_``, ``coef_`` and ``intercept_`` (linear), ``support_`` and
    ``dual_coef_`` (α_i y_i of the rows with α_i > 0, scikit-learn's layout), ``status_``,
    ``certificate_``, ``result_``, ``history_``, ``n_iter_``; ``decision_function`` and
    ``predict``. No ``predict_proba``: calibrate with ``CalibratedClassifierCV`` if needed.
    """

    _model_class: ClassVar[Any] = SVMModel
    _parameters: ClassVar[tuple[Option, ...]] = estimator_parameters(SVMModel)

    @property
    def _accepts_sparse(self) -> bool:  # type: ignore[override]
        return self.kernel == "linear"

    def fit(self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None) -> AIDSVC:
        """Fit by AID; ``sample_weight`` ω_i ≥ 0 makes row i's hinge loss count ω_i times (rows
        of weight 0 are left out); a scipy.sparse X stays sparse (the linear SVM only)."""
        X, y, sample_weight = in_memory(X, y, sample_weight)
        names = getattr(X, "columns", None)
        sparse = "csr" if self._accepts_sparse else False
        X, y = validate_data(
            self, X, y, dtype=np.float64, ensure_min_samples=2, accept_sparse=sparse
        )
        check_classification_targets(y)
        X, y, weight = _weighted_rows(X, y, sample_weight)
        classes = self._two_classes(y, "exactly 2 classes")
        features = None if names is None else [str(c) for c in names]
        data = BinaryData.from_arrays(X, y, features, weight=weight)
        result = self._run(data)
        self.classes_ = classes
        self.solution_ = solution = result.solution
        if hasattr(solution, "w"):
            self.coef_ = solution.w[None, :]
            self.intercept_ = np.array([solution.b])
        with contextlib.suppress(ValueError):  # a backend without dual values (liblinear)
            alpha = solution.entry_duals(data.weight)  # α_i of the dual (optimal if certified)
            self.support_ = np.flatnonzero(alpha > 0)
            self.dual_coef_ = (alpha * data.y)[self.support_][None, :]
        return self


class CutS3VMClassifier(ClassifierMixin, BaseEstimator, CutS3VM):
    """:class:`aidopt.baselines.cuts3vm.CutS3VM` as a scikit-learn estimator (``get_params``,
    ``clone``, pickling, ``score``): the same parameters; ``fit(X, y)`` with y = -1 (or NaN/None)
    on the unlabeled rows, as :class:`AIDS3VC` and scikit-learn's semi-supervised estimators;
    ``predict``, ``decision_function``, ``labels_`` (the transductive labels of the training
    rows); a scipy.sparse X stays sparse. A local method: ``status_`` is CutS3VM's ("converged"
    or a limit), ``certificate_`` None, ``history_`` its rounds. Without unlabeled rows (3) is
    the SVM with penalty C_l/n and a free bias, which is solved exactly by AID (``status_``
    "optimal" when certified)."""

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = self.kernel is None
        tags.classifier_tags.multi_class = False
        return tags

    def fit(self, X: ArrayLike, y: ArrayLike) -> CutS3VMClassifier:
        """Fit CutS3VM on X with y: the class of labeled rows, -1 (or NaN) on unlabeled ones
        (without unlabeled rows: the supervised SVM)."""
        self.check_params()
        X, y = in_memory(X, y)
        sparse = "csr" if self.kernel is None else False
        X = validate_data(self, X, dtype=np.float64, ensure_min_samples=2, accept_sparse=sparse)
        y = column_or_1d(np.asarray(y), warn=True)
        check_consistent_length(X, y)
        target, unlabeled, labels = _semi_supervised_target(y)
        classes = np.unique(labels)
        if classes.size != 2:
            raise DataError(
                "Only binary classification is supported. CutS3VMClassifier needs two classes "
                f"among the labeled rows (y != -1); y has {classes.size}."
            )
        self.classes_ = classes
        if unlabeled.any():
            masked = target.astype(object)
            masked[unlabeled] = None
            self.result_: Any = self.solve(SemiSupervisedData.from_arrays(X, masked))
            self.solution_ = self.result_
            self.status_ = self.result_.status
            self.n_iter_ = self.result_.iterations
            self.certificate_: Any = None  # a local method proves nothing
            self.history_ = pd.DataFrame(list(self.result_.rounds))
            self.coef_ = self.result_.w
            self.intercept_ = self.result_.intercept
        else:
            self._fit_supervised(X, y)
        scores = np.asarray(self.solution_.decision_function(X), dtype=np.float64)
        self.labels_ = classes[(scores >= 0).astype(np.int64)]
        return self

    def _fit_supervised(self, X: Any, y: Any) -> None:
        """(3) with no unlabeled row: ½‖w‖² + (C_l/n) Σ hinge, b free — the SVM with M = C_l/n
        (the kernel SVM for a kernel; the empirical feature map spans the same space)."""
        M = self.C_l / X.shape[0]
        if self.kernel is None:
            model: Any = SVMModel(M=M)
        else:
            k = self.kernel
            model = SVMModel.from_options(
                M=M, kernel=k.kind, gamma=k.gamma, degree=k.degree, coef0=k.coef0
            )
        run = AIDSolver(model, time_limit=self.time_limit, random_state=self.random_state or 0)
        result: Any = run.solve(BinaryData.from_arrays(X, y))
        self.result_ = result
        self.solution_ = result.solution
        self.status_ = result.status.value
        self.n_iter_ = result.iterations
        self.certificate_ = result.certificate
        self.history_ = result.history
        if hasattr(result.solution, "w"):
            self.coef_ = result.solution.w
            self.intercept_ = result.solution.b

    def decision_function(self, X: ArrayLike) -> NDArray[np.float64]:
        """f(x); ≥ 0 means ``classes_[1]`` (+1 at 0, as the labels of Algorithm 1)."""
        check_is_fitted(self)
        rows = check_predict_input(
            X, self.n_features_in_, type(self).__name__, accept_sparse=self.kernel is None
        )
        validate_data(self, X, reset=False, skip_check_array=True)  # feature names
        return np.asarray(self.solution_.decision_function(rows), dtype=np.float64)

    def predict(self, X: ArrayLike) -> NDArray:
        """The class of each row: the sign of the decision function (+1 at 0, Lemma 1)."""
        scores = self.decision_function(X)  # checks that the estimator is fitted first
        return self.classes_[(scores >= 0).astype(np.int64)]


def _optional(options: tuple[Option, ...], name: str) -> tuple[Option, ...]:
    """The options with a required one made optional (default None, checked at ``fit``):
    scikit-learn constructs every estimator without arguments."""
    return tuple(
        dataclasses.replace(o, default=None, allow_none=True) if o.name == name else o
        for o in options
    )


class AIDPUClassifier(_BinaryClassifier):
    """Positive-unlabeled learning (Sansone et al.'s double-hinge risk with λ‖f‖², linear or
    kernel) fitted by AID, with an optimality certificate.

    ``fit(X, y)``: y has two values; ``classes_[1]`` (1 when y is 0/1) marks the labeled
    positives, ``classes_[0]`` the unlabeled rows; ``prior`` π ∈ (0, 1) is the share of
    positives among the unlabeled rows (required). ``predict`` returns ``classes_[1]`` for rows
    scored positive (f > 0) and ``classes_[0]`` for the others, which then means "negative";
    ``decision_function`` is f. No ``predict_proba``.
    """

    _model_class: ClassVar[Any] = PUModel
    _parameters: ClassVar[tuple[Option, ...]] = _optional(estimator_parameters(PUModel), "prior")

    @property
    def _accepts_sparse(self) -> bool:  # type: ignore[override]
        return getattr(self.kernel, "kind", self.kernel) == "linear"

    def fit(
        self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None
    ) -> AIDPUClassifier:
        """Fit by AID; ``sample_weight`` ω_i ≥ 0 makes row i's loss count ω_i times (p and n of
        the risk become total weights; rows of weight 0 are left out); a scipy.sparse X stays
        sparse (the linear kernel only)."""
        if self.prior is None:
            raise DataError(
                "AIDPUClassifier needs the class prior: the share π ∈ (0, 1) of positives among "
                "the unlabeled rows (prior=...)."
            )
        X, y, sample_weight = in_memory(X, y, sample_weight)
        names = getattr(X, "columns", None)
        sparse = "csr" if self._accepts_sparse else False
        X, y = validate_data(
            self, X, y, dtype=np.float64, ensure_min_samples=2, accept_sparse=sparse
        )
        check_classification_targets(y)
        X, y, weight = _weighted_rows(X, y, sample_weight)
        classes = self._two_classes(y, "two classes (labeled positive, unlabeled)")
        features = None if names is None else [str(c) for c in names]
        self._data = PositiveUnlabeledData.from_arrays(X, y == classes[1], features, weight=weight)
        result = self._run(self._data)
        self.classes_ = classes
        self.solution_ = result.solution
        return self

    def decision_function(self, X: ArrayLike) -> NDArray[np.float64]:
        """f(x) = w·x + β (linear) or Σ α_i k(x, x_i) + β; > 0 means positive."""
        rows = self._rows(X)
        return self._model().decision_function(self._data, self.solution_, rows)


class AIDS3VC(_BinaryClassifier):
    """The semi-supervised SVM (Bennett-Demiriz MIQP (14), ``M_l``/``M_u``) fitted by AID.

    ``fit(X, y)``: unlabeled rows have y = -1 (scikit-learn's semi-supervised convention, as
    ``SelfTrainingClassifier``) or NaN/None; the labeled rows hold two classes. ``labels_``: the
    transductive labels of the training rows. With no unlabeled row, (14) is the supervised SVM
    with penalty ``M_l`` and that is what is solved (exactly, certified). ``optimal`` only with
    the S3VM's certificate (no gap: the problem is non-convex).
    """

    _model_class: ClassVar[Any] = S3VMModel
    _parameters: ClassVar[tuple[Option, ...]] = estimator_parameters(S3VMModel)
    _accepts_sparse: ClassVar[bool] = True

    def fit(self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None) -> AIDS3VC:
        """Fit by AID; ``sample_weight`` ω_i ≥ 0 makes row i's loss in (12) count ω_i times
        (rows of weight 0 are left out); a scipy.sparse X stays sparse."""
        X, y, sample_weight = in_memory(X, y, sample_weight)
        names = getattr(X, "columns", None)
        X = validate_data(self, X, dtype=np.float64, ensure_min_samples=2, accept_sparse="csr")
        y = column_or_1d(np.asarray(y), warn=True)
        check_consistent_length(X, y)
        rows = X  # labels_ covers every training row, those of weight 0 too
        X, y, weight = _weighted_rows(X, y, sample_weight)
        target, unlabeled, labels = _semi_supervised_target(y)
        classes = self._two_classes(labels, "two classes among the labeled rows (y != -1)")
        features = None if names is None else [str(c) for c in names]
        self.classes_ = classes
        if not unlabeled.any():  # (14) without unlabeled rows is the SVM with penalty M_l
            data = BinaryData.from_arrays(X, y, features, weight=weight)
            result = self._run(data, SVMModel(M=self.M_l))
        else:
            masked = target.astype(object)
            masked[unlabeled] = None
            result = self._run(SemiSupervisedData.from_arrays(X, masked, features, weight=weight))
        self.solution_ = result.solution
        scores = np.asarray(result.solution.decision_function(rows), dtype=np.float64)
        self.labels_ = classes[(scores > 0).astype(np.int64)]
        return self
