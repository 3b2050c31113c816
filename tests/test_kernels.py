"""Tests of aidopt.numerics.kernels: blocks equal scikit-learn's pairwise_kernels, validation."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.metrics.pairwise import pairwise_kernels

from aidopt.exceptions import DataError, InvalidParameterError
from aidopt.numerics.kernel_sums import grouped_kernel_sums, square_grouped_kernel_sums
from aidopt.numerics.kernels import (
    Kernel,
    kernel_bound,
    kernel_entry_error,
    kernel_times,
    quadratic_form_error,
    squared_norms,
)

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
    import aidopt.numerics.kernels as kernels

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


def _exact_kernel(kernel: Kernel, A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """k(a_i, b_j) in extended precision from the rows' differences (the reference)."""
    a, b = A.astype(np.longdouble), B.astype(np.longdouble)
    g = np.longdouble(kernel.gamma_for(A.shape[1]))
    if kernel.kind == "rbf":
        return np.exp(-g * ((a[:, None, :] - b[None, :, :]) ** 2).sum(axis=2))
    inner = a @ b.T
    return inner if kernel.kind == "linear" else (g * inner + kernel.coef0) ** kernel.degree


@pytest.mark.parametrize("shift", [0.0, 3.0, 1e3, 1e6])
@pytest.mark.parametrize("scale", [1e-9, 1.0, 1e9])
@pytest.mark.parametrize(
    "kernel",
    [Kernel("rbf", gamma=8.0), Kernel("rbf"), Kernel("linear"), Kernel("poly", degree=3)],
    ids=str,
)
def test_every_entry_is_within_the_kernel_entry_error(kernel, scale, shift) -> None:
    """|k̂ − k| ≤ kernel_entry_error on nice, tiny, huge and off-centre rows (the bound the
    certificates charge); near pairs are where the norm expansion cancels."""
    rng = np.random.default_rng(11)
    X = rng.normal(size=(60, 3)) + shift
    X = np.r_[X, X[:20] + 1e-3 * rng.normal(size=(20, 3))] * scale  # near pairs
    if kernel.kind == "rbf" and kernel.gamma is not None:
        X = X / scale  # the rbf of γ = 8 keeps its scale; γ = 1/m sees the raw scale
    exact = _exact_kernel(kernel, X, X)
    error = np.abs(kernel(X, X) - exact).max()
    bound = kernel_entry_error(kernel, X)
    assert float(error) <= bound


@pytest.mark.parametrize("shift", [0.0, 1e3])
@pytest.mark.parametrize("kernel", [Kernel("rbf", gamma=8.0), Kernel("linear")], ids=str)
def test_a_quadratic_form_is_within_its_error_bound(kernel, shift) -> None:
    """cᵀK̂c as the models compute it (blocked kernel products) is within quadratic_form_error
    of the exact form over the same rows."""
    rng = np.random.default_rng(15)
    X = np.r_[rng.normal(size=(70, 3)), rng.normal(size=(10, 3)) * 1e-4] + shift
    c = rng.uniform(0.0, 1.0, size=X.shape[0])
    computed = float(c @ kernel_times(kernel, X, X, c))
    cl = c.astype(np.longdouble)
    exact = cl @ _exact_kernel(kernel, X, X) @ cl
    bound = quadratic_form_error(
        float(c.sum()), X.shape[0], kernel_bound(kernel, X), kernel_entry_error(kernel, X)
    )
    assert float(abs(computed - exact)) <= bound


