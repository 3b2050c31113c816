"""The compiled row loops (aidopt/numerics/compiled.py): the same sums as the numpy path, the same
rounding bound for the certificate, used only where they are safe."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from fractions import Fraction

import numpy as np
import pytest

from aidopt.core import partition as partition_module
from aidopt.core.partition import label_indicator, label_sums
from aidopt.numerics import compiled
from aidopt.numerics.rounding import GAMMA, GAMMA_FOURS, accurate_tdot

pytest.importorskip("numba")


@pytest.fixture
def always_compiled(monkeypatch):
    """Inside a run that uses the kernels, for every matrix however small."""
    monkeypatch.setattr(compiled, "MIN_ENTRIES", 0)
    monkeypatch.setattr(compiled, "RUN_ENTRIES", 0)
    monkeypatch.delenv("AIDOPT_COMPILED", raising=False)
    with compiled.for_run(1):
        yield


@pytest.mark.parametrize("k", [1, 7, 5000])
@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64])
def test_label_sums_equal_the_indicator_product(always_compiled, k, dtype):
    rng = np.random.default_rng(k)
    n = 3001
    a = rng.standard_normal((n, 4)) * np.array([1e-9, 1.0, 1e3, 1e9])
    labels = rng.integers(0, min(k, 127), n).astype(dtype)
    assert compiled.kernels_for(a) is compiled
    got = label_sums(labels, a, k)
    expected = np.asarray(label_indicator(labels.astype(np.int64), k) @ a)
    assert got.shape == (k, 4)
    scale = np.asarray(label_indicator(labels.astype(np.int64), k) @ np.abs(a))
    assert np.all(np.abs(got - expected) <= 1e-13 * scale)


def test_label_sums_add_every_row_once(always_compiled):
    """Integers sum exactly in any order: each core's share and their tables add up."""
    rng = np.random.default_rng(0)
    a = rng.integers(-1000, 1000, (100_003, 3)).astype(np.float64)
    labels = rng.integers(0, 50, a.shape[0])
    expected = np.stack([np.bincount(labels, weights=c, minlength=50) for c in a.T], axis=1)
    np.testing.assert_array_equal(compiled.label_sums(labels, a, 50), expected)


def test_label_sums_with_a_vector_sum_it_in_a_last_column(always_compiled):
    """label_sums(labels, a, k, v): the sums of a, then Σ v per cluster in the same read (exact
    on integers, whatever the order); a vector of another length is refused by name."""
    rng = np.random.default_rng(3)
    a = rng.integers(-1000, 1000, (50_001, 4)).astype(np.float64)
    v = rng.integers(-1000, 1000, a.shape[0]).astype(np.float64)
    labels = rng.integers(0, 70, a.shape[0])
    got = compiled.label_sums(labels, a, 70, v)
    np.testing.assert_array_equal(got[:, :4], compiled.label_sums(labels, a, 70))
    np.testing.assert_array_equal(got[:, 4], np.bincount(labels, weights=v, minlength=70))
    with pytest.raises(ValueError, match="a vector of 3 entries beside 50001 rows"):
        compiled.label_sums(labels, a, 70, v[:3])


@pytest.mark.parametrize("layout", ["count-matrix-vector", "vector-matrix-vectors"])
def test_block_cluster_sums_put_the_fused_vector_in_its_place(monkeypatch, layout):
    """A block's cluster sums in a large run (the first vector summed in the first matrix's
    read) = the numpy path's, column for column (integer values: exact in any order)."""
    from aidopt.engine import partition as block_partition

    rng = np.random.default_rng(5)
    block = rng.integers(-100, 100, (4000, 3)).astype(np.float64)
    labels = rng.integers(0, 40, 4000)
    w, y = rng.integers(1, 5, 4000).astype(np.float64), block[:, 0] * 3.0
    if layout == "count-matrix-vector":
        columns = lambda rows: [partition_module.ROW_COUNT, rows, y]  # noqa: E731
    else:
        columns = lambda rows: [w, rows * w[:, None], w * y, y]  # noqa: E731
    plain = block_partition._cluster_sums(block, 0, labels, columns)[1]
    monkeypatch.setattr(compiled, "MIN_ENTRIES", 0)
    monkeypatch.setattr(compiled, "RUN_ENTRIES", 0)
    calls = []
    original = compiled.label_sums
    monkeypatch.setattr(
        compiled,
        "label_sums",
        lambda *a: calls.append(len(a) > 3 and a[3] is not None) or original(*a),
    )
    with compiled.for_run(1):
        fused = block_partition._cluster_sums(block, 0, labels, columns)[1]
    assert calls == [True]  # one read: the matrix with the first vector
    np.testing.assert_array_equal(fused[0], plain[0])
    np.testing.assert_array_equal(fused[1], plain[1])


