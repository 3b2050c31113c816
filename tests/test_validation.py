"""Shared input checks: feature names of every model's data class, and the rows given to every
``predict``/``decision_function`` (NaN/inf and a wrong width are named errors)."""

import numpy as np
import pytest
import scipy.sparse as sp

from aidopt.baselines.cuts3vm import CutS3VM
from aidopt.common.validation import check_predict_input
from aidopt.estimators import AIDLADRegressor
from aidopt.exceptions import DataError
from aidopt.models.lad import LADData
from aidopt.models.pu import PUData, PUModel, PUSolution
from aidopt.models.s3vm import S3VMData, S3VMSolution
from aidopt.models.svm import SVMData, SVMSolution
from aidopt.models.svm_kernel import KernelSVMSolution
from aidopt.numerics.kernels import Kernel

X = np.arange(12.0).reshape(4, 3)
DATA = [
    (LADData, np.arange(4.0)),
    (SVMData, np.array([1, -1, 1, -1])),
    (S3VMData, np.array([1.0, -1.0, np.nan, np.nan])),
    (PUData, np.array([1, 0, 0, 1])),
]


@pytest.mark.parametrize(("cls", "target"), DATA)
def test_default_and_given_feature_names(cls, target):
    assert cls.from_arrays(X, target).feature_names == ("x1", "x2", "x3")
    given = cls.from_arrays(X, target, feature_names=["a", "b", "c"])
    assert given.feature_names == ("a", "b", "c")


@pytest.mark.parametrize(("cls", "target"), DATA)
def test_wrong_number_of_feature_names_is_named(cls, target):
    with pytest.raises(DataError, match="X has 3 columns but 2 feature names"):
        cls.from_arrays(X, target, feature_names=["a", "b"])


# ---------------------------------------------------------------------- predict-time input
def test_check_predict_input_accepts_what_the_model_was_fitted_on():
    out = check_predict_input([[1, 2, 3]], 3, "Owner")
    assert out.dtype == np.float64 and out.shape == (1, 3)
    assert check_predict_input(np.zeros((0, 3)), 3, "Owner").shape == (0, 3)  # no rows: fine
    sparse = check_predict_input(
        sp.random(4, 3, density=0.5, random_state=0), 3, "O", accept_sparse=True
    )
    assert sp.issparse(sparse) and sparse.format == "csr"


@pytest.mark.parametrize(
    ("X", "kwargs", "match"),
    [
        (
            np.array([[1.0, np.nan, 3.0]]),
            {},
            r"X contains NaN values \(1 non-finite entries, first at index \(0, 1\)\)",
        ),
        (np.array([[1.0, 2.0, np.inf]]), {}, "X contains inf values"),
        (np.ones((2, 2)), {}, "X has 2 features, but Owner is expecting 3 features as input."),
        (np.ones(3), {}, r"X must be a 2-D array, got shape \(3,\) \(one row: X.reshape\(1, -1\)"),
        ([["a", "b", "c"]], {}, "X must be numeric"),
        (sp.csr_matrix(np.ones((2, 3))), {}, "X is a sparse matrix; Owner needs dense data."),
        (sp.csr_matrix(np.array([[np.nan, 0.0, 1.0]])), {"accept_sparse": True}, "X contains NaN"),
        (sp.csr_matrix(np.ones((2, 4))), {"accept_sparse": True}, "X has 4 features, but Owner"),
    ],
)
def test_check_predict_input_names_the_problem(X, kwargs, match):
    with pytest.raises(DataError, match=match):
        check_predict_input(X, 3, "Owner", **kwargs)


