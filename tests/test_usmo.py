"""Tests of the USMO solver of the PU dual (6) against full QP solves (cvxpy + Clarabel)."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
import scipy.sparse as sp

from aidopt.exceptions import ConvergenceWarning, DataError, InvalidParameterError
from aidopt.numerics.kernels import Kernel
from aidopt.solvers.usmo import _pair_step, optimality_conditions, usmo

LINEAR = Kernel("linear")
RBF = Kernel("rbf", gamma=0.5)
POLY = Kernel("poly", gamma=0.5, degree=2, coef0=1.0)


def _instance(seed: int, p: int = 10, n: int = 60, d: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """Labeled positives around +1, unlabeled = 40% positives + 60% negatives around 0."""
    rng = np.random.default_rng(seed)
    n_pos = int(0.4 * n)
    X = np.vstack([rng.normal(size=(p + n_pos, d)) + 1.0, rng.normal(size=(n - n_pos, d))])
    labeled = np.zeros(p + n, dtype=bool)
    labeled[:p] = True
    perm = rng.permutation(p + n)  # labeled rows need not come first
    return X[perm], labeled[perm]


def _blobs(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The digest's §6 setting: 2-D blobs, p = 8 labeled, n = 40 unlabeled."""
    rng = np.random.default_rng(seed)
    Xp = rng.normal(size=(8, 2)) + 1.5
    Xu = np.vstack([rng.normal(size=(16, 2)) + 1.5, rng.normal(size=(24, 2))])
    return np.vstack([Xp, Xu]), np.r_[np.ones(8, dtype=bool), np.zeros(40, dtype=bool)]


def _parts(X, labeled, prior, lam, kernel, weights=None):
    """Full-Gram pieces of (6): K, K_UU, b = K_UP α_P, C, c1, c2."""
    w = np.ones(labeled.size) if weights is None else np.asarray(weights, dtype=float)
    P, U = np.flatnonzero(labeled), np.flatnonzero(~labeled)
    c1 = prior / (2 * lam * w[P].sum())
    c2 = 1 / (2 * lam * w[U].sum())
    K = kernel(X, X)
    return K, K[np.ix_(U, U)], K[np.ix_(U, P)] @ (c1 * w[P]), c2 * w[U], c1 * w[P]