def test_dual_sums_add_in_row_order(always_compiled):
    """The chunk sums of the duals' scalars (Σ u y, Σ|u y|, Σ u, Σ|u|, max|u|) are those of a
    loop over the chunk's rows in order, to the bit, and the products those of four rows per
    addition (the order the certificate's rounding bound counts); the evaluation's read of
    the rows (residual_loss, each four rows' share added beside their residuals) gives the
    same bits."""
    rng = np.random.default_rng(9)
    n, k, chunk = 1030, 17, 256
    a = rng.standard_normal((n, 3)) * np.array([1e-9, 1.0, 1e9])
    y = rng.standard_normal(n) * 1e3
    labels = rng.integers(0, k, n)
    duals = rng.uniform(-1.0, 1.0, (2, k))
    products, scalars = compiled.cluster_dual_sums(a, y, labels, duals, chunk)
    for c, start in enumerate(range(0, n, chunk)):
        stop = min(n, start + chunk)
        for d in range(2):
            total, top, row, i = [0.0] * 4, 0.0, np.zeros(3), start
            for r in range(start, stop):
                u = float(duals[d, labels[r]])
                uy = u * float(y[r])
                total = [total[0] + uy, total[1] + abs(uy), total[2] + u, total[3] + abs(u)]
                top = max(top, abs(u))
            while i + 4 <= stop:
                u0, u1, u2, u3 = duals[d, labels[i : i + 4]]
                row += (u0 * a[i] + u1 * a[i + 1]) + (u2 * a[i + 2] + u3 * a[i + 3])
                i += 4
            for r in range(i, stop):
                row += duals[d, labels[r]] * a[r]
            assert list(scalars[c, d]) == [*total, top]
            np.testing.assert_array_equal(products[c, d], row)
    beside = compiled.residual_loss(a, y, np.ones(3), 0.5, 1.0, 1.0, chunk, labels, duals)
    np.testing.assert_array_equal(beside.products, products)
    np.testing.assert_array_equal(beside.scalars, scalars)


@pytest.mark.parametrize("n", [3, 255, 256 * 2 + 255])
def test_dual_products_keep_the_rounding_bound_of_fours(always_compiled, n):
    """Σ u_i a_ij per chunk as the loops add it (four rows at a time, a short chunk's last rows
    one by one) lies within GAMMA_FOURS Σ|u_i a_ij| of the exact sum, on terms of 18 orders of
    magnitude and on terms that cancel; the certificate charges that bound, not (CHUNK + 2)ε."""
    rng = np.random.default_rng(n)
    a = rng.standard_normal((n, 3)) * np.array([1e-9, 1.0, 1e9])
    a[:, 1] = np.where(np.arange(n) % 2, 1.0, -1.0) + rng.standard_normal(n) * 1e-7
    labels = rng.integers(0, 7, n)
    duals = rng.uniform(-1.0, 1.0, (2, 7))
    products, _ = compiled.cluster_dual_sums(a, np.ones(n), labels, duals, 256)
    for c, start in enumerate(range(0, n, 256)):
        for d in range(2):
            for j in range(3):
                terms = [
                    Fraction(float(duals[d, labels[i]])) * Fraction(float(a[i, j]))
                    for i in range(start, min(n, start + 256))
                ]
                error = abs(Fraction(float(products[c, d, j])) - sum(terms))
                assert error <= Fraction(GAMMA_FOURS) * sum(abs(t) for t in terms)


