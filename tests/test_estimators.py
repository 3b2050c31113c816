"""scikit-learn facades behave like estimators and give the certified AID fit."""

import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import QuantileRegressor
from sklearn.utils.estimator_checks import parametrize_with_checks

from aidopt.data.containers import RegressionData
from aidopt.data.lad import make_lad
from aidopt.estimators import (
    AIDS3VC,
    AIDSVC,
    AIDLADRegressor,
    AIDPUClassifier,
    AIDQuantileRegressor,
    SupportVectorClustering,
)
from aidopt.exceptions import ConvergenceWarning, DataError, InvalidParameterError


@pytest.mark.parametrize("solver", ["fn", "highs"])
def test_lad_regressor_matches_sklearn_quantile_regression(solver):
    X, y, _, _ = make_lad(1500, 3, seed=11)
    est = AIDLADRegressor(solver=solver, tol=0.0).fit(X, y)
    ref = QuantileRegressor(quantile=0.5, alpha=0.0, solver="highs").fit(X, y)
    assert est.status_ == "optimal"
    ours = np.abs(y - est.predict(X)).sum()
    theirs = np.abs(y - ref.predict(X)).sum()
    assert ours == pytest.approx(theirs, rel=1e-7)
    assert list(est.history_.columns)[:3] == ["iteration", "clusters", "rate"]
    assert est.n_iter_ == len(est.history_)


def test_estimator_protocol():
    est = AIDLADRegressor(fit_intercept=False, tol=1e-3)
    twin = clone(est)
    assert twin.get_params() == est.get_params()
    with pytest.raises(NotFittedError):
        est.predict(np.ones((2, 3)))
    frame = pd.DataFrame(np.random.default_rng(0).standard_normal((300, 2)), columns=["a", "b"])
    fitted = est.fit(frame, frame["a"] * 2 + 1)
    assert list(fitted.feature_names_in_) == ["a", "b"]
    assert fitted.intercept_ == 0.0
    with pytest.raises(DataError, match="is expecting 2 features"):
        fitted.predict(np.ones((2, 3)))
    with pytest.raises(InvalidParameterError, match="'tol'"):
        AIDLADRegressor(tol=-1.0).fit(frame, frame["a"])


# ---------------------------------------------------------------------- scikit-learn's checks


_KERNEL_WEIGHT_CHECKS = (
    "check_sample_weights_pandas_series",
    "check_sample_weights_not_an_array",
    "check_sample_weights_list",
    "check_sample_weights_shape",
    "check_sample_weights_not_overwritten",
    "check_sample_weight_equivalence_on_dense_data",
)


def _expected_failures(estimator) -> dict[str, str]:
    if isinstance(estimator, AIDS3VC):
        return {
            "check_classifiers_classes": (
                "y = -1 marks an unlabeled row (scikit-learn's semi-supervised convention, as "
                "SelfTrainingClassifier's), so the check's classes {-1, 1} leave one class"
            )
        }
    if isinstance(estimator, AIDSVC) and estimator.kernel != "linear":
        reason = (
            "the kernel SVM takes no row weights yet: it refuses sample_weight with a DataError "
            "naming the problem (the linear SVM takes them)"
        )
        return dict.fromkeys(_KERNEL_WEIGHT_CHECKS, reason)
    if isinstance(estimator, AIDLADRegressor | AIDQuantileRegressor):
        reason = (
            "LAD/quantile regression without a penalty is not identified on this check's data "
            "(fewer rows than coefficients once the zero-weight rows are dropped): aidopt "
            "refuses such data rather than return one of many optima. Weights = repeated or "
            "removed rows is tested below on identified data."
        )
        return {
            "check_sample_weight_equivalence_on_dense_data": reason,
            "check_sample_weight_equivalence_on_sparse_data": reason,
        }
    return {}


@parametrize_with_checks(
    [
        AIDLADRegressor(),
        AIDQuantileRegressor(quantile=0.7),
        AIDSVC(),
        AIDSVC(kernel="rbf", solver="libsvm"),
        AIDPUClassifier(prior=0.05),  # a small prior: the checks' "unlabeled" rows are negative
        AIDPUClassifier(prior=0.05, kernel="rbf"),
        AIDS3VC(),
        SupportVectorClustering(),
        SupportVectorClustering(method="bsgd-pnn", random_state=0),
    ],
    expected_failed_checks=_expected_failures,
)
def test_scikit_learn_estimator_checks(estimator, check):
    check(estimator)