def _reference_dual(X, labeled, prior, lam, kernel, weights=None) -> float:
    """min (6) in (σ, δ) with the explicit Gram matrix."""
    cp = pytest.importorskip("cvxpy")
    _, Kuu, b, C, _ = _parts(X, labeled, prior, lam, kernel, weights)
    s, dl = cp.Variable(C.size), cp.Variable(C.size)
    objective = 0.5 * cp.quad_form(s, cp.psd_wrap(Kuu)) - b @ s - 0.5 * cp.sum(dl)
    constraints = [cp.sum(s) == prior / (2 * lam), s + dl / 2 <= C, s - dl / 2 >= 0]
    constraints += [dl >= 0, dl <= C]
    problem = cp.Problem(cp.Minimize(objective), constraints)
    problem.solve(solver="CLARABEL", tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
    assert problem.status == "optimal"
    return float(problem.value)


def _reference_primal(X, labeled, prior, lam, kernel, weights=None) -> float:
    """min (5) in (α, β, ξ) with the explicit Gram matrix (½αᵀKα via K = LLᵀ)."""
    cp = pytest.importorskip("cvxpy")
    K, _, _, C, alpha_p = _parts(X, labeled, prior, lam, kernel, weights)
    eigval, eigvec = np.linalg.eigh(K)
    L = eigvec * np.sqrt(np.clip(eigval, 0.0, None))
    P, U = np.flatnonzero(labeled), np.flatnonzero(~labeled)
    a, beta, xi = cp.Variable(labeled.size), cp.Variable(), cp.Variable(U.size)
    f = K @ a + beta
    objective = -alpha_p @ f[P] + C @ xi + 0.5 * cp.sum_squares(L.T @ a)
    constraints = [xi >= 0, xi >= f[U], xi >= 0.5 + 0.5 * f[U]]
    problem = cp.Problem(cp.Minimize(objective), constraints)
    problem.solve(solver="CLARABEL", tol_gap_abs=1e-11, tol_gap_rel=1e-11, tol_feas=1e-11)
    assert problem.status == "optimal"
    return float(problem.value)


def _dual_value(sigma, Kuu, b, C) -> float:
    return float(0.5 * sigma @ Kuu @ sigma - b @ sigma - np.minimum(sigma, C - sigma).sum())


@pytest.mark.parametrize("kernel", [LINEAR, RBF], ids=["linear", "rbf"])
@pytest.mark.parametrize(("seed", "n", "prior", "lam"), [(0, 40, 0.4, 0.01), (1, 120, 0.3, 0.1)])
def test_objectives_equal_full_qp(kernel: Kernel, seed: int, n: int, prior: float, lam: float):
    X, labeled = _instance(seed, n=n)
    res = usmo(X, labeled, prior=prior, lam=lam, kernel=kernel, tol=1e-9)
    assert res.status == "optimal"
    dual = _reference_dual(X, labeled, prior, lam, kernel)
    primal = _reference_primal(X, labeled, prior, lam, kernel)
    assert res.dual_objective == pytest.approx(dual, rel=1e-6)
    assert res.primal_objective == pytest.approx(primal, rel=1e-6)
    # strong duality: min(5) = −(min(6) + ½ α_Pᵀ K_PP α_P), and the certificate is tight
    assert -1e-12 * abs(res.dual_objective) <= res.duality_gap <= 1e-6 * abs(res.dual_objective)
    # (7): α = c1 on P, −σ on U; Σα = 0; the returned dual objective is G(σ)
    _, Kuu, b, C, _ = _parts(X, labeled, prior, lam, kernel)
    np.testing.assert_array_equal(res.alpha[labeled], res.c1)
    np.testing.assert_array_equal(res.alpha[~labeled], -res.sigma)
    assert abs(res.alpha.sum()) <= 1e-12 * prior / (2 * lam)
    assert res.dual_objective == pytest.approx(_dual_value(res.sigma, Kuu, b, C), rel=1e-12)
    np.testing.assert_allclose(res.delta, np.minimum(2 * res.sigma, 2 * C - 2 * res.sigma))


@pytest.mark.parametrize("kernel", [LINEAR, RBF, POLY], ids=["linear", "rbf", "poly"])
@pytest.mark.parametrize("seed", [2, 3])
def test_all_four_kkt_conditions_hold_at_stop(kernel: Kernel, seed: int) -> None:
    tol = 1e-6
    X, labeled = _instance(seed, n=80)
    res = usmo(X, labeled, prior=0.4, lam=0.01, kernel=kernel, tol=tol)
    assert res.status == "optimal"
    assert res.kkt_violation <= tol
    K = kernel(X, X)
    F = (K @ res.alpha)[~labeled]  # f − β, from the full Gram matrix
    s, C = res.sigma, res.upper
    d1, d2, d3 = s < C / 2, s > C / 2, (s > 0) & (s < C)
    m1max, m2min, m3min, m3max = F[d1].max(), F[d2].min(), F[d3].min(), F[d3].max()
    assert m1max - m3min <= tol  # (13)
    assert m3max - m2min <= tol  # (13)
    assert m1max - m2min + 2 <= tol  # (13)
    assert m3max - m3min <= 2 + tol  # the missing fourth condition
    expected = (m1max - m3min, m3max - m2min, m1max - m2min + 2, m3max - m3min - 2)
    np.testing.assert_allclose(optimality_conditions(s, F, C), expected, atol=1e-9)
    # the bias satisfies the τ-conditions (12) with τ = 2 tol on every unlabeled point
    f = F + res.bias
    assert np.all(f[s < C / 2] <= -1 + tol) and np.all(f[s > C / 2] >= 1 - tol)
    assert np.all(np.abs(f[d3]) <= 1 + tol)
    np.testing.assert_allclose(res.decision_function(X, X), K @ res.alpha + res.bias, atol=1e-9)


def _three_condition_smo(X, labeled, prior, lam, kernel, tol):
    """The paper's stopping test (13) only: maximal pair over its three conditions, dense K."""
    _, Kuu, b, C, _ = _parts(X, labeled, prior, lam, kernel)
    s = prior * C
    for _ in range(10_000):
        F = b - Kuu @ s
        d1, d2, d3 = s < C / 2, s > C / 2, (s > 0) & (s < C)
        i1 = np.flatnonzero(d1)[np.argmax(F[d1])] if d1.any() else None
        i2 = np.flatnonzero(d2)[np.argmin(F[d2])] if d2.any() else None
        i3n = np.flatnonzero(d3)[np.argmin(F[d3])] if d3.any() else None
        i3x = np.flatnonzero(d3)[np.argmax(F[d3])] if d3.any() else None
        value = optimality_conditions(s, F, C)[:3]
        k = int(np.argmax(value))
        if value[k] <= tol:
            return s, F
        j, i = [(i1, i3n), (i3x, i2), (i1, i2)][k]
        s[i], s[j] = _pair_step(F[i], F[j], s[i], s[j], C[i], C[j], Kuu[i, i], Kuu[j, j], Kuu[i, j])
    raise AssertionError("the three-condition SMO did not stop")


def test_three_condition_stop_is_not_optimal_regression() -> None:
    """Digest §2.3: test (13) passes at a non-optimal point; USMO's fourth condition sees it."""
    tol, prior, lam = 1e-6, 0.4, 0.01
    X, labeled = _blobs(1)
    s_stop, F_stop = _three_condition_smo(X, labeled, prior, lam, RBF, tol)
    _, Kuu, b, C, _ = _parts(X, labeled, prior, lam, RBF)
    conditions = optimality_conditions(s_stop, F_stop, C)
    assert max(conditions[:3]) <= tol  # the paper's test (13) would stop here ...
    assert conditions[3] > 1.0  # ... though m3max − m3min exceeds 2 by more than 1
    optimum = _reference_dual(X, labeled, prior, lam, RBF)
    assert _dual_value(s_stop, Kuu, b, C) > optimum + 1e-3 * abs(optimum)  # not optimal
    res = usmo(X, labeled, prior=prior, lam=lam, kernel=RBF, tol=tol, init=s_stop)
    assert res.iterations > 0
    assert res.status == "optimal"
    assert res.dual_objective == pytest.approx(optimum, rel=1e-6)
    assert max(optimality_conditions(res.sigma, (b - Kuu @ res.sigma), C)) <= tol


class _Recorder:
    """Callback that records Σσ (exactly rounded) and the box at every step."""

    def __init__(self, upper: np.ndarray) -> None:
        self.upper, self.sums, self.in_box = upper, [], []

    def __call__(self, iteration: int, sigma: np.ndarray) -> None:
        self.sums.append(math.fsum(sigma))
        self.in_box.append(bool(np.all(sigma >= 0) and np.all(sigma <= self.upper)))


@pytest.mark.parametrize("kernel", [LINEAR, RBF], ids=["linear", "rbf"])
def test_equality_constraint_exact_at_every_step(kernel: Kernel) -> None:
    X, labeled = _instance(4, n=100)
    weights = np.random.default_rng(4).integers(1, 5, size=labeled.size)
    prior, lam = 0.35, 0.003
    target = prior / (2 * lam)
    for w in (np.ones(labeled.size), weights):
        wu = w[~labeled]
        record = _Recorder(wu / (2 * lam * wu.sum()))
        res = usmo(X, labeled, prior=prior, lam=lam, kernel=kernel, weights=w, callback=record)
        assert len(record.sums) == res.iterations > 50
        assert max(abs(s - target) for s in record.sums) <= 1e-12 * target
        assert all(record.in_box)
        assert abs(math.fsum(res.sigma) - target) <= 1e-12 * target


@pytest.mark.parametrize("kernel", [LINEAR, RBF], ids=["linear", "rbf"])
def test_weighted_equals_repeated_rows(kernel: Kernel) -> None:
    X, labeled = _instance(5, p=6, n=30)
    weights = np.random.default_rng(5).integers(1, 5, size=labeled.size)
    X_rep, lab_rep = np.repeat(X, weights, axis=0), np.repeat(labeled, weights)
    kw = {"prior": 0.4, "lam": 0.02, "kernel": kernel, "tol": 1e-10}
    weighted = usmo(X, labeled, weights=weights, **kw)
    repeated = usmo(X_rep, lab_rep, **kw)
    scaled = usmo(X, labeled, weights=2.5 * weights, **kw)  # float weights, same problem
    for res in (repeated, scaled):
        assert res.dual_objective == pytest.approx(weighted.dual_objective, rel=1e-9)
        assert res.primal_objective == pytest.approx(weighted.primal_objective, rel=1e-9)
    # f − β is unique (the RKHS part of the optimum): compare it on new points
    X_new = np.random.default_rng(6).normal(size=(25, X.shape[1]))
    f_w = weighted.decision_function(X, X_new) - weighted.bias
    f_r = repeated.decision_function(X_rep, X_new) - repeated.bias
    np.testing.assert_allclose(f_w, f_r, atol=1e-6 * np.abs(f_w).max())
    # the weighted box C_u = c2 w_u, and the reference QP with weights agrees
    np.testing.assert_allclose(weighted.upper, weighted.c2 * weights[~labeled])
    dual = _reference_dual(X, labeled, 0.4, 0.02, kernel, weights)
    assert weighted.dual_objective == pytest.approx(dual, rel=1e-6)


def test_sparse_input_and_coef() -> None:
    X, labeled = _instance(7, n=50, d=6)
    X[np.abs(X) < 0.5] = 0.0
    dense = usmo(X, labeled, prior=0.4, lam=0.05, tol=1e-10)
    sparse = usmo(sp.csr_matrix(X), labeled, prior=0.4, lam=0.05, tol=1e-10)
    assert sparse.dual_objective == pytest.approx(dense.dual_objective, rel=1e-10)
    np.testing.assert_allclose(sparse.coef, dense.coef, atol=1e-8)
    np.testing.assert_allclose(dense.coef, X.T @ dense.alpha, rtol=1e-12)
    X_new = np.random.default_rng(7).normal(size=(5, 6))
    np.testing.assert_allclose(
        dense.decision_function(X, X_new), X_new @ dense.coef + dense.bias, rtol=1e-12
    )
    np.testing.assert_allclose(
        sparse.decision_function(sp.csr_matrix(X), sp.csr_matrix(X_new)),
        dense.decision_function(X, X_new),
        atol=1e-8,
    )


@pytest.mark.parametrize("kernel", [LINEAR, RBF], ids=["linear", "rbf"])
def test_duplicate_points_eta_zero(kernel: Kernel) -> None:
    X, labeled = _instance(8, n=30)
    unl = np.flatnonzero(~labeled)
    X = np.vstack([X, X[unl[:10]], X[unl[:10]]])  # η = 0 for every copy pair
    labeled = np.r_[labeled, np.zeros(20, dtype=bool)]
    res = usmo(X, labeled, prior=0.4, lam=0.01, kernel=kernel, tol=1e-9)
    assert res.status == "optimal"
    assert res.dual_objective == pytest.approx(
        _reference_dual(X, labeled, 0.4, 0.01, kernel), rel=1e-6
    )


def test_pair_step_is_exact_minimiser() -> None:
    rng = np.random.default_rng(9)
    for _ in range(200):
        C_i, C_j = rng.uniform(0.5, 2.0, size=2)
        s_i, s_j = rng.uniform(0, C_i), rng.uniform(0, C_j)
        if rng.random() < 0.3:  # start on a bound or a kink
            s_i = rng.choice([0.0, C_i / 2, C_i])
        x = rng.normal(size=(2, 2)) * rng.choice([1.0, 1e-9])  # η ≈ 0 in some draws
        K = RBF(x, x)
        F_i, F_j = rng.normal(scale=2.0, size=2)
        new_i, new_j = _pair_step(F_i, F_j, s_i, s_j, C_i, C_j, K[0, 0], K[1, 1], K[0, 1])
        eta = K[0, 0] + K[1, 1] - 2 * K[0, 1]

        def phi(t, s_i=s_i, s_j=s_j, C_i=C_i, C_j=C_j, F_i=F_i, F_j=F_j, eta=eta):
            a, c = s_i - t, s_j + t
            return (
                (F_i - F_j) * t + 0.5 * eta * t**2 - np.minimum(a, C_i - a) - np.minimum(c, C_j - c)
            )

        grid = np.linspace(max(-s_j, s_i - C_i), min(C_j - s_j, s_i), 20_001)
        assert 0 <= new_i <= C_i and 0 <= new_j <= C_j
        assert abs((new_i + new_j) - (s_i + s_j)) <= 4e-16 * (s_i + s_j)
        assert phi(new_j - s_j) <= phi(grid).min() + 1e-12


def test_bias_is_interval_midpoint_without_free_variables() -> None:
    # two unlabeled points, both at the kink σ = C/2 (no non-bound variable)
    X = np.array([[1.0], [-1.0], [2.0]])
    labeled = np.array([True, False, False])
    res = usmo(X, labeled, prior=0.5, lam=0.5)
    np.testing.assert_array_equal(res.sigma, res.upper / 2)
    F = res.decision_function(X, X) - res.bias
    # σ at the kink: −1 ≤ F_u + β ≤ 1 for both, i.e. β ∈ [−1 − min F, 1 − max F]
    lo, hi = -1 - F[1:].min(), 1 - F[1:].max()
    assert res.bias == pytest.approx(0.5 * (lo + hi), abs=1e-15)
    assert lo < hi and abs(res.bias) > 0.1  # an asymmetric interval


def test_warm_start_and_iteration_limit() -> None:
    X, labeled = _instance(10, n=60)
    res = usmo(X, labeled, prior=0.4, lam=0.01, kernel=RBF)
    again = usmo(X, labeled, prior=0.4, lam=0.01, kernel=RBF, init=res.sigma)
    assert again.iterations == 0 and again.status == "optimal"
    with pytest.warns(ConvergenceWarning, match="iteration_limit"):
        short = usmo(X, labeled, prior=0.4, lam=0.01, kernel=RBF, max_iter=3)
    assert short.status == "iteration_limit" and short.iterations == 3
    assert short.kkt_violation > 1e-6
    assert short.duality_gap > 0
    assert abs(math.fsum(short.sigma) - 0.4 / 0.02) <= 1e-12 * 20


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"prior": 1.5},
            "The 'prior' parameter of usmo must be a float in the range (0.0, 1.0). "
            "Got 1.5 instead.",
        ),
        ({"prior": 0.0}, "The 'prior' parameter of usmo"),
        ({"prior": 1.0}, "The 'prior' parameter of usmo"),
        ({"prior": True}, "The 'prior' parameter of usmo"),
        (
            {"lam": 0.0},
            "The 'lam' parameter of usmo must be a float in the range (0.0, inf). Got 0.0 instead.",
        ),
        ({"lam": -1.0}, "The 'lam' parameter of usmo"),
        ({"tol": 0.0}, "The 'tol' parameter of usmo"),
        ({"max_iter": -1}, "The 'max_iter' parameter of usmo"),
        ({"kernel": "rbf"}, "The 'kernel' parameter of usmo"),
        ({"init": "ocsvm"}, "The 'init' parameter of usmo"),
    ],
)
def test_invalid_parameters(kwargs: dict, message: str) -> None:
    X, labeled = _instance(11, n=20)
    params = {"prior": 0.4, "lam": 0.1} | kwargs
    with pytest.raises(InvalidParameterError, match=re.escape(message)):
        usmo(X, labeled, **params)