@pytest.mark.parametrize("n", [1, 255, 256, 257, 256 * 40 + 3])
def test_compiled_tdot_keeps_the_certificate_bound(always_compiled, n):
    """Aᵀv with chunk sums from the compiled loop: within the stated bound of the exact value."""
    rng = np.random.default_rng(n)
    A = rng.standard_normal((n, 3)) * np.array([1e-9, 1.0, 1e9])
    A[rng.random((n, 3)) < 0.3] = 0.0
    v = rng.standard_normal(n) * rng.lognormal(0.0, 2.0, n)
    assert compiled.kernels_for(A) is compiled
    total, error = accurate_tdot(A, v)
    for j in range(3):
        exact = sum(Fraction(float(A[i, j])) * Fraction(float(v[i])) for i in range(n))
        assert abs(Fraction(float(total[j])) - exact) <= Fraction(float(error[j]))
        assert error[j] <= 1e-12 * float(np.abs(A[:, j]) @ np.abs(v)) + 1e-300
    chunks = compiled.chunk_tdot(A, v, 256)
    assert chunks.shape == (-(-n // 256), 3)
    np.testing.assert_allclose(chunks[0], A[:256].T @ v[:256], rtol=1e-12, atol=1e-300)


def test_kernels_only_where_they_are_safe(always_compiled, monkeypatch):
    a = np.ones((10, 2))
    assert compiled.kernels_for(a) is compiled
    assert compiled.kernels_for(np.asfortranarray(np.ones((10, 2)))) is None
    assert compiled.kernels_for(a.astype(np.float32)) is None
    found = []
    worker = threading.Thread(target=lambda: found.append(compiled.kernels_for(a)))
    worker.start()
    worker.join()
    assert found == [None]  # numba's threading layer is entered from the main thread only
    monkeypatch.setattr(compiled, "RUN_ENTRIES", 100)
    with compiled.for_run(99):
        assert compiled.kernels_for(a) is None  # a small run: numpy
    monkeypatch.setenv("AIDOPT_COMPILED", "0")
    with compiled.for_run(10**9):
        assert compiled.kernels_for(a) is None
    assert compiled.kernels_for(a) is compiled  # the large run the fixture is in


def test_outside_large_runs_numba_is_not_imported():
    """numba's import and loading cost ~1.5 s: a run on small data, and the sums called
    outside any run, never pay them (and give the same bits in every process)."""
    code = (
        "import sys, numpy as np\n"
        "from aidopt.core.partition import label_sums\n"
        "from aidopt.numerics.rounding import accurate_tdot\n"
        "from aidopt.core.driver import AIDSolver\n"
        "from aidopt.models.lad import LADModel\n"
        "from aidopt.data.containers import RegressionData\n"
        "a = np.random.default_rng(0).standard_normal((5000, 20))\n"
        "label_sums(np.zeros(5000, dtype=np.int64), a, 1)\n"
        "accurate_tdot(a, np.ones(5000))\n"
        "data = RegressionData(a, a.sum(axis=1) + 1.0, [f'x{j}' for j in range(20)])\n"
        "AIDSolver(LADModel()).solve(data)\n"
        "print('numba' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_a_second_process_loads_the_kernels_from_the_disk_cache():
    """numba compiles the kernels once per machine (~20 s) and every later process loads them
    from its disk cache (~1.5 s): a loop that reached a helper through a closure was compiled
    again in every process."""
    code = "from aidopt.numerics import compiled\ncompiled._compiled()\n"
    env = {**os.environ, "NUMBA_DEBUG_CACHE": "1"}
    for _ in range(2):  # the first may compile (and save); the second must only load
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
        )
    log = out.stdout + out.stderr
    assert "data loaded" in log
    assert "data saved" not in log, log


def _linear_case(name):
    """A small instance of each linear model (the kernels are forced on it)."""
    from aidopt.data.containers import (
        BinaryData,
        FeatureData,
        PositiveUnlabeledData,
        RegressionData,
    )
    from aidopt.data.lad import make_lad
    from aidopt.data.pu import make_pu
    from aidopt.data.svm import make_svm
    from aidopt.models.lad import LADModel, QuantileModel
    from aidopt.models.ocsvm import OneClassSVMModel
    from aidopt.models.pu import PUModel
    from aidopt.models.svm import SVMModel

    rng = np.random.default_rng(3)
    if name in ("lad", "lad-weighted", "quantile"):
        X, y, _, _ = make_lad(3000, 5, seed=3)
        weight = rng.uniform(0.5, 2.0, 3000) if name == "lad-weighted" else None
        model = QuantileModel(quantile=0.3) if name == "quantile" else LADModel()
        return model, RegressionData.from_arrays(X, y, weight=weight)
    if name == "svm":
        X, y = make_svm(3000, 5, seed=5, positive_fraction=0.3)
        return SVMModel(), BinaryData.from_arrays(X, np.where(y > 0, "yes", "no"))
    if name == "ocsvm":
        return OneClassSVMModel(), FeatureData.from_arrays(rng.standard_normal((3000, 5)))
    X, _, labeled, prior = make_pu(3000, 5, seed=2)
    return PUModel(prior=prior, lam=0.01), PositiveUnlabeledData.from_arrays(X, labeled)


@pytest.mark.parametrize("name", ["lad", "lad-weighted", "quantile", "svm", "ocsvm", "pu"])
@pytest.mark.parametrize("engine", ["memory", "blocks"])
def test_a_large_run_reaches_the_same_certified_optimum(monkeypatch, engine, name):
    """Each linear model by AID with the kernels serving every pass they can (forced on small
    data) = without them: the same status, the same objective."""
    from aidopt.core.driver import AIDSolver
    from aidopt.engine.blocks import MemoryBlocks

    model, data = _linear_case(name)
    runs, calls = {}, []
    original = compiled.label_sums
    monkeypatch.setattr(compiled, "label_sums", lambda *a: calls.append(1) or original(*a))
    monkeypatch.setattr(compiled, "MIN_ENTRIES", 0)
    monkeypatch.setattr(partition_module, "_BINCOUNT_ENTRIES", -1)
    for use in (False, True):
        monkeypatch.setattr(compiled, "RUN_ENTRIES", 0 if use else 1 << 62)
        rows = data if engine == "memory" else MemoryBlocks(data, 700)
        calls.clear()
        runs[use] = AIDSolver(model, tol=1e-9).solve(rows)
        assert bool(calls) == use
    assert runs[True].status == runs[False].status
    assert runs[True].status.value in ("optimal", "gap")
    assert runs[True].objective == pytest.approx(runs[False].objective, rel=1e-9)


def _exact_dot(a, b) -> Fraction:
    return sum(Fraction(float(x)) * Fraction(float(z)) for x, z in zip(a, b, strict=True))


@pytest.mark.parametrize("intercept", [True, False])
def test_cluster_bound_terms_in_one_read_keep_their_bounds(always_compiled, intercept):
    """LAD's certificate terms at u = s[labels] for two cluster duals from the compiled read:
    the exact rational values lie within the stated rounding bounds, which are those of the
    term-by-term path (bound_terms on the spread u) up to the charge for Σ|·| in chunks, except
    for Zᵀu's x columns, which the loops add four rows at a time (γ_FOURS instead of γ)."""
    from aidopt.data.containers import RegressionData
    from aidopt.models.lad import LADModel

    rng = np.random.default_rng(7)
    n, k = 1503, 40  # the last chunk: rows in fours, and three
    X = rng.standard_normal((n, 3)) * np.array([1e-9, 1.0, 1e9])
    y = rng.standard_normal(n) * 1e3
    data = RegressionData(X, y, ["a", "b", "c"])
    labels = rng.integers(0, k, n)
    duals = [rng.uniform(-1.0, 1.0, k), np.where(rng.random(k) < 0.5, 1.0, -1.0)]
    model = LADModel(fit_intercept=intercept)
    fused = model.cluster_bound_terms(data, labels, duals)
    for s, terms in zip(duals, fused, strict=True):
        u = s[labels]
        loop = model.bound_terms(data, u)
        exact_value = _exact_dot(u, y)
        assert abs(Fraction(terms.value) - exact_value) <= Fraction(terms.value_error)
        assert terms.value_error <= 1.01 * loop.value_error + 1e-300
        columns = ([np.ones(n)] if intercept else []) + list(X.T)
        for j, column in enumerate(columns):
            exact = _exact_dot(u, column)
            assert abs(Fraction(float(terms.e[j])) - exact) <= Fraction(float(terms.e_error[j]))
        # Zᵀu's x columns are added four rows at a time: charged γ_FOURS, not the loop's γ (the
        # addition of the chunk sums, charged alike, is ~1e-4 of either)
        first = int(intercept)
        np.testing.assert_allclose(terms.e_error[:first], loop.e_error[:first], rtol=1e-6)
        ratio = terms.e_error[first:] / loop.e_error[first:]
        np.testing.assert_allclose(ratio, GAMMA_FOURS / GAMMA, rtol=1e-3)
        assert terms.norm_y_squared == loop.norm_y_squared
        assert (terms.w_min, terms.n) == (loop.w_min, loop.n)


def test_a_run_sums_abs_x_in_its_first_evaluation_only(always_compiled, monkeypatch):
    """Within a run, the first compiled evaluation of a block also sums |x_ij| (for the
    residuals' error bound) and remembers it; later ones skip those sums and give the same
    objective, error bound and regimes."""
    from aidopt.data.containers import RegressionData
    from aidopt.models.lad import LADModel, LADSolution
    from aidopt.numerics.rounding import abs_column_sums, abs_column_sums_known, data_sums_cached

    rng = np.random.default_rng(16)
    X = rng.standard_normal((1003, 4)) * np.array([1e-9, 1.0, 1e3, 1e9])
    data = RegressionData(X, rng.standard_normal(1003), list("abcd"))
    solution = LADSolution(rng.standard_normal(4), 0.5)
    asked = []
    residual_loss = compiled.residual_loss

    def recorded(*args, **options):
        asked.append(options["abs_sums"])
        return residual_loss(*args, **options)

    monkeypatch.setattr(compiled, "residual_loss", recorded)
    model = LADModel()
    with data_sums_cached():
        first = model.evaluate_rows(data, solution, 0, data)
        assert abs_column_sums_known(data.X)
        second = model.evaluate_rows(data, solution, 0, data)
        remembered = abs_column_sums(data.X)
    assert asked == [True, False]
    assert (first.objective, first.objective_error) == (second.objective, second.objective_error)
    np.testing.assert_array_equal(first.regime, second.regime)
    exact = [sum(Fraction(abs(float(v))) for v in column) for column in X.T]
    assert all(Fraction(float(r)) >= e for r, e in zip(remembered, exact, strict=True))


@pytest.mark.parametrize("intercept", [True, False])
def test_evaluation_and_terms_in_one_read_equal_the_two_reads(always_compiled, intercept):
    """evaluate_and_bound_rows (the residuals, the loss and both duals' chunk sums in one
    compiled read) =
    evaluate_rows then cluster_bound_terms: the same regimes, band, objective and certificate
    terms, to the bit; the exact rational Zᵀu within the stated bounds."""
    from aidopt.data.containers import RegressionData
    from aidopt.models.lad import LADModel, LADSolution

    rng = np.random.default_rng(12)
    n, k = 1703, 30  # the last chunk: rows in fours, and three
    X = rng.standard_normal((n, 3)) * np.array([1e-9, 1.0, 1e9])
    coef = rng.standard_normal(3) / np.array([1e-9, 1.0, 1e9])
    y = X @ coef + rng.laplace(size=n)
    data = RegressionData(X, y, ["a", "b", "c"])
    labels = rng.integers(0, k, n)
    duals = np.vstack([rng.uniform(-1.0, 1.0, k), np.where(rng.random(k) < 0.5, 1.0, -1.0)])
    model = LADModel(fit_intercept=intercept)
    solution = LADSolution(coef * (1 + 1e-6), 0.25 if intercept else 0.0)
    fused, fused_terms = model.evaluate_and_bound_rows(data, solution, 900, data, labels, duals)
    alone = model.evaluate_rows(data, solution, 900, data)
    alone_terms = model.cluster_bound_terms(data, labels, duals)
    np.testing.assert_array_equal(fused.regime, alone.regime)
    np.testing.assert_array_equal(fused.split_regime, alone.split_regime)
    assert (fused.objective, fused.objective_error) == (alone.objective, alone.objective_error)
    columns = ([np.ones(n)] if intercept else []) + list(X.T)
    for s, got, expected in zip(duals, fused_terms, alone_terms, strict=True):
        assert (got.value, got.value_error) == (expected.value, expected.value_error)
        np.testing.assert_array_equal(got.e, expected.e)
        np.testing.assert_allclose(got.e_error, expected.e_error, rtol=1e-12)
        u = s[labels]
        for j, column in enumerate(columns):
            exact = _exact_dot(u, column)
            assert abs(Fraction(float(got.e[j])) - exact) <= Fraction(float(got.e_error[j]))


def test_residual_bins_count_the_edges_below(always_compiled):
    """C^0's bins in the compiled read = searchsorted (side 'left') for 0, 1, 2 and 83 edges,
    residuals equal to an edge included (β = 0: the residuals are y exactly)."""
    rng = np.random.default_rng(13)
    n = 4003  # rows in fours, and three
    X = rng.standard_normal((n, 2))
    y = np.round(rng.laplace(size=n), 1)
    for size in (0, 1, 2, 83):
        edges = np.sort(rng.choice(np.unique(y), size, replace=False))
        labels = compiled.residual_bins(
            X, y, np.zeros(2), 0.0, edges, (np.inf, np.inf), np.zeros(0), 0
        )
        np.testing.assert_array_equal(labels, np.searchsorted(edges, y))


def test_residual_bins_rule_labels_a_block_alike_in_numpy_and_compiled(monkeypatch):
    """core/clustering.ResidualBins: bins below LAD's band, bins above it, a singleton
    2·bins + offset + i inside it — the numpy path and the compiled one-read path agree."""
    from aidopt.core.clustering import ResidualBins

    rng = np.random.default_rng(21)
    X = rng.standard_normal((3001, 4))
    coef, intercept = rng.standard_normal(4), 0.3
    y = X @ coef + intercept + rng.laplace(size=3001)
    r = y - X @ coef - intercept

    def cuts(*q):  # between residuals: the two paths' roundings of r do not cross a cut
        return np.quantile(r, q) + 1e-7

    low, high = cuts(0.45, 0.55)
    rule = ResidualBins(coef, intercept, cuts(0.1, 0.3), (low, high), cuts(0.7, 0.9))
    in_numpy = rule.labels(X, y, 7)
    inside = (r >= low) & (r <= high)
    bins = 3
    np.testing.assert_array_equal(in_numpy[inside], 2 * bins + 7 + np.flatnonzero(inside))
    np.testing.assert_array_equal(in_numpy[r < low], np.searchsorted(rule.edges, r[r < low]))
    monkeypatch.setattr(compiled, "MIN_ENTRIES", 0)
    monkeypatch.setattr(compiled, "RUN_ENTRIES", 0)
    monkeypatch.delenv("AIDOPT_COMPILED", raising=False)
    with compiled.for_run(1):
        assert compiled.kernels_for(X) is not None
        np.testing.assert_array_equal(rule.labels(X, y, 7), in_numpy)


# 10 edges on [−3, 5] (a grid of 8 · 10 + 1 cells starting at −3 + c · 8/81): 8 of them one
# float below a cell's start, where the value's cell rounds up past the edge equal to it
_EDGES_BELOW_CELL_STARTS = np.array(
    [-3.0, *np.nextafter(-3.0 + np.arange(21, 50, 4) / (81 / 8.0), -np.inf), 5.0]
)


@pytest.mark.parametrize(
    "edges",
    [
        np.quantile(np.random.default_rng(5).standard_cauchy(5000), np.arange(1, 80) / 80),
        np.array([-1.0, -1.0, -1.0, 0.0, 0.0, 2.5, 2.5]),  # repeated edges
        np.array([1e-300, 2e-300, 3e-300]),  # a span whose grid scale overflows
        np.array([-1e300, -1.0, 0.0, 1e300]),  # a span that does not fit a double
        np.array([-np.inf, 0.0, np.inf]),
        np.array([7.0, 7.0]),  # an empty span
        _EDGES_BELOW_CELL_STARTS,
    ],
)
def test_residual_bins_search_from_the_grid_is_exact(always_compiled, edges):
    """The search started from the grid's count (residual_bins' fast path) = searchsorted for
    edges spread unlike the values, repeated, tiny, huge and infinite, on both sides of the
    band, values on the edges, ±inf and the cells' ends among them."""
    rng = np.random.default_rng(14)
    span = edges[np.isfinite(edges)]
    values = np.concatenate(
        [
            rng.choice(edges, 200),
            np.nextafter(rng.choice(edges, 200), np.inf),
            np.nextafter(rng.choice(edges, 200), -np.inf),
            rng.uniform(span.min(initial=-1.0), span.max(initial=1.0), 400)
            if np.isfinite(span.max(initial=0.0) - span.min(initial=0.0))
            else rng.standard_normal(400),
            rng.standard_cauchy(400) * 10.0 ** rng.integers(-300, 300, 400),
            [-np.inf, np.inf, 0.0, -0.0],
            np.linspace(span.min(), span.max(), 8 * edges.size + 1),  # the cells' starts
        ]
    )
    values = values[~np.isnan(values)]
    X = np.zeros((values.size, 1))
    below = compiled.residual_bins(
        X, values, np.zeros(1), 0.0, edges, (np.inf, np.inf), np.zeros(0), 0
    )
    binned = values < np.inf  # r = +inf lies in the band [inf, inf]: a singleton
    np.testing.assert_array_equal(below[binned], np.searchsorted(edges, values[binned]))
    above = compiled.residual_bins(
        X, values, np.zeros(1), 0.0, np.zeros(0), (-np.inf, -np.inf), edges, 0
    )
    binned = values > -np.inf
    np.testing.assert_array_equal(above[binned], 1 + np.searchsorted(edges, values[binned]))


def test_residuals_in_fours_are_the_row_loop_to_the_bit(always_compiled):
    """residual_loss and residual_bins sum four rows at a time; each r_i is still
    (y_i − Σ_j x_ij β_j, added in column order) − β₀, as a plain loop over one row gives."""
    rng = np.random.default_rng(15)
    n, p = 1031, 5  # chunks of 256 rows: fours, and three rows left
    X = rng.standard_normal((n, p)) * 10.0 ** rng.integers(-9, 10, p)
    y = rng.standard_normal(n) * 1e3
    coef, intercept = rng.standard_normal(p) / 10.0 ** rng.integers(-9, 10, p), 0.37
    expected = np.empty(n)
    for i in range(n):
        fit = 0.0
        for j in range(p):
            fit += float(X[i, j]) * float(coef[j])
        expected[i] = (float(y[i]) - fit) - intercept
    found = compiled.residual_loss(X, y, coef, intercept, 1.0, 1.0, 256)
    np.testing.assert_array_equal(found.size, np.abs(expected))
    np.testing.assert_array_equal(found.positive, expected > 0)
    band = compiled.residual_bins(X, y, coef, intercept, np.zeros(0), (-np.inf, np.inf), [], 0)
    np.testing.assert_array_equal(band, 2 + np.arange(n))  # every row inside the band
    signs = compiled.residual_bins(X, y, coef, intercept, np.zeros(1), (np.inf, np.inf), [], 0)
    np.testing.assert_array_equal(signs, (expected > 0).astype(np.int64))


@pytest.mark.parametrize("costs", [(1.0, 1.0), (0.3, 0.7)])
def test_compiled_residuals_and_loss_keep_the_evaluation(always_compiled, monkeypatch, costs):
    """LAD / quantile evaluation through the compiled residual pass: the same regimes and band
    as numpy, and the exact rational objective within the stated rounding bound."""
    from aidopt.data.containers import RegressionData
    from aidopt.models.lad import LADModel, LADSolution

    rng = np.random.default_rng(11)
    n = 2003  # the last chunk's rows in fours, and three
    X = rng.standard_normal((n, 4)) * np.array([1e-9, 1.0, 1e3, 1e9])
    coef = rng.standard_normal(4) / np.array([1e-9, 1.0, 1e3, 1e9])
    y = X @ coef + rng.laplace(size=n)
    data = RegressionData(X, y, list("abcd"))
    model = LADModel()
    model.costs = lambda: costs  # the check loss of a quantile, c⁺ ≠ c⁻
    solution = LADSolution(coef * (1 + 1e-6), 0.25)
    fast = model.evaluate_rows(data, solution, 0, data)
    monkeypatch.setattr(compiled, "RUN_ENTRIES", 1)
    with compiled.for_run(0):
        assert compiled.kernels_for(X) is None
        slow = model.evaluate_rows(data, solution, 0, data)
    np.testing.assert_array_equal(fast.regime, slow.regime)
    np.testing.assert_array_equal(fast.split_regime, slow.split_regime)
    assert fast.objective == pytest.approx(slow.objective, rel=1e-12)
    c_plus, c_minus = (Fraction(c) for c in costs)
    exact = Fraction(0)
    for i in range(n):  # the objective at the rounded residuals the regimes came from
        r = Fraction(float(y[i])) - Fraction(0.25)
        r -= sum(Fraction(float(X[i, j])) * Fraction(float(solution.coef[j])) for j in range(4))
        exact += c_plus * r if r > 0 else -c_minus * r
    assert abs(Fraction(fast.objective) - exact) <= Fraction(float(fast.objective_error))
    assert abs(Fraction(slow.objective) - exact) <= Fraction(float(slow.objective_error))


@pytest.mark.parametrize("init", ["band", "bins"])
def test_initial_labels_in_one_read_equal_numpy(always_compiled, monkeypatch, init):
    """LAD's C^0 labels of a block (residual bins, the band's singletons numbered from the
    block's offset) from the compiled read = numpy's, ties with the edges included."""
    from aidopt.data.containers import RegressionData
    from aidopt.models.lad import LADModel

    rng = np.random.default_rng(8)
    n = 5000
    X = rng.standard_normal((n, 3))
    y = X @ np.array([1.0, -2.0, 0.5]) + np.round(rng.laplace(size=n), 1)  # many ties
    data = RegressionData(X, y, list("abc"))
    model = LADModel(init=init)
    rule = model.initial_rule(data, data, 0.05)
    fast = model.initial_labels(data, 700, rule)
    monkeypatch.setattr(compiled, "RUN_ENTRIES", 1)
    with compiled.for_run(0):
        slow = model.initial_labels(data, 700, rule)
    np.testing.assert_array_equal(fast, slow)
    assert len(np.unique(fast)) > 10


def test_abs_column_sums_bound_the_exact_sums(always_compiled):
    from aidopt.numerics.rounding import abs_column_sums

    rng = np.random.default_rng(2)
    A = rng.standard_normal((3001, 3)) * np.array([1e-9, 1.0, 1e9])
    got = abs_column_sums(A)
    for j in range(3):
        exact = sum(Fraction(abs(float(v))) for v in A[:, j])
        assert exact <= Fraction(float(got[j])) <= exact * (1 + Fraction(1, 10**12))


def test_compensated_chunk_sums_keep_their_stated_error(always_compiled, monkeypatch):
    """Chunk sums added by the compiled Sum2 (a large run) instead of exactly: the exact sum of
    the chunk sums lies within the stated allowance, for columns of wildly mixed magnitudes
    and heavy cancellation."""
    from aidopt.numerics.rounding import added_chunk_sums

    rng = np.random.default_rng(4)
    rows = rng.standard_normal((6000, 3)) * 10.0 ** rng.integers(-12, 12, (6000, 3))
    rows[:, 2] -= rows[:, 2].mean()  # cancellation
    total, allowance = added_chunk_sums(rows)
    monkeypatch.setattr(compiled, "RUN_ENTRIES", 1)
    with compiled.for_run(0):  # outside a large run: exactly, by fsum
        exact_total, exact_allowance = added_chunk_sums(rows)
    for j in range(3):
        exact = sum(Fraction(float(v)) for v in rows[:, j])
        assert abs(Fraction(float(total[j])) - exact) <= Fraction(float(allowance[j]))
        assert abs(Fraction(float(exact_total[j])) - exact) <= Fraction(float(exact_allowance[j]))
    assert np.all(allowance <= 1e-12 * np.abs(rows).sum(axis=0))


def test_preload_only_for_large_files(monkeypatch, tmp_path):
    started = []
    monkeypatch.setattr(compiled, "preload", lambda: started.append(1))
    small = tmp_path / "small.csv"
    small.write_text("x,y\n1,2\n")
    compiled.preload_for_file(small)
    compiled.preload_for_file(tmp_path / "missing.csv")  # the reader will say what is wrong
    assert started == []
    monkeypatch.setattr(compiled, "RUN_ENTRIES", 1)
    compiled.preload_for_file(tmp_path)  # a directory: the files under it
    assert started == [1]


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64])
def test_renumbered_labels_equal_unique(always_compiled, dtype):
    """A block's labels numbered by the compiled loop = np.unique's sorted values, counts and
    inverse, and the engine's cluster sums use it inside a large run (ROW_COUNT: the counts)."""
    from aidopt.engine import partition as block_partition

    rng = np.random.default_rng(14)
    labels = rng.choice(np.array([0, 5, 6, 90, 127]), 3000).astype(dtype)
    present, counts, inverse = compiled.renumbered(labels)
    values, expected, sizes = np.unique(labels, return_inverse=True, return_counts=True)
    np.testing.assert_array_equal(present, values)
    np.testing.assert_array_equal(counts, sizes)
    np.testing.assert_array_equal(inverse, expected)
    a = rng.standard_normal((3000, 3))
    columns = lambda block: [partition_module.ROW_COUNT, block[:, 0], block]  # noqa: E731
    found, sums = block_partition._cluster_sums(a, 0, labels, columns)[1]
    np.testing.assert_array_equal(found, values)
    np.testing.assert_array_equal(sums[:, 0], sizes)
    np.testing.assert_allclose(sums[:, 2:], np.asarray(label_indicator(expected, 5) @ a))
    with pytest.raises(ValueError, match="non-negative"):
        compiled.renumbered(np.array([3, -1]))


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.int16])
def test_labels_outside_the_table_are_refused(always_compiled, dtype):
    """The loops count the rows whose label falls outside the table and skip them; the
    wrappers refuse the result (whatever the labels' integer type, row 0 or a later row)."""
    a = np.ones((600, 2))
    for bad in (0, 3, 599):
        labels = np.zeros(600, dtype=dtype)
        labels[bad] = 3
        with pytest.raises(ValueError, match=r"labels must lie in \[0, 3\)"):
            compiled.label_sums(labels, a, 3)
        labels[bad] = -1
        with pytest.raises(ValueError, match="labels must lie"):
            compiled.cluster_dual_sums(a, np.ones(600), labels, np.ones((1, 4)), 256)
        with pytest.raises(ValueError, match=r"labels must lie in \[0, 4\)"):
            compiled.residual_loss(
                a, np.ones(600), np.ones(2), 0.0, 1.0, 1.0, 256, labels, np.ones((2, 4))
            )
        with pytest.raises(ValueError, match="non-negative and below 3"):
            compiled.renumbered(labels, 3)
    with pytest.raises(ValueError, match="labels for 600 rows"):
        compiled.residual_loss(
            a,
            np.ones(600),
            np.ones(2),
            0.0,
            1.0,
            1.0,
            256,
            np.zeros(599, dtype=dtype),
            np.ones((1, 4)),
        )
    with pytest.raises(ValueError, match="below 3"):
        compiled.renumbered(np.array([0, 2**31], dtype=np.int64), 3)