def _fitted_predictors():
    """(name, owner in the message, f(X) → scores or labels) for every predict-like method."""
    rng = np.random.default_rng(0)
    X_train = rng.standard_normal((80, 3))
    w = np.array([1.0, -2.0, 0.5])
    y_lad = X_train @ w + rng.laplace(size=80)
    lad = AIDLADRegressor().fit(X_train, y_lad)
    y_s3vm = np.full(80, np.nan)
    y_s3vm[:10] = np.where(X_train[:10] @ w >= 0, 1.0, -1.0)
    y_s3vm[:2] = (1.0, -1.0)
    cut = CutS3VM(C_l=10.0, C_u=1.0).fit(X_train, y_s3vm)
    svm = SVMSolution(w=w, b=0.5)
    ksvm = KernelSVMSolution(
        alpha=np.ones(2),
        cluster_labels=np.zeros(80, dtype=np.int64),
        intercept=0.1,
        support_vectors=X_train[:2],
        dual_coef=np.array([0.5, -0.5]),
        kernel=Kernel("rbf", gamma=0.5),
        norm_sq=1.0,
    )
    s3vm = S3VMSolution(
        w=w, b=-0.2, cluster_d=np.zeros(1), aggregated_objective=0.0, partition=None, big_m={}
    )
    pu_data = PUData.from_arrays(X_train, (np.arange(80) < 10).astype(int))
    pu_solution = PUSolution(bias=0.3, coef=w, norm_sq=float(w @ w))
    return [
        ("AIDLADRegressor.predict", "AIDLADRegressor", lad.predict),
        ("CutS3VM.predict", "CutS3VM", cut.predict),
        ("CutS3VM.decision_function", "CutS3VM", cut.decision_function),
        ("CutS3VMResult.predict", "CutS3VMResult", cut.result_.predict),
        ("CutS3VMResult.decision_function", "CutS3VMResult", cut.result_.decision_function),
        ("SVMSolution.decision_function", "SVMSolution", svm.decision_function),
        ("KernelSVMSolution.decision_function", "KernelSVMSolution", ksvm.decision_function),
        ("S3VMSolution.decision_function", "S3VMSolution", s3vm.decision_function),
        ("S3VMSolution.predict", "S3VMSolution", s3vm.predict),
        (
            "PUModel.decision_function",
            "PUModel",
            lambda X: PUModel(prior=0.4).decision_function(pu_data, pu_solution, X),
        ),
    ]


NAMES = [
    "AIDLADRegressor.predict",
    "CutS3VM.predict",
    "CutS3VM.decision_function",
    "CutS3VMResult.predict",
    "CutS3VMResult.decision_function",
    "SVMSolution.decision_function",
    "KernelSVMSolution.decision_function",
    "S3VMSolution.decision_function",
    "S3VMSolution.predict",
    "PUModel.decision_function",
]


@pytest.fixture(scope="module")
def predictors():
    table = {name: (owner, predict) for name, owner, predict in _fitted_predictors()}
    assert set(table) == set(NAMES)
    return table


@pytest.mark.parametrize("name", NAMES)
def test_every_predict_names_nan_inf_and_a_wrong_width(predictors, name):
    owner, predict = predictors[name]
    X = np.random.default_rng(1).standard_normal((5, 3))
    good = np.asarray(predict(X))
    assert good.shape == (5,) and np.all(np.isfinite(good.astype(float)))
    with_nan = X.copy()
    with_nan[2, 1] = np.nan
    with pytest.raises(DataError, match=r"X contains NaN values .*first at index \(2, 1\)"):
        predict(with_nan)
    with_inf = X.copy()
    with_inf[0, 0] = -np.inf
    with pytest.raises(DataError, match="X contains inf values"):
        predict(with_inf)
    with pytest.raises(
        DataError, match=f"X has 2 features, but {owner} is expecting 3 features as input"
    ):
        predict(X[:, :2])
    with pytest.raises(DataError, match="X must be a 2-D array"):
        predict(X[0])


def test_linear_scores_are_unchanged_by_the_check():
    X = np.random.default_rng(2).standard_normal((6, 3))
    w = np.array([0.5, 1.0, -1.0])
    np.testing.assert_array_equal(SVMSolution(w=w, b=0.25).decision_function(X), X @ w + 0.25)
    s3vm = S3VMSolution(
        w=w, b=-1.0, cluster_d=np.zeros(1), aggregated_objective=0.0, partition=None, big_m={}
    )
    np.testing.assert_array_equal(s3vm.decision_function(sp.csr_matrix(X)), X @ w - 1.0)