def test_bad_data() -> None:
    X, labeled = _instance(12, n=20)
    kw = {"prior": 0.4, "lam": 0.1}
    with pytest.raises(DataError, match="no True entry"):
        usmo(X, np.zeros_like(labeled), **kw)
    with pytest.raises(DataError, match="all True"):
        usmo(X, np.ones_like(labeled), **kw)
    for bad in (np.nan, np.inf):
        X_bad = X.copy()
        X_bad[3, 1] = bad
        with pytest.raises(DataError, match="NaN or infinite"):
            usmo(X_bad, labeled, **kw)
    with pytest.raises(DataError, match="NaN or infinite"):
        usmo(sp.csr_matrix(np.where(X > 0, np.nan, 0.0)), labeled, **kw)
    with pytest.raises(DataError, match=r"X has shape \(30, 3\) but labeled has shape \(29,\)"):
        usmo(X, labeled[:-1], **kw)
    with pytest.raises(DataError, match="boolean mask"):
        usmo(X, np.where(labeled, 2, 0), **kw)
    with pytest.raises(DataError, match=r"weights has shape \(3,\)"):
        usmo(X, labeled, weights=np.ones(3), **kw)
    with pytest.raises(DataError, match="weights must be finite and > 0"):
        usmo(X, labeled, weights=np.r_[0.0, np.ones(29)], **kw)
    n_unl = int((~labeled).sum())
    with pytest.raises(DataError, match=r"init has shape \(5,\)"):
        usmo(X, labeled, init=np.zeros(5), **kw)
    with pytest.raises(DataError, match="does not satisfy"):
        usmo(X, labeled, init=np.zeros(n_unl), **kw)
    # 0/1 integers are accepted as a mask
    ints = usmo(X, labeled.astype(int), **kw)
    assert ints.dual_objective == usmo(X, labeled, **kw).dual_objective