def test_int32_labels_are_read_as_they_are(always_compiled, monkeypatch):
    """The blocks' int32 labels reach the loops without a copy, with the sums of intp labels."""
    rng = np.random.default_rng(5)
    labels = rng.integers(0, 40, 3000).astype(np.int32)
    a, y = rng.standard_normal((3000, 4)), rng.standard_normal(3000)
    duals = rng.standard_normal((2, 40))
    assert compiled._indices(labels) is labels
    wide = labels.astype(np.intp)
    np.testing.assert_array_equal(
        compiled.label_sums(labels, a, 40, y), compiled.label_sums(wide, a, 40, y)
    )
    for got, expected in zip(
        compiled.residual_loss(a, y, np.ones(4), 0.5, 1.0, 1.0, 256, labels, duals),
        compiled.residual_loss(a, y, np.ones(4), 0.5, 1.0, 1.0, 256, wide, duals),
        strict=True,
    ):
        np.testing.assert_array_equal(got, expected)


def test_block_cluster_sums_with_the_cluster_count_as_the_table(always_compiled):
    """The engine's cluster sums numbered over a table of K (the partition's cluster count) =
    over the block's largest label + 1."""
    from aidopt.engine import partition as block_partition

    rng = np.random.default_rng(8)
    labels = rng.choice(np.array([2, 9, 40]), 5000).astype(np.int32)
    a = rng.standard_normal((5000, 3))
    columns = lambda block: [partition_module.ROW_COUNT, block, block[:, 1]]  # noqa: E731
    found, sums = block_partition._cluster_sums(a, 0, labels, columns)[1]
    found_k, sums_k = block_partition._cluster_sums(a, 0, labels, columns, 1000)[1]
    np.testing.assert_array_equal(found, [2, 9, 40])
    np.testing.assert_array_equal(found_k, found)
    np.testing.assert_array_equal(sums_k, sums)


