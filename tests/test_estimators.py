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
    CutS3VMClassifier,
    SupportVectorClustering,
    estimator_for,
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


def _expected_failures(estimator) -> dict[str, str]:
    if isinstance(estimator, AIDS3VC | CutS3VMClassifier):
        return {
            "check_classifiers_classes": (
                "y = -1 marks an unlabeled row (scikit-learn's semi-supervised convention, as "
                "SelfTrainingClassifier's), so the check's classes {-1, 1} leave one class"
            )
        }
    if isinstance(estimator, SupportVectorClustering) and estimator.method == "svdd":
        return {
            "check_sample_weight_equivalence_on_dense_data": (
                "SVDD's default route is libsvm's one-class solver, which stops at its "
                "tolerance: the weighted and the repeated fit are both certified, and their "
                "decision values differ by more than the check's 1e-7"
            )
        }
    if isinstance(estimator, SupportVectorClustering) and estimator.method != "aid":
        return {
            "check_sample_weight_equivalence_on_dense_data": (
                "a stochastic method: draws ∝ ω equal repeated rows in distribution, not seed by "
                "seed (scikit-learn xfails this check for its SGDClassifier and SGDOneClassSVM "
                "with the same reason; meta-issue #16298)"
            )
        }
    if isinstance(estimator, AIDSVC) and estimator.solver == "libsvm":
        return {
            "check_sample_weight_equivalence_on_dense_data": (
                "libsvm's SMO stops at its KKT tolerance: the weighted and the repeated fit "
                "are both certified (gap ≤ 1e-5 on scikit-learn 1.9's data) and their decision "
                "values differ by ~5e-6, above the check's 1e-7; the exact routes (highs, "
                "activeset) pass it"
            )
        }
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
        CutS3VMClassifier(),
        SupportVectorClustering(),
        SupportVectorClustering(method="bsgd-pnn", random_state=0),
        estimator_for("ocsvm")(),
        estimator_for("svdd")(C=0.2),
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
    from aidopt.models.svdd import SVDDModel

    class Unweighted(SVDDModel):  # every AID model takes weights; the contract's refusal
        supports_weights = False

    X, y, _, _ = make_lad(200, 2, seed=1)
    data = RegressionData.from_arrays(X, y, weight=np.full(200, 2.0))
    model = Unweighted(C=1.0)
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


@pytest.mark.parametrize("solver", ["libsvm", "highs"])
def test_kernel_svc_sample_weight_is_repeated_rows_and_scikit_learns_optimum(solver):
    from sklearn.metrics.pairwise import rbf_kernel
    from sklearn.svm import SVC

    from aidopt.data.svm import make_svm

    X, y = make_svm(400, 2, seed=3)
    counts = np.random.default_rng(2).integers(0, 4, size=400)
    weighted = AIDSVC(kernel="rbf", gamma=0.5, solver=solver, tol=1e-7)
    weighted.fit(X, y, sample_weight=counts)
    repeated = AIDSVC(kernel="rbf", gamma=0.5, solver=solver, tol=1e-7)
    repeated.fit(np.repeat(X, counts, axis=0), np.repeat(y, counts))
    assert weighted.status_ == repeated.status_ == "optimal"
    assert weighted.result_.objective == pytest.approx(repeated.result_.objective, rel=2e-7)

    w = np.random.default_rng(6).uniform(0.1, 5.0, size=400)
    est = AIDSVC(kernel="rbf", gamma=0.5, M=0.5, solver=solver, tol=1e-7)
    est.fit(X, y, sample_weight=w)
    ref = SVC(kernel="rbf", gamma=0.5, C=0.5, tol=1e-10).fit(X, y, sample_weight=w)
    s = np.where(y == est.classes_[1], 1.0, -1.0)

    def primal(rows, coef, b):  # ½‖w‖² + M Σ w_i max{0, 1 − y_i f(x_i)}, f = Σ coef K + b
        f = rbf_kernel(X, X[rows], gamma=0.5) @ coef + b
        norm_sq = coef @ rbf_kernel(X[rows], X[rows], gamma=0.5) @ coef
        return 0.5 * norm_sq + 0.5 * w @ np.maximum(0.0, 1.0 - s * f)

    sv, coef = est.support_, est.dual_coef_[0]
    b_ours = est.decision_function(X[:1])[0] - rbf_kernel(X[:1], X[sv], gamma=0.5)[0] @ coef
    ours = primal(sv, coef, b_ours)
    assert ours == pytest.approx(est.result_.objective, rel=1e-9)
    theirs = primal(ref.support_, ref.dual_coef_[0], ref.intercept_[0])
    assert est.status_ == "optimal" and ours <= theirs * (1 + 1e-7)
    assert est.certificate_.lower_bound <= theirs * (1 + 1e-12)
    np.testing.assert_allclose(est.decision_function(X), ref.decision_function(X), atol=1e-3)
    alpha = np.zeros(400)
    alpha[est.support_] = est.dual_coef_[0] * s[est.support_]
    assert np.all(alpha <= 0.5 * w * (1 + 1e-12))  # the dual box of row i is [0, M w_i]


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
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        starts = AIDS3VC(max_iter=1, n_init=3).fit(X, np.where(labeled, y, -1)).result_
    assert len(starts.starts) == 3  # n_init reaches the driver through the estimator
    assert starts.objective == min(row["objective"] for row in starts.starts)
    supervised = AIDS3VC(M_l=2.0).fit(X[labeled], y[labeled])
    svc = AIDSVC(M=2.0).fit(X[labeled], y[labeled])
    assert supervised.status_ == svc.status_ and svc.status_ in ("optimal", "gap")
    assert supervised.result_.objective == pytest.approx(svc.result_.objective, rel=1e-9)