def _scaled_pu(scale: float, n: int = 300) -> tuple[np.ndarray, np.ndarray]:
    """``aidopt generate pu --n 300 --m 3 --seed 0`` with every feature multiplied by scale."""
    from aidopt.data.pu import make_pu

    X, _, labeled, _ = make_pu(n, 3, seed=0)
    return X * scale, labeled


@pytest.mark.parametrize("scale", [1e5, 1e7])
def test_badly_scaled_features_reach_the_rounding_floor(scale: float) -> None:
    """Features ×1e5 give |f| ~ 1e11, whose rounding error (~1e-5) is far above tol = 1e-8:
    USMO used to step on at that floor until max_iter (10⁷ steps); it now stops at
    max(tol, rounding floor) with a certified-small duality gap."""
    X, labeled = _scaled_pu(scale)
    res = usmo(X, labeled, prior=0.4, lam=0.01, tol=1e-8, max_iter=200_000)
    assert res.status == "optimal" and res.iterations < 5_000
    assert 1e-8 < res.tolerance and res.kkt_violation <= res.tolerance
    scale_f = np.abs(res.train_decision).max()
    assert res.tolerance <= 1e-12 * scale_f  # still ~1e-14 relative to the f values
    assert abs(res.duality_gap) <= 1e-12 * abs(res.primal_objective)


