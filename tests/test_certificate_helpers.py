"""The rounding helpers behind the weighted certificates: the weighted sum's error bound holds
against exact rational arithmetic, and the rounded-down box lies inside the exact one."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse as sp

from aidopt.core.certificate import (
    Bound,
    DualPoint,
    best_with_dual,
    dual_box,
    plus_half_squared_norm,
    ridge_dual_bound,
)
from aidopt.numerics.rounding import (
    EPS,
    GAMMA_BLAS,
    accurate_sum,
    accurate_tdot,
    accurate_weighted_sum,
    squared_norm,
)


def test_accurate_weighted_sum_bounds_its_error_exactly():
    rng = np.random.default_rng(0)
    for scale in (1e-9, 1.0, 1e9):
        values = scale * rng.standard_normal(5000)
        weight = rng.lognormal(0.0, 3.0, size=5000)
        total, error = accurate_weighted_sum(values, weight)
        exact = sum(
            Fraction(float(w)) * Fraction(float(v)) for w, v in zip(weight, values, strict=True)
        )
        assert abs(Fraction(total) - exact) <= Fraction(error)
        assert error <= 1e-10 * float(np.abs(weight * values).sum())
    assert accurate_weighted_sum(values, None) == accurate_sum(values)


@pytest.mark.parametrize("layout", ["C", "F", "csr"])
@pytest.mark.parametrize("n", [0, 1, 63, 64, 65, 255, 256, 257, 256 * 256 + 3])
def test_accurate_tdot_bounds_its_error_exactly(layout, n):
    """Aᵀv of the certificates (chunk sums by BLAS, the chunk sums exactly): within its stated
    bound of the exact rational value, for columns of scale 1e-9 … 1e9, on sizes around the
    chunk lengths (BLAS_CHUNK dense, CHUNK sparse), C- and F-ordered and sparse; a dense A is
    charged GAMMA_BLAS, the bound of BLAS_CHUNK terms in any order."""
    rng = np.random.default_rng(n)
    A = rng.standard_normal((n, 3)) * np.array([1e-9, 1.0, 1e9])
    A[rng.random((n, 3)) < 0.3] = 0.0
    v = rng.standard_normal(n) * rng.lognormal(0.0, 2.0, n)
    data = {"C": A, "F": np.asfortranarray(A), "csr": sp.csr_matrix(A)}[layout]
    total, error = accurate_tdot(data, v)
    rows = range(n) if n < 1000 else rng.choice(n, 997, replace=False)
    if n >= 1000:  # the exact value of a thousand rows only: the rest cut to zero
        keep = np.zeros(n, dtype=bool)
        keep[rows] = True
        v = np.where(keep, v, 0.0)
        total, error = accurate_tdot(data, v)
    for j in range(3):
        exact = sum(Fraction(float(A[i, j])) * Fraction(float(v[i])) for i in rows)
        assert abs(Fraction(float(total[j])) - exact) <= Fraction(float(error[j]))
        assert error[j] <= 1e-12 * float(np.abs(A[:, j]) @ np.abs(v)) + 1e-300
        if layout != "csr":
            charged = GAMMA_BLAS * float(np.abs(A[:, j]) @ np.abs(v)) * (1 + 4 * EPS)
            assert error[j] == pytest.approx(charged + EPS * abs(total[j]), rel=1e-9, abs=1e-300)


def test_dual_box_lies_inside_the_exact_box():
    rng = np.random.default_rng(1)
    weight = rng.lognormal(0.0, 4.0, size=2000)
    for scale in (1e-7, 0.3, 7.0, 1e5):
        box = dual_box(scale, weight, weight.size)
        assert all(
            Fraction(float(b)) <= Fraction(scale) * Fraction(float(w))
            for b, w in zip(box, weight, strict=True)
        )
        np.testing.assert_allclose(box, scale * weight, rtol=4 * EPS)
    np.testing.assert_array_equal(dual_box(0.25, None, 3), [0.25, 0.25, 0.25])


def test_repair_equalities_with_one_equation_is_the_least_norm_change():
    """One row (the SVM's Σ α_k y_k = 0): the closed form equals least squares, the box holds,
    and coordinates at a bound or not free do not move."""
    from aidopt.core.certificate import repair_equalities

    rng = np.random.default_rng(4)
    a = rng.choice([-1.0, 1.0], 200)
    s = rng.uniform(0.0, 1.0, 200)
    s[:20] = 0.0  # at the lower bound: kept there
    free = np.ones(200, dtype=bool)
    free[20:30] = False
    fixed = repair_equalities(a[None, :], np.zeros(1), s.copy(), 0.0, 1.0, rounds=1, free=free)
    movable = (s > 1e-12) & (s < 1 - 1e-12) & free
    expected = s.copy()
    expected[movable] += np.linalg.lstsq(a[None, movable], [-(a @ s)], rcond=None)[0]
    np.testing.assert_allclose(fixed, np.clip(expected, 0.0, 1.0), rtol=0, atol=1e-15)
    np.testing.assert_array_equal(fixed[~movable], s[~movable])
    assert abs(a @ repair_equalities(a[None, :], np.zeros(1), s.copy(), 0.0, 1.0)) < 1e-12


def test_data_sums_are_cached_within_a_run_only(monkeypatch):
    """Inside data_sums_cached (a driver run) the sums are computed once per array; outside,
    an array changed in place gets its new sums (never a stale bound)."""
    import aidopt.numerics.rounding as certificate

    X = np.arange(12.0).reshape(4, 3)
    calls = []
    real = certificate._abs_column_sums
    monkeypatch.setattr(certificate, "_abs_column_sums", lambda A: calls.append(1) or real(A))
    with certificate.data_sums_cached():
        first = certificate.abs_column_sums(X)
        with certificate.data_sums_cached():  # nested: the same cache
            np.testing.assert_array_equal(certificate.abs_column_sums(X), first)
        certificate.abs_column_sums(X.copy())  # another array: computed
    assert len(calls) == 2
    X *= 2.0
    np.testing.assert_array_equal(certificate.abs_column_sums(X), real(X))
    assert certificate.abs_column_sums(X)[0] >= 2 * first[0]
    assert certificate.max_row_norm(X) >= np.linalg.norm(X, axis=1).max()


def test_best_with_dual_makes_the_winners_dual_point_only():
    made = []

    def point(tag):
        def make():
            made.append(tag)
            return DualPoint(None, np.array([tag], dtype=np.int64), np.array([1.0]))

        return make

    found = [(Bound(1.0, "a"), point(0)), (None, point(1)), (Bound(3.0, "c"), point(2))]
    found.append((Bound(3.0, "d"), point(3)))  # equal to the best: the first one wins
    best = best_with_dual(found)
    assert best.source == "c" and best.dual.index.tolist() == [2] and made == [2]
    assert best_with_dual([(None, point(4))]) is None and made == [2]


def test_dual_value_and_regulariser_bound_their_rounding_exactly():
    rng = np.random.default_rng(1)
    for scale in (1e-9, 1.0, 1e9):
        w = scale * rng.standard_normal(7)
        w_error = 1e-12 * np.abs(w)
        norm_sq, norm_sq_error, _ = squared_norm(w, w_error)
        bound = ridge_dual_bound(3.5, 1e-15, norm_sq, norm_sq_error, "s")
        # the exact ½‖w‖² of any vector in the box |w − w_exact| ≤ w_error
        for corner in (w + w_error, w - w_error, w):
            exact = Fraction(3.5) - sum(Fraction(float(c)) ** 2 for c in corner) / 2
            assert abs(Fraction(bound.dual_value) - exact) <= Fraction(bound.allowance)
            assert Fraction(bound.value) <= exact
        total, error = plus_half_squared_norm(2.0, 0.0, float(w @ w), w.size)
        exact = Fraction(2.0) + sum(Fraction(float(c)) ** 2 for c in w) / 2
        assert abs(Fraction(total) - exact) <= Fraction(error)
    # a residual ρ of the offset's equality costs B(|ρ| + error): the allowance grows by that
    bound = ridge_dual_bound(3.5, 1e-15, 2.0, 1e-15, "s")
    charged = ridge_dual_bound(
        3.5, 1e-15, 2.0, 1e-15, "s", residual=-2e-9, residual_error=1e-16, offset_bound=7.0
    )
    charge = Fraction(charged.allowance) - Fraction(bound.allowance)
    assert charge >= 7 * (Fraction(2e-9) + Fraction(1e-16)) * (1 - Fraction(2**-50))
    assert charged.value < bound.value


def test_dual_sums_bound_their_rounding_exactly_and_add_over_blocks():
    """The ridge dual's row sums (:func:`aidopt.core.dual_sums.dual_sums`): Σ of the terms, v =
    Σ c_i x_i and ρ = Σ r_i each within its stated bound of the exact rational value, for
    columns of scale 1e-9 … 1e9 and weighted coefficients; two blocks' sums added
    (:meth:`DualSums.total`) are within the added bounds of the whole."""
    from aidopt.core.dual_sums import DualSums, dual_sums

    rng = np.random.default_rng(7)
    n = 3001
    X = rng.standard_normal((n, 3)) * np.array([1e-9, 1.0, 1e9])
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    weight = rng.lognormal(0.0, 1.0, n)
    alpha = rng.uniform(0.0, 0.7, n) * weight
    coef = alpha * y
    terms = [(alpha, 0.0), (alpha * 1e-3, 2**-53)]

    def check(sums: DualSums, rows: slice) -> None:
        exact_value = sum(Fraction(float(a)) * (1 + Fraction(1, 1000)) for a in alpha[rows])
        # the second term's entries are rounded products: within 2^-53 of a·1e-3
        assert abs(Fraction(sums.value) - exact_value) <= Fraction(sums.value_error) + sum(
            abs(Fraction(float(a * 1e-3)) - Fraction(float(a)) / 1000) for a in alpha[rows]
        )
        for j in range(3):
            exact = sum(
                Fraction(float(c)) * Fraction(float(x))
                for c, x in zip(coef[rows], X[rows, j], strict=True)
            )
            assert abs(Fraction(float(sums.v[j])) - exact) <= Fraction(float(sums.v_error[j]))
        exact_rho = sum(Fraction(float(c)) for c in coef[rows])
        assert abs(Fraction(sums.rho) - exact_rho) <= Fraction(sums.rho_error)

    whole = dual_sums(X, terms, coef, 0.7, coef, weight=weight)
    check(whole, slice(None))
    parts = [slice(0, 1000), slice(1000, n)]
    blocks = [
        dual_sums(X[p], [(a[p], r) for a, r in terms], coef[p], 0.7, coef[p], weight=weight[p])
        for p in parts
    ]
    check(DualSums.total(blocks), slice(None))


def test_the_shrunk_box_and_its_clip_stay_inside_the_exact_box():
    """below / ratio_below give a float ≤ the exact value a computed one approximates;
    clipped_into clips what lies within rounding above a box and refuses what lies further out
    or below 0; box_distance is min(σ, b − σ) to the bit for 0 ≤ σ ≤ b."""
    from aidopt.core.certificate import below, box_distance, clipped_into, ratio_below

    rng = np.random.default_rng(11)
    for _ in range(2000):
        exact = Fraction(float(rng.lognormal(0.0, 5.0)))
        relative = float(rng.choice([0.0, 1e-16, 1e-12, 1e-6]))
        computed = float(exact * (1 + Fraction(relative) * Fraction(float(rng.uniform(-1, 1)))))
        assert Fraction(below(computed, relative)) <= exact
        a, b = float(rng.lognormal(0.0, 3.0)), float(rng.lognormal(0.0, 3.0))
        scale, _ = ratio_below(a, b, 0.0)
        assert Fraction(scale) <= Fraction(a) / Fraction(b)
    box = np.full(4, 2.0)
    np.testing.assert_array_equal(
        clipped_into(np.array([0.0, 1.0, 2.0, 2.0 * (1 + 1e-16)]), box, 0.0, "[0, 2]"),
        [0.0, 1.0, 2.0, 2.0],
    )
    for bad in ([-1e-300, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 2.0 * (1 + 1e-9)]):
        with pytest.raises(ValueError, match=r"leaves its box \[0, 2\]"):
            clipped_into(np.array(bad), box, 0.0, "[0, 2]")
    b = rng.lognormal(0.0, 4.0, 5000)
    sigma = b * rng.choice([0.0, 0.4999999, 0.5, 0.5000001, 0.9, 1.0], 5000)
    sigma = np.minimum(sigma, b)
    got = box_distance(sigma, b)
    for s, bb, g in zip(sigma[:800], b[:800], got[:800], strict=True):
        exact = min(Fraction(float(s)), Fraction(float(bb)) - Fraction(float(s)))
        assert Fraction(float(g)) == exact


def test_a_moved_point_is_charged_what_it_can_change_in_the_norm():
    """shifted_norm_error bounds |‖w + Δ‖² − ‖w‖²| for ‖Δ‖ ≤ shift; moved_mass bounds Σ|Δ_i|
    between an exact spread and the point kept (clipped, and the spread within its relative
    rounding)."""
    from aidopt.core.certificate import moved_mass, shifted_norm_error

    rng = np.random.default_rng(12)
    for scale in (1e-9, 1.0, 1e9):
        w = scale * rng.standard_normal(6)
        delta = rng.standard_normal(6)
        shift = float(np.linalg.norm(delta)) * (1 + 1e-12)
        change = abs(
            sum(Fraction(float(a)) ** 2 for a in w + delta)
            - sum(Fraction(float(a)) ** 2 for a in w)
        )
        assert change <= Fraction(shifted_norm_error(float(w @ w), 1e-12 * float(w @ w), shift))
    exact = rng.lognormal(0.0, 2.0, 300)
    spread = exact * (1 + 1e-10 * rng.uniform(-1, 1, 300))
    kept = np.minimum(spread, np.quantile(spread, 0.8))
    moved = sum(
        abs(Fraction(float(e)) - Fraction(float(k))) for e, k in zip(exact, kept, strict=True)
    )
    assert moved <= Fraction(moved_mass(spread, kept, 2e-10))


def test_products_differences_and_column_bounds_bound_their_rounding_exactly():
    """product_up ≥ the exact product; minus within its stated error of the exact difference of
    the exact values; abs_products_bound ≥ Σ_i |a_i||x_ij| for |a_i| ≤ top·ω_i; times and ratio
    (through quotient_relative_error) within their bounds."""
    from aidopt.numerics.rounding import abs_products_bound, minus, product_up, ratio, times

    rng = np.random.default_rng(13)
    for _ in range(2000):
        factors = [float(v) for v in rng.lognormal(0.0, 20.0, int(rng.integers(1, 5)))]
        exact = Fraction(1)
        for f in factors:
            exact *= Fraction(f)
        assert Fraction(product_up(*factors)) >= exact
        a, b = (float(v) for v in rng.standard_normal(2) * 10.0 ** rng.integers(-8, 9, 2))
        ea, eb = abs(a) * 1e-15, abs(b) * 1e-15
        exact_a = Fraction(a) + Fraction(ea) * Fraction(float(rng.uniform(-1, 1)))
        exact_b = Fraction(b) + Fraction(eb) * Fraction(float(rng.uniform(-1, 1)))
        value, error = minus(a, ea, b, eb)
        assert abs(Fraction(value) - (exact_a - exact_b)) <= Fraction(error)
        value, error = times(b, a, ea)
        assert abs(Fraction(value) - Fraction(b) * exact_a) <= Fraction(error)
        if b != 0.0:
            value, relative = ratio(a, b)
            assert abs(Fraction(value) - Fraction(a) / Fraction(b)) <= Fraction(relative) * abs(
                Fraction(a) / Fraction(b)
            )
    X = rng.standard_normal((500, 3)) * np.array([1e-9, 1.0, 1e9])
    weight = rng.lognormal(0.0, 2.0, 500)
    a = rng.uniform(-0.3, 0.3, 500) * weight
    bound = abs_products_bound(X, 0.3, weight)
    for j in range(3):
        exact = sum(
            abs(Fraction(float(u))) * abs(Fraction(float(x)))
            for u, x in zip(a, X[:, j], strict=True)
        )
        assert Fraction(float(bound[j])) >= exact


def test_dual_point_on_support_keeps_the_nonzero_entries_and_expands_back():
    u = np.array([0.0, 2.5, 0.0, -1e-300, 7.0])
    point = DualPoint.on_support(u)
    np.testing.assert_array_equal(point.index, [1, 3, 4])
    assert point.by_regime is None and point.index.dtype == np.int64
    np.testing.assert_array_equal(point.expand(5, None), u)
    with pytest.raises(ValueError):
        point.expand(4, None)  # an index beyond the rows is refused