def test_rbf_far_from_the_origin_is_computed_from_the_differences() -> None:
    """At 10^9 the norm expansion gave k(x, x) = 0: a block it could move by more than 2^-40
    goes through the differences; a near-origin block keeps the expansion (same values)."""
    rng = np.random.default_rng(12)
    X = rng.normal(size=(50, 4))
    kernel = Kernel("rbf", gamma=0.25)
    np.testing.assert_allclose(kernel(X * 1e9, X * 1e9), np.eye(50), atol=0.0)
    shifted = X + 1e4  # the expansion would be off by ~1e-7 on the diagonal
    error = np.abs(kernel(shifted, shifted) - _exact_kernel(kernel, shifted, shifted)).max()
    assert float(error) <= 8 * 2.0**-53
    assert kernel_entry_error(kernel, X) < 1e-13  # the expansion's own bound, near the origin
    assert kernel_entry_error(kernel, shifted) == 2.0**-40


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(("kernel", "sk_params"), KERNELS[:4], ids=lambda v: str(v))
def test_grouped_kernel_sums_equal_the_dense_product(kernel, sk_params, threads, monkeypatch):
    """G = S_w K(A, B) (R): rows of A summed per group with weights, tile by tile, over column
    ranges on separate threads; equal to the dense product for dense and sparse rows."""
    import aidopt.numerics.kernel_sums as kernel_sums

    monkeypatch.setattr(kernel_sums, "TILE_ENTRIES", 64 * 5)  # tiles of 5 columns
    monkeypatch.setattr(kernel_sums, "_PARALLEL_ENTRIES", 1)
    rng = np.random.default_rng(13)
    A, B = rng.normal(size=(150, 4)), rng.normal(size=(37, 4))
    groups = rng.integers(0, 6, size=150)
    groups[groups == 4] = 5  # an empty group
    w = rng.uniform(0.5, 2.0, size=150)
    R = sp.random(37, 3, density=0.5, random_state=14, format="csr")
    S = np.zeros((6, 150))
    S[groups, np.arange(150)] = w
    K = pairwise_kernels(A, B, metric=kernel.kind, **sk_params)
    for a, b in [(A, B), (sp.csr_matrix(A), sp.csr_matrix(B))]:
        got = grouped_kernel_sums(kernel, a, groups, 6, b, w, threads=threads)
        np.testing.assert_allclose(got, S @ K, rtol=1e-12, atol=1e-12)
        got = grouped_kernel_sums(kernel, a, groups, 6, b, None, R, threads=threads)
        np.testing.assert_allclose(got, (S > 0) @ K @ R.toarray(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(("kernel", "sk_params"), KERNELS[:4], ids=lambda v: str(v))
def test_square_grouped_kernel_sums_equal_the_dense_product(
    kernel, sk_params, threads, monkeypatch
):
    """G = S_w K(X, X) from the block pairs I ≤ J only (each off-diagonal block used twice),
    blocks of 16 rows (the last one short), groups interleaved in X and one group empty:
    equal to the dense product for dense and sparse rows, with and without weights."""
    import aidopt.numerics.kernel_sums as kernel_sums

    monkeypatch.setattr(kernel_sums, "_SQUARE_ROWS", 16)
    monkeypatch.setattr(kernel_sums, "_PARALLEL_ENTRIES", 1)
    rng = np.random.default_rng(17)
    X = rng.normal(size=(150, 4))
    groups = rng.integers(0, 7, size=150)
    groups[groups == 4] = 6  # an empty group
    w = rng.uniform(0.5, 2.0, size=150)
    K = pairwise_kernels(X, X, metric=kernel.kind, **sk_params)
    for weight in (w, None):
        S = np.zeros((7, 150))
        S[groups, np.arange(150)] = 1.0 if weight is None else weight
        for x in (X, sp.csr_matrix(X)):
            got = square_grouped_kernel_sums(kernel, x, groups, 7, weight, threads=threads)
            np.testing.assert_allclose(got, S @ K, rtol=1e-12, atol=1e-12)


def test_kernel_times_sparse_uses_the_support_and_equals_the_full_product():
    from aidopt.numerics.kernels import kernel_times_sparse

    rng = np.random.default_rng(8)
    A, B = rng.normal(size=(40, 3)), rng.normal(size=(30, 3))
    v = np.where(rng.random(30) < 0.3, rng.normal(size=30), 0.0)
    kernel = Kernel("rbf", 0.7)
    np.testing.assert_allclose(kernel_times_sparse(kernel, A, B, v), kernel(A, B) @ v, atol=1e-13)
    np.testing.assert_array_equal(kernel_times_sparse(kernel, A, B, np.zeros(30)), np.zeros(40))