def test_tolerance_is_tol_on_unit_scale_data() -> None:
    X, labeled = _instance(13, n=200)
    for kernel in (LINEAR, RBF):
        res = usmo(X, labeled, prior=0.4, lam=0.01, kernel=kernel, tol=1e-10)
        assert res.status == "optimal" and res.tolerance == 1e-10


def test_no_progress_is_stalled_not_a_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    """With the rounding floor switched off, tol = 1e-8 cannot be met on features ×1e5: the
    progress check (G(σ) must drop over a window of steps) ends the loop as "stalled"."""
    import aidopt.solvers.usmo as usmo_module

    monkeypatch.setattr(usmo_module, "rounding_floor", lambda *args: 0.0)
    monkeypatch.setattr(usmo_module, "_STALL_WINDOW", 2_000)
    X, labeled = _scaled_pu(1e5)
    with pytest.warns(ConvergenceWarning, match="stalled"):
        res = usmo(X, labeled, prior=0.4, lam=0.01, tol=1e-8, max_iter=1_000_000)
    assert res.status == "stalled" and res.iterations < 100_000
    assert abs(math.fsum(res.sigma) - 0.4 / 0.02) <= 1e-12 * 20  # still a feasible σ


def test_time_limit_parameter_is_validated() -> None:
    X, labeled = _instance(14, n=20)
    for bad in (-1.0, "1", True):
        with pytest.raises(InvalidParameterError, match="The 'time_limit' parameter of usmo"):
            usmo(X, labeled, prior=0.4, lam=0.1, time_limit=bad)
