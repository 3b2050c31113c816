"""The rounding helpers behind the weighted certificates: the weighted sum's error bound holds
against exact rational arithmetic, and the rounded-down box lies inside the exact one."""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from aidopt.certificate import EPS, accurate_sum, accurate_weighted_sum, dual_box


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