@pytest.mark.parametrize("solver", ["fn", "highs"])
def test_sample_weight_is_repeated_and_removed_rows(solver):
    X, y, _, _ = make_lad(2500, 4, seed=21)
    rng = np.random.default_rng(2)
    counts = rng.integers(0, 4, size=2500)  # 0: the row is removed
    weighted = AIDLADRegressor(solver=solver, tol=0.0).fit(X, y, sample_weight=counts)
    repeated = AIDLADRegressor(solver=solver, tol=0.0).fit(
        np.repeat(X, counts, axis=0), np.repeat(y, counts)
    )
    assert weighted.status_ == repeated.status_ == "optimal"
    assert weighted.result_.objective == pytest.approx(repeated.result_.objective, rel=1e-9)
    np.testing.assert_allclose(weighted.coef_, repeated.coef_, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("quantile", [0.5, 0.8])
@pytest.mark.parametrize("scale", [1e-6, 1.0, 1e6])
def test_weighted_optimum_is_scikit_learns_and_certified(quantile, scale):
    X, y, _, _ = make_lad(2000, 3, seed=4)
    w = np.random.default_rng(7).uniform(0.1, 5.0, size=2000) * scale
    est = AIDQuantileRegressor(quantile=quantile, tol=0.0).fit(X, y, sample_weight=w)
    ref = QuantileRegressor(quantile=quantile, alpha=0.0, solver="highs")
    ref.fit(X, y, sample_weight=w)

    def loss(pred):
        r = y - pred
        return float(w @ np.maximum(quantile * r, (quantile - 1.0) * r))

    assert est.status_ == "optimal"
    assert loss(est.predict(X)) <= loss(ref.predict(X)) * (1 + 1e-9)
    assert loss(est.predict(X)) == pytest.approx(loss(ref.predict(X)), rel=1e-7)
    lower = est.certificate_.lower_bound / (est.result_.objective / loss(est.predict(X)))
    assert lower <= loss(ref.predict(X)) * (1 + 1e-12)


def test_weighted_data_is_refused_by_a_model_without_weights():
    from aidopt import AIDSolver
    from aidopt.models.pu import PUModel

    X, y, _, _ = make_lad(200, 2, seed=1)
    data = RegressionData.from_arrays(X, y, weight=np.full(200, 2.0))
    model = PUModel(prior=0.4)
    with pytest.raises(DataError, match="does not take row weights"):
        model.check_weights(data)
    with pytest.raises(DataError, match="must be > 0"):
        RegressionData.from_arrays(X, y, weight=np.r_[0.0, np.ones(199)])
    with pytest.raises(ValueError, match="at least one non-zero"):
        AIDLADRegressor().fit(X, y, sample_weight=np.zeros(200))
    assert AIDSolver(AIDLADRegressor()._model(), tol=0.0).solve(data).status.value == "optimal"


def test_svc_matches_scikit_learn_svc_and_keeps_the_labels():
    from sklearn.svm import SVC

    rng = np.random.default_rng(3)
    X = np.r_[rng.normal(0, 1, (150, 2)), rng.normal(2, 1, (150, 2))]
    y = np.array(["no"] * 150 + ["yes"] * 150)
    est = AIDSVC(M=1.0, tol=0.0).fit(X, y)
    ref = SVC(kernel="linear", C=1.0, tol=1e-10).fit(X, y)
    assert est.status_ == "optimal" and list(est.classes_) == ["no", "yes"]

    def primal(w, b):
        s = np.where(y == "yes", 1.0, -1.0)
        return 0.5 * w @ w + np.maximum(0.0, 1.0 - s * (X @ w + b)).sum()

    ours, theirs = primal(est.coef_[0], est.intercept_[0]), primal(ref.coef_[0], ref.intercept_[0])
    assert ours <= theirs * (1 + 1e-9)
    assert np.mean(est.predict(X) == ref.predict(X)) >= 0.99
    s = np.where(y == "yes", 1.0, -1.0)
    w = est.dual_coef_[0] @ X[est.support_]  # w = Σ α_i y_i x_i at the certified dual
    np.testing.assert_allclose(w, est.coef_[0], rtol=1e-6, atol=1e-8)
    assert abs(est.dual_coef_[0].sum()) <= 1e-8 and np.all(est.dual_coef_[0] * s[est.support_] > 0)
    with pytest.raises(ValueError, match="Only binary classification"):
        AIDSVC().fit(X, np.arange(300) % 3)


def test_quantile_regressor_matches_scikit_learn():
    X, y, _, _ = make_lad(1200, 3, seed=5)
    est = AIDQuantileRegressor(quantile=0.8, tol=0.0).fit(X, y)
    ref = QuantileRegressor(quantile=0.8, alpha=0.0, solver="highs").fit(X, y)

    def pinball(pred):
        r = y - pred
        return np.maximum(0.8 * r, (0.8 - 1) * r).sum()

    assert est.status_ == "optimal"
    assert pinball(est.predict(X)) == pytest.approx(pinball(ref.predict(X)), rel=1e-7)


def test_pickle_and_clone_round_trips_and_cuts3vm_has_an_estimator():
    import pickle

    from aidopt.estimators import CutS3VMClassifier

    rng = np.random.default_rng(8)
    X = np.r_[rng.normal(-1.5, 1, (100, 2)), rng.normal(1.5, 1, (100, 2))]
    y = np.r_[np.zeros(100), np.ones(100)]
    masked = np.where(rng.random(200) < 0.2, y, np.nan)
    masked[[0, 150]] = [0.0, 1.0]
    fitted = [
        AIDLADRegressor(tol=0.0).fit(X, X @ [1.0, -2.0] + rng.laplace(size=200)),
        AIDQuantileRegressor(quantile=0.3, tol=0.0).fit(X, X[:, 0] + rng.normal(size=200)),
        AIDSVC(tol=0.0).fit(X, y),
        CutS3VMClassifier(C_l=100.0, C_u=1.0).fit(X, masked),
    ]
    for est in fitted:
        twin = clone(est)
        assert twin.get_params() == est.get_params() and not hasattr(twin, "classes_")
        back = pickle.loads(pickle.dumps(est))
        np.testing.assert_array_equal(back.predict(X), est.predict(X))
    assert fitted[3].score(X, y) >= 0.9  # ClassifierMixin: accuracy of the transductive labels


def test_svc_sample_weight_is_repeated_rows_and_scikit_learns_optimum():
    from sklearn.svm import SVC

    from aidopt.data.svm import make_svm

    X, y = make_svm(2000, 3, seed=5)
    counts = np.random.default_rng(4).integers(0, 4, size=2000)
    weighted = AIDSVC(tol=0.0).fit(X, y, sample_weight=counts)
    repeated = AIDSVC(tol=0.0).fit(np.repeat(X, counts, axis=0), np.repeat(y, counts))
    assert weighted.status_ == repeated.status_ == "optimal"
    assert weighted.result_.objective == pytest.approx(repeated.result_.objective, rel=1e-9)

    w = np.random.default_rng(6).uniform(0.1, 5.0, size=2000)
    est = AIDSVC(M=0.5, tol=0.0).fit(X, y, sample_weight=w)
    ref = SVC(kernel="linear", C=0.5, tol=1e-10).fit(X, y, sample_weight=w)
    s = np.where(y == est.classes_[1], 1.0, -1.0)

    def primal(coef, b):
        return 0.5 * coef @ coef + 0.5 * w @ np.maximum(0.0, 1.0 - s * (X @ coef + b))

    ours, theirs = primal(est.coef_[0], est.intercept_[0]), primal(ref.coef_[0], ref.intercept_[0])
    assert est.status_ == "optimal" and ours <= theirs * (1 + 1e-9)
    assert est.certificate_.lower_bound <= theirs * (1 + 1e-12)
    alpha = np.zeros(2000)
    alpha[est.support_] = est.dual_coef_[0] * s[est.support_]
    assert np.all(alpha <= 0.5 * w * (1 + 1e-12))  # the dual box of row i is [0, M w_i]
    with pytest.raises(DataError, match="does not take row weights"):
        AIDSVC(kernel="rbf").fit(X, y, sample_weight=w)


def test_pu_classifier_is_the_pu_model_and_needs_its_prior():
    from aidopt import AIDSolver
    from aidopt.data.pu import make_pu
    from aidopt.models.pu import PUData, PUModel

    X, _, labeled, prior = make_pu(1500, 4, prior=0.4, seed=3)
    s = labeled.astype(int)
    est = AIDPUClassifier(prior=prior, tol=0.0).fit(X, s)
    direct = AIDSolver(PUModel(prior=prior), tol=0.0).solve(PUData.from_arrays(X, s))
    assert est.status_ == direct.status.value == "optimal"
    assert est.result_.objective == pytest.approx(direct.objective, rel=1e-9)
    np.testing.assert_array_equal(est.classes_, [0, 1])
    scores = est.decision_function(X)
    np.testing.assert_array_equal(est.predict(X), (scores > 0).astype(int))
    with pytest.raises(DataError, match="needs the class prior"):
        AIDPUClassifier().fit(X, s)


def test_s3vc_is_the_s3vm_model_and_without_unlabeled_rows_the_svm():
    from pathlib import Path

    from aidopt import AIDSolver
    from aidopt.models.s3vm import S3VMData, S3VMModel

    frame = pd.read_csv(Path(__file__).resolve().parents[1] / "instances" / "s3vm_small.csv")
    X = frame.drop(columns="label").to_numpy()
    y = frame["label"].to_numpy()  # "pos"/"neg", NaN on the unlabeled rows
    labeled = frame["label"].notna().to_numpy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est = AIDS3VC(max_iter=3).fit(X, np.where(labeled, y, -1))
        direct = AIDSolver(S3VMModel(), max_iter=3).solve(S3VMData.from_arrays(X, y))
    assert est.result_.objective == pytest.approx(direct.objective, rel=1e-9)
    assert est.labels_.shape == (len(y),) and set(est.labels_) <= set(est.classes_)
    supervised = AIDS3VC(M_l=2.0).fit(X[labeled], y[labeled])
    svc = AIDSVC(M=2.0).fit(X[labeled], y[labeled])
    assert supervised.status_ == svc.status_ and svc.status_ in ("optimal", "gap")
    assert supervised.result_.objective == pytest.approx(svc.result_.objective, rel=1e-9)


def test_each_estimator_gives_the_command_lines_optimum(capsys):
    """The estimator and `aidopt solve MODEL --json` solve the same problem on the same file."""
    import json
    from pathlib import Path

    from aidopt.cli import main

    instances = Path(__file__).resolve().parents[1] / "instances"
    runs = [
        ("lad", "lad_small.csv", "y", [], AIDLADRegressor(tol=0.0)),
        ("pu", "pu_small.csv", "s", ["--prior", "0.35"], AIDPUClassifier(prior=0.35, tol=0.0)),
    ]
    for model, name, target, extra, est in runs:
        frame = pd.read_csv(instances / name)
        argv = ["solve", model, "--data", str(instances / name), "--target", target, "--tol", "0"]
        assert main([*argv, *extra, "--json"]) == 0
        payload = json.loads(capsys.readouterr().out)
        est.fit(frame.drop(columns=target), frame[target])
        assert payload["status"] == est.status_ == "optimal"
        assert payload["objective"] == pytest.approx(est.result_.objective, rel=1e-9)


def test_linear_svc_keeps_sparse_input_sparse_and_gives_the_dense_optimum():
    import scipy.sparse as sp

    from aidopt.data.svm import make_svm

    X, y = make_svm(2000, 8, seed=9)
    X[np.abs(X) < 1.0] = 0.0
    S = sp.csr_matrix(X)
    dense = AIDSVC(tol=0.0).fit(X, y)
    sparse = AIDSVC(tol=0.0).fit(S, y)
    assert sparse.status_ == dense.status_ == "optimal"
    assert sparse.result_.objective == pytest.approx(dense.result_.objective, rel=1e-12)
    np.testing.assert_array_equal(sparse.predict(S), dense.predict(X))
    with pytest.raises(TypeError, match="dense data is required"):
        AIDSVC(kernel="rbf").fit(S, y)


def test_regressors_keep_sparse_input_sparse_and_give_the_dense_optimum():
    import scipy.sparse as sp

    X, y, _, _ = make_lad(3000, 6, seed=12)
    X[np.abs(X) < 0.8] = 0.0
    S = sp.csr_matrix(X)
    w = np.random.default_rng(1).uniform(0.5, 2.0, size=3000)
    for est in (AIDLADRegressor(tol=0.0), AIDQuantileRegressor(quantile=0.3, tol=0.0)):
        dense = clone(est).fit(X, y, sample_weight=w)
        sparse = clone(est).fit(S, y, sample_weight=w)
        assert sparse.status_ == dense.status_ == "optimal"
        assert sparse.result_.objective == pytest.approx(dense.result_.objective, rel=1e-12)
        np.testing.assert_allclose(sparse.predict(S), dense.predict(X), rtol=1e-12, atol=1e-12)