def test_each_estimator_gives_the_command_lines_optimum(capsys, tmp_path):
    """The estimator and `aidopt solve MODEL --json` solve the same problem on the same file."""
    import json
    from pathlib import Path

    from aidopt.cli import main
    from aidopt.data.svm import make_svm

    instances = Path(__file__).resolve().parents[1] / "instances"
    X, y = make_svm(600, 3, seed=2)
    svm_file = tmp_path / "svm.csv"
    pd.DataFrame(X, columns=["a", "b", "c"]).assign(label=np.where(y > 0, "yes", "no")).to_csv(
        svm_file, index=False
    )
    rbf = ["--kernel", "rbf", "--gamma", "0.5", "--M", "0.5"]
    runs = [
        ("lad", instances / "lad_small.csv", "y", [], AIDLADRegressor(tol=0.0)),
        (
            "lad",
            instances / "lad_small.csv",
            "y",
            ["--quantile", "0.3"],
            AIDQuantileRegressor(quantile=0.3, tol=0.0),
        ),
        (
            "pu",
            instances / "pu_small.csv",
            "s",
            ["--prior", "0.35"],
            AIDPUClassifier(prior=0.35, tol=0.0),
        ),
        ("svm", svm_file, "label", [], AIDSVC(tol=0.0)),
        # the kernel default (the full problem on libsvm) certifies to ~1e-8, not 1e-9
        ("svm", svm_file, "label", rbf, AIDSVC(kernel="rbf", gamma=0.5, M=0.5, tol=1e-6)),
    ]
    for model, path, target, extra, est in runs:
        frame = pd.read_csv(path)
        tol = ["--tol", str(est.tol)]
        argv = ["solve", model, "--data", str(path), "--target", target, *tol, *extra, "--json"]
        assert main(argv) == 0
        payload = json.loads(capsys.readouterr().out)
        est.fit(frame.drop(columns=target), frame[target])
        assert payload["status"] == est.status_ == "optimal", (model, extra)
        assert payload["objective"] == pytest.approx(est.result_.objective, rel=1e-9)

    # the semi-supervised pair: an empty target on the file is -1 (or NaN) for the estimators
    path = instances / "s3vm_small.csv"
    frame = pd.read_csv(path)
    X, target = frame.drop(columns="label"), frame["label"]
    argv = ["solve", "s3vm", "--data", str(path), "--target", "label", "--json"]
    assert main([*argv, "--max-iter", "3", "--rate", "0.3"]) == 0
    payload = json.loads(capsys.readouterr().out)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est = AIDS3VC(max_iter=3, rate=0.3).fit(X, target.to_numpy(dtype=object))
    assert payload["status"] == est.status_
    assert payload["objective"] == pytest.approx(est.result_.objective, rel=1e-9)
    assert main(["solve", "cuts3vm", "--data", str(path), "--target", "label", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    cut = CutS3VMClassifier().fit(X.to_numpy(), target.to_numpy())
    assert payload["objective"] == pytest.approx(cut.result_.objective, rel=1e-9)

    # the one-class models: features only
    blobs = tmp_path / "blobs.csv"
    rng = np.random.default_rng(4)
    pd.DataFrame(2.0 + rng.normal(size=(300, 2)), columns=["u", "v"]).to_csv(blobs, index=False)
    for model, extra, est in [
        ("ocsvm", ["--C", "2"], estimator_for("ocsvm")(C=2.0, tol=1e-9)),
        ("svdd", ["--C", "0.02"], estimator_for("svdd")(C=0.02, tol=1e-9)),
    ]:
        assert main(["solve", model, "--data", str(blobs), "--tol", "1e-9", *extra, "--json"]) == 0
        payload = json.loads(capsys.readouterr().out)
        est.fit(pd.read_csv(blobs))
        assert payload["status"] == est.status_ == "optimal", model
        assert payload["objective"] == pytest.approx(est.objective_, rel=1e-9)


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


def test_pu_classifier_takes_weights_and_keeps_sparse_input_sparse():
    import scipy.sparse as sp

    from aidopt.data.pu import make_pu

    X, _, labeled, prior = make_pu(1500, 6, seed=3)
    X[np.abs(X) < 0.8] = 0.0
    labeled = labeled.astype(np.int64)
    S = sp.csr_matrix(X)
    counts = np.random.default_rng(2).integers(0, 3, size=X.shape[0])
    est = AIDPUClassifier(prior=prior, tol=1e-9)
    weighted = clone(est).fit(X, labeled, sample_weight=counts)
    repeated = clone(est).fit(np.repeat(X, counts, axis=0), np.repeat(labeled, counts))
    sparse = clone(est).fit(S, labeled, sample_weight=counts)
    assert weighted.status_ == repeated.status_ == sparse.status_ == "optimal"
    assert weighted.result_.objective == pytest.approx(repeated.result_.objective, rel=1e-7)
    assert sparse.result_.objective == pytest.approx(weighted.result_.objective, rel=1e-9)
    np.testing.assert_allclose(
        sparse.decision_function(S), weighted.decision_function(X), rtol=1e-6, atol=1e-8
    )
    with pytest.raises(TypeError, match="dense data is required"):
        AIDPUClassifier(prior=prior, kernel="rbf").fit(S, labeled)


def test_s3vc_sample_weight_is_repeated_rows():
    rng = np.random.default_rng(8)
    X = rng.normal(size=(14, 2))
    X[:, 0] += np.where(np.arange(14) % 2 == 0, 1.2, -1.2)
    y = np.where(np.arange(14) % 2 == 0, 1, 0)
    y[6:] = -1  # unlabeled
    counts = rng.integers(0, 3, size=14)
    counts[:2] = 1  # both classes stay labeled
    est = AIDS3VC(M_l=1.0, M_u=0.5, rate=0.3, random_state=0)
    weighted = clone(est).fit(X, y, sample_weight=counts)
    repeated = clone(est).fit(np.repeat(X, counts, axis=0), np.repeat(y, counts))
    assert weighted.status_ == repeated.status_ == "optimal"
    assert weighted.result_.objective == pytest.approx(repeated.result_.objective, rel=1e-6)
    assert weighted.labels_.shape == (14,)  # every training row, those of weight 0 too


def test_s3vc_keeps_sparse_input_sparse_and_gives_the_dense_optimum():
    import scipy.sparse as sp

    rng = np.random.default_rng(9)
    X = rng.normal(size=(16, 3))
    X[:, 0] += np.where(np.arange(16) % 2 == 0, 1.2, -1.2)
    X[np.abs(X) < 0.5] = 0.0
    y = np.where(np.arange(16) % 2 == 0, 1, 0)
    y[6:] = -1
    est = AIDS3VC(M_l=1.0, M_u=0.5, rate=0.3, random_state=0)
    dense = clone(est).fit(X, y)
    sparse = clone(est).fit(sp.csr_matrix(X), y)
    assert sparse.status_ == dense.status_ == "optimal"
    assert sparse.result_.objective == pytest.approx(dense.result_.objective, rel=1e-9)
    np.testing.assert_array_equal(sparse.labels_, dense.labels_)
    np.testing.assert_array_equal(sparse.predict(sp.csr_matrix(X)), dense.predict(X))


def test_cuts3vm_classifier_conventions_and_its_supervised_case():
    import scipy.sparse as sp

    rng = np.random.default_rng(8)
    X = np.r_[rng.normal(-1.5, 1, (100, 2)), rng.normal(1.5, 1, (100, 2))]
    y = np.r_[np.zeros(100), np.ones(100)]
    unlabeled = rng.random(200) > 0.2
    unlabeled[[0, 150]] = False
    by_nan = CutS3VMClassifier(C_l=100.0).fit(X, np.where(unlabeled, np.nan, y))
    by_minus_one = CutS3VMClassifier(C_l=100.0).fit(sp.csr_matrix(X), np.where(unlabeled, -1, y))
    assert by_nan.status_ == by_minus_one.status_ == "converged"
    assert by_nan.certificate_ is None and 1 <= len(by_nan.history_) <= by_nan.n_iter_
    assert by_nan.result_.objective == pytest.approx(by_minus_one.result_.objective, rel=1e-9)
    np.testing.assert_array_equal(by_nan.labels_, by_minus_one.labels_)

    supervised = CutS3VMClassifier(C_l=100.0).fit(X, y)  # (3) without unlabeled rows
    svm = AIDSVC(M=100.0 / 200).fit(X, y)
    assert supervised.status_ == svm.status_ == "optimal"
    assert supervised.result_.objective == pytest.approx(svm.result_.objective, rel=1e-9)
    np.testing.assert_array_equal(supervised.predict(X), svm.predict(X))


def test_generated_estimators_unpickle_in_a_fresh_process(tmp_path):
    import pickle
    import subprocess
    import sys

    X = 2.0 + np.random.default_rng(0).normal(size=(80, 2))
    est = estimator_for("svdd")(C=0.1).fit(X)
    path = tmp_path / "est.pkl"
    path.write_bytes(pickle.dumps(est))
    code = (
        "import pickle, sys; e = pickle.load(open(sys.argv[1], 'rb')); "
        "print(type(e).__name__, repr(e.objective_))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True
    ).stdout.split()
    assert out == ["AIDSVDD", repr(est.objective_)]