def test_label_sums_over_given_rows_and_the_kept_rows(always_compiled):
    """label_sums(rows=…) = label_sums of those rows copied out; kept_rows = the rows whose
    label is kept, in order; labels outside the tables and rows outside a are refused."""
    rng = np.random.default_rng(21)
    labels = rng.integers(0, 30, 4000).astype(np.int32)
    a, v = rng.standard_normal((4000, 3)), rng.standard_normal(4000)
    keep = np.zeros(30, dtype=bool)
    keep[[2, 17, 29, 5]] = True
    rows = compiled.kept_rows(labels, keep)
    np.testing.assert_array_equal(rows, np.flatnonzero(keep[labels]))
    for k_labels in (labels[rows], labels[rows].astype(np.int64)):
        np.testing.assert_array_equal(
            compiled.label_sums(k_labels, a, 30, v, rows),
            compiled.label_sums(k_labels, a[rows], 30, v[rows]),
        )
    with pytest.raises(ValueError, match="labels for"):
        compiled.label_sums(labels, a, 30, v, rows)
    with pytest.raises(ValueError, match=r"row indices must lie in \[0, 4000\)"):
        compiled.label_sums(labels[:2], a, 30, v, np.array([0, 4000]))
    labels[7], labels[3999] = 30, -1
    with pytest.raises(ValueError, match=r"labels must lie in \[0, 30\).*\(2 row\(s\) outside\)"):
        compiled.kept_rows(labels, keep)


