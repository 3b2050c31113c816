"""Tests of aidopt.kernels: blocks equal scikit-learn's pairwise_kernels, validation."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.metrics.pairwise import pairwise_kernels

from aidopt.exceptions import DataError, InvalidParameterError
from aidopt.kernels import Kernel, kernel_times, squared_norms

KERNELS = [
    (Kernel("linear"), {}),
    (Kernel("rbf", gamma=0.7), {"gamma": 0.7}),
    (Kernel("rbf"), {}),  # gamma=None: 1/n_features, as pairwise_kernels
    (Kernel("poly", gamma=0.3, degree=3, coef0=1.0), {"gamma": 0.3, "degree": 3, "coef0": 1.0}),
    (Kernel("poly", degree=2, coef0=0.5), {"degree": 2, "coef0": 0.5}),
    (Kernel("poly", gamma=1.5, degree=1, coef0=-2.0), {"gamma": 1.5, "degree": 1, "coef0": -2.0}),
]


def _data(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.normal(size=(17, 5)), rng.normal(size=(9, 5))


@pytest.mark.parametrize(("kernel", "sk_params"), KERNELS, ids=lambda v: str(v))
def test_block_equals_sklearn(kernel: Kernel, sk_params: dict) -> None:
    A, B = _data(0)
    expected = pairwise_kernels(A, B, metric=kernel.kind, **sk_params)
    np.testing.assert_allclose(kernel(A, B), expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(
        kernel(A, A), pairwise_kernels(A, metric=kernel.kind, **sk_params), rtol=1e-12, atol=1e-12
    )


@pytest.mark.parametrize(("kernel", "sk_params"), KERNELS, ids=lambda v: str(v))
def test_sparse_inputs_equal_dense(kernel: Kernel, sk_params: dict) -> None:
    A, B = _data(1)
    A[A < 0.3] = 0.0
    B[B < 0.3] = 0.0
    expected = pairwise_kernels(A, B, metric=kernel.kind, **sk_params)
    for a, b in [
        (sp.csr_matrix(A), sp.csr_matrix(B)),
        (sp.csc_matrix(A), B),
        (A, sp.coo_matrix(B)),
    ]:
        got = kernel(a, b)
        assert isinstance(got, np.ndarray)
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(("kernel", "sk_params"), KERNELS, ids=lambda v: str(v))
def test_diag_and_rows(kernel: Kernel, sk_params: dict) -> None:
    A, _ = _data(2)
    K = kernel(A, A)
    np.testing.assert_allclose(kernel.diag(A), np.diag(K), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(kernel.diag(sp.csr_matrix(A)), np.diag(K), rtol=1e-12, atol=1e-12)
    sq = squared_norms(A)
    # one row from a matrix-vector product, and two rows from a 2×n block
    row = kernel.from_inner(A @ A[4], sq[4], sq, A.shape[1])
    np.testing.assert_allclose(row, K[4], rtol=1e-12, atol=1e-12)
    pair = np.array([1, 6])
    rows = kernel.from_inner(A[pair] @ A.T, sq[pair], sq, A.shape[1])
    np.testing.assert_allclose(rows, K[pair], rtol=1e-12, atol=1e-12)


def test_rbf_distance_is_clipped_at_zero() -> None:
    # large norms: ‖a‖² + ‖b‖² − 2⟨a, b⟩ rounds to ±1e-7 for equal points; without the clip
    # some diagonal entries would exceed 1
    rng = np.random.default_rng(3)
    A = 1e4 + rng.normal(size=(40, 3))
    K = Kernel("rbf", gamma=2.0)(A, A)
    assert np.all(K <= 1.0)
    np.testing.assert_allclose(np.diag(K), 1.0, atol=1e-5)


def test_gamma_none_means_one_over_features() -> None:
    assert Kernel("rbf").gamma_for(8) == 0.125
    assert Kernel("rbf", gamma=2.0).gamma_for(8) == 2.0


def test_frozen() -> None:
    k = Kernel("rbf", gamma=1.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        k.gamma = 2.0  # type: ignore[misc]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"kind": "sigmoid"}, "The 'kind' parameter of Kernel must be a str among"),
        (
            {"kind": "rbf", "gamma": 0.0},
            "The 'gamma' parameter of Kernel must be a float in the "
            r"range \(0.0, inf\) or None. Got 0.0 instead.",
        ),
        ({"kind": "rbf", "gamma": -1.0}, "The 'gamma' parameter of Kernel"),
        ({"kind": "rbf", "gamma": float("nan")}, "The 'gamma' parameter of Kernel"),
        ({"kind": "rbf", "gamma": "auto"}, "The 'gamma' parameter of Kernel"),
        (
            {"kind": "poly", "degree": 0},
            r"The 'degree' parameter of Kernel must be an int in the "
            r"range \[1, inf\). Got 0 instead.",
        ),
        ({"kind": "poly", "degree": 2.5}, "The 'degree' parameter of Kernel"),
        ({"kind": "poly", "degree": True}, "The 'degree' parameter of Kernel"),
        ({"kind": "poly", "coef0": float("inf")}, "The 'coef0' parameter of Kernel"),
    ],
)
def test_invalid_parameters(kwargs: dict, message: str) -> None:
    with pytest.raises(InvalidParameterError, match=message):
        Kernel(**kwargs)


def test_bad_shapes() -> None:
    A, B = _data(4)
    with pytest.raises(DataError, match=r"A has shape \(17, 5\) but B has shape \(9, 4\)"):
        Kernel("linear")(A, B[:, :4])
    with pytest.raises(DataError, match="A must be a 2-D array"):
        Kernel("rbf")(A[0], B)


@pytest.mark.parametrize(("kernel", "sk_params"), KERNELS, ids=lambda v: str(v))
def test_kernel_times_is_the_blocked_product(kernel: Kernel, sk_params: dict, monkeypatch) -> None:
    import aidopt.kernels as kernels

    A, B = _data(5)
    K = pairwise_kernels(A, B, metric=kernel.kind, **sk_params)
    rng = np.random.default_rng(6)
    v, V = rng.normal(size=B.shape[0]), rng.normal(size=(B.shape[0], 4))
    S = sp.random(B.shape[0], 3, density=0.5, random_state=7, format="csr")
    monkeypatch.setattr(kernels, "_BLOCK_ENTRIES", 2 * B.shape[0])  # blocks of 2 rows of A
    for a, b in [(A, B), (sp.csr_matrix(A), sp.csr_matrix(B))]:
        np.testing.assert_allclose(kernel_times(kernel, a, b, v), K @ v, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(kernel_times(kernel, a, b, V), K @ V, rtol=1e-12, atol=1e-12)
        got = kernel_times(kernel, a, b, S)
        np.testing.assert_allclose(got, K @ S.toarray(), rtol=1e-12, atol=1e-12)
    with pytest.raises(DataError, match="same number of features"):
        kernel_times(kernel, A, B[:, :4], v)