@pytest.mark.parametrize("intercept", [True, False])
def test_lad_evaluation_sums_the_certificate_in_the_same_read(always_compiled, intercept):
    """Given the aggregate of the solution's clusters (as the driver gives it), LAD's
    evaluation sums the certificate's terms in its own compiled read: the same objective and
    regimes, and the same bound to the bit, as the evaluation and the bound's own read one after
    the other. Without it, or with the aggregate of another partition, the evaluation gets no
    terms: the bound sums its own."""
    import dataclasses

    from aidopt.core.partition import Partition
    from aidopt.data.containers import RegressionData
    from aidopt.models.lad import LADModel, LADSolution

    rng = np.random.default_rng(21)
    n, k = 2003, 37
    X = rng.standard_normal((n, 3)) * np.array([1e-9, 1.0, 1e9])
    data = RegressionData(X, rng.standard_normal(n) * 1e3, list("abc"))
    model = LADModel(fit_intercept=intercept)
    partition = Partition.from_labels(rng.integers(0, k, n))
    agg = model.aggregate(data, partition)
    coef, dual = rng.standard_normal(3) * np.array([1e6, 1.0, 1e-6]), rng.uniform(-1, 1, k)
    solution = LADSolution(coef, 0.3 * intercept, partition, dual)

    fused = model.evaluate(data, solution, aggregate=agg)
    assert fused.bound_terms is not None
    alone = model.evaluate_rows(data, solution, 0, data)
    assert (fused.objective, fused.objective_error) == (alone.objective, alone.objective_error)
    np.testing.assert_array_equal(fused.regime, alone.regime)
    upper = fused.objective + fused.objective_error
    with_terms = model.lower_bound(data, solution, fused, upper)
    without = model.lower_bound(data, solution, dataclasses.replace(fused, bound_terms=None), upper)
    assert with_terms is not None and without is not None
    assert (with_terms.value, with_terms.source) == (without.value, without.source)

    assert model.evaluate(data, solution).bound_terms is None
    other = dataclasses.replace(solution, partition=Partition.from_labels(partition.labels))
    assert model.evaluate(data, other, aggregate=agg).bound_terms is None
