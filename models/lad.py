"""Least-absolute-deviation (and quantile) regression under AID (Park & Klabjan 2016, §3.1).

Original problem (2), with an optional intercept β₀ (a column of ones):

    E* = min_{β₀, β}  Σ_{i∈I} |y_i − β₀ − x_i β|

Aggregated data: x̄_k = mean_{i∈C_k} x_i, ȳ_k = mean_{i∈C_k} y_i, weight |C_k|.
Aggregated problem (3), as an LP with the deviation split e_k = e⁺_k − e⁻_k:

    F^t = min  Σ_{k∈K^t} |C_k| (e⁺_k + e⁻_k)
          s.t. ȳ_k − β₀ − x̄_k β = e⁺_k − e⁻_k,   e⁺_k, e⁻_k ≥ 0      k ∈ K^t

Upper bound (4): E^t = Σ_i |y_i − β̄₀ − x_i β̄| at the aggregated optimum.
Declustering (Prop. 1): regime_i = 1 if r_i = y_i − β̄₀ − x_i β̄ > 0 else 0; a cluster is pure
when its residuals share a regime, and when every cluster is pure E^t = F^t = E*.
Lower bound (Prop. 2): F^{t−1} ≤ F^t ≤ E*.

Quantile regression (:class:`QuantileModel`) replaces |r| by the check loss
ρ_τ(r) = τ r⁺ + (1 − τ) r⁻, i.e. the costs (c⁺, c⁻) = (1, 1) of e⁺, e⁻ above by (τ, 1 − τ).
ρ_τ is linear on r > 0 and on r ≤ 0, so on a sign-pure cluster Σ_{i∈C_k} ρ_τ(r_i) =
|C_k| ρ_τ(r̄_k) (Prop. 1 unchanged), and ρ_τ is convex, so Jensen's inequality keeps F^t a
non-decreasing lower bound (Prop. 2 unchanged): AID applies with the same regimes.

Row weights w_i > 0 (``data.weight``, scikit-learn's ``sample_weight``) make the loss
Σ_i w_i ρ_τ(r_i): the aggregated data become the weighted means x̄_k = Σ w_i x_i / W_k,
ȳ_k = Σ w_i y_i / W_k with weight W_k = Σ_{C_k} w_i (a pure cluster's loss is W_k ρ_τ(r̄_k),
Jensen as before), and the dual box of entry i is w_i [−c⁻, c⁺].

Matrix form (the fast path): the LP dual of (3), with one column per cluster and one row per
coefficient, which HiGHS' simplex solves an order of magnitude faster than (3) itself:

    max  Σ_k t_k s_k   s.t.  Σ_k S_k s_k = 0,   −c⁻ ≤ s_k ≤ c⁺,
    S_k = Σ_{i∈C_k} (1, x_i),  t_k = Σ_{i∈C_k} y_i;

β = −(row duals) is an optimal solution of (3), and t·s at any feasible s is a lower bound on
F^t (weak duality). When clusters split, s_child = s_parent stays feasible (S_k = Σ S_child), so
the previous simplex basis, mapped to the children, warm-starts the next solve.

Structure: (3) is the weighted quantile regression min Σ_k |C_k| ρ_τ(ȳ_k − z̄_k β),
z̄_k = (1, x̄_k), τ = c⁺/(c⁺ + c⁻), times c⁺ + c⁻ (= 2 for LAD) — what Frisch–Newton (``fn``,
the measured fastest) solves. Its LP multipliers d_k give s_k = (c⁺ + c⁻) d_k / |C_k|; a child c
of a split cluster k starts from d_c = d_k |C_c| / |C_k|, which keeps Z̄ᵀd exact.

Certificate (``lower_bound``): weak duality of the LP (2) at the aggregated dual spread over the
entries, or at the dual complementary slackness gives the primal (the better of the two).
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from aidopt.common.lazy import dense, issparse

if TYPE_CHECKING:
    pass

from aidopt.common.options import Option
from aidopt.common.validation import check_predict_input
from aidopt.core.certificate import Bound, DualPoint, best_with_dual, repair_equalities
from aidopt.core.clustering import kmeans_one_pass, n_clusters_for_rate
from aidopt.core.contract import AggregatedModel, BlockPass, Evaluation, Previous
from aidopt.core.linear_score import Aggregate
from aidopt.core.partition import ROW_COUNT, Partition
from aidopt.core.sample_fits import quantile_fit
from aidopt.data.containers import RegressionData
from aidopt.data.lad import GENERATOR
from aidopt.exceptions import DataError, DataWarning, InvalidParameterError
from aidopt.numerics import compiled
from aidopt.numerics.rounding import (
    CHUNK,
    EPS,
    GAMMA,
    GAMMA_FOURS,
    abs_column_sums,
    abs_column_sums_from,
    abs_column_sums_known,
    accurate_sum,
    accurate_tdot,
    added_blocks,
    added_chunk_sums,
    safe_min_eigenvalue,
    vector_sums,
    weighted_below,
)
from aidopt.solvers.algebra import Problem, Values
from aidopt.solvers.base import SolveResult
from aidopt.solvers.program import (
    BASIS_BASIC,
    BASIS_LOWER,
    BASIS_UPPER,
    MatrixProgram,
    ProblemClass,
)
from aidopt.solvers.structures import QuantileFit, WeightedQuantileRegression

__all__ = ["LADAggregate", "LADData", "LADModel", "LADSolution", "QuantileModel"]

LADData = RegressionData  # the data LAD takes: X (n × m), y (n,), row weights w (optional)


def _cluster_sums(data: LADData, part: Partition) -> tuple[NDArray, NDArray, NDArray]:
    """(W_k, Σ_{C_k} w_i x_i, Σ_{C_k} w_i y_i) per cluster, w_i = 1 for unweighted data: a
    pure cluster's weighted loss Σ w_i ρ(r_i) is W_k ρ(ȳ_k − z̄_k β) at the weighted means."""
    # a sparse X stays sparse: only its cluster sums (the aggregated data) are dense
    return part.weights(data.weight), part.dense_sums(data.weighted_X), part.sums(data.weighted_y)


@dataclass(frozen=True, eq=False)
class LADAggregate(Aggregate):
    """Aggregated data (:class:`aidopt.core.linear_score.Aggregate`: cluster sums of x and y,
    weights |C_k|, centroids x̄, ȳ), and the design matrix of the centroids."""

    def design(self, intercept: bool) -> NDArray[np.float64]:
        """Z̄ = (1, x̄_k) per row (x̄ alone without intercept), built without temporaries."""
        K, m = self.x_sum.shape
        Z = np.empty((K, m + int(intercept)))
        if intercept:
            Z[:, 0] = 1.0
        np.divide(self.x_sum, self.weight[:, None], out=Z[:, int(intercept) :])
        return Z


@dataclass(frozen=True)
class LADSolution:
    """Coefficients β (m,) and intercept β₀ (0.0 when not fitted).

    ``cluster_dual`` is the solver's dual s_k ∈ [−c⁻, c⁺] of the aggregated LP per cluster of
    ``partition`` (the multiplier of cluster k's residual row), when the route gives one.
    """

    coef: NDArray[np.float64]
    intercept: float
    partition: Partition | None = field(default=None, repr=False, compare=False)
    cluster_dual: NDArray[np.float64] | None = field(default=None, repr=False, compare=False)

    def predict(self, X: ArrayLike) -> NDArray[np.float64]:
        X = check_predict_input(X, self.coef.shape[0], type(self).__name__, accept_sparse=True)
        return np.asarray(X @ self.coef).ravel() + self.intercept


@dataclass(frozen=True, eq=False)
class _BoundRead:
    """The certificate's terms at each candidate dual of ``solution``, summed in the read of
    the rows that evaluated it (:meth:`LADModel.evaluate`), with the aggregated Gram."""

    solution: LADSolution
    candidates: list[tuple[NDArray[np.float64], str]]
    gram: NDArray[np.float64]
    terms: list[BoundTerms]


@dataclass(frozen=True, eq=False)
class ResidualBins:
    """C^0 for rows in blocks (:meth:`LADModel.initial_rule`): the sample fit (β, β₀), the
    residual edges of the bins below the band (all bins for 'bins'), and for 'band' the band
    [low, high] of singletons and the edges of the bins above it."""

    coef: NDArray[np.float64]
    intercept: float
    edges: NDArray[np.float64]
    band: tuple[float, float] | None = None
    above: NDArray[np.float64] | None = None


@dataclass(frozen=True)
class BoundTerms:
    """Row sums of the certificate at u (:meth:`LADModel.bound_terms`); blocks of rows add."""

    value: float  # uᵀy
    value_error: float  # a bound on its rounding error
    e: NDArray[np.float64]  # Zᵀu (p,)
    e_error: NDArray[np.float64]  # a bound on its rounding error per coefficient
    norm_y_squared: float  # ‖W½y‖₂² (in floating point)
    w_min: float  # min w_i (1 unweighted)
    n: int  # rows summed

    @classmethod
    def total(cls, blocks: list[BoundTerms]) -> BoundTerms:
        """The terms of the union of the blocks (:func:`aidopt.numerics.rounding.added_blocks`)."""
        value, value_error = added_blocks(
            [b.value for b in blocks], [b.value_error for b in blocks]
        )
        e, e_error = added_blocks([b.e for b in blocks], [b.e_error for b in blocks])
        return cls(
            value,
            value_error,
            e,
            e_error,
            math.fsum(b.norm_y_squared for b in blocks),
            min(b.w_min for b in blocks),
            sum(b.n for b in blocks),
        )


_POLICY = (
    Option(
        "init",
        "band",
        "initial clusters: 'band' (singletons near a sample fit, 2·bins·p rank clusters "
        "around), 'kmeans' (the paper: one k-means pass on (r, y)), 'kmeans-r', 'bins'",
        kind=str,
        choices=("band", "kmeans", "kmeans-r", "bins"),
    ),
    Option(
        "sample_fit",
        "fn",
        "the sample fit that places C^0: a quantile fit ('fn') or least squares ('lstsq')",
        kind=str,
        choices=("fn", "lstsq"),
    ),
    Option(
        "split",
        "band",
        "declustering: 'band' (sign × magnitude), 'sign' (Prop. 1), 'minority'",
        kind=str,
        choices=("band", "sign", "minority"),
    ),
    Option(
        "warm_start",
        "inherit",
        "warm starts of the next solve: 'inherit', 'regime' (basis mapped by sign), 'none'",
        kind=str,
        choices=("inherit", "regime", "none"),
    ),
    Option("band", 0.8, "singletons near the fit, × the sample size", low=0.0),
    Option("minority", 0.05, "'minority' split: share of a cluster", low=0.0, high=1.0),
    Option("bins", 4, "rank clusters per coefficient on each side of the band", kind=int, low=1),
    Option(
        "sfac", None, "sample size factor (None: 1.5 for p ≤ 20, else 1)", low=0.0, allow_none=True
    ),
)


class LADModel(AggregatedModel[LADData, LADAggregate, LADSolution], BlockPass):
    """Least absolute deviations regression (2)/(3): min Σ_i |y_i − β₀ − x_i β|.

    ``fit_intercept`` adds β₀ (a column of ones). The policy options (measured in docs/lad.md;
    every choice keeps the certificate) decide the initial clusters, the sample fit that places
    them (sample of max(20p, sfac · n^{2/3} p^{1/2}) entries, Portnoy & Koenker's size), the
    declustering (sign × magnitude: impure clusters split by sign, their entries with |r| in the
    band of the ``band`` · sample-size smallest |r| become singletons) and the warm starts.
    """

    name: ClassVar[str] = "lad"
    problem_class: ClassVar[ProblemClass] = ProblemClass.LP
    data_type: ClassVar[type] = RegressionData
    structures: ClassVar[tuple[type, ...]] = (WeightedQuantileRegression,)
    default_solver: ClassVar[str] = "fn"  # measured faster than HiGHS simplex/IPM (docs/lad.md)
    supports_weights: ClassVar[bool] = True
    citation: ClassVar[str] = "Park & Klabjan (2016), §3.1, problems (2)-(4), Props. 1-2"
    generator: ClassVar[Any] = GENERATOR
    options: ClassVar[tuple[Option, ...]] = (
        Option("fit_intercept", True, "fit the intercept β₀", kind=bool, negate="--no-intercept"),
        *_POLICY,
    )
    init: str
    sample_fit: str
    split: str
    warm_start: str
    band: float
    minority: float
    bins: int
    sfac: float | None
    fit_intercept: bool
    cli_extras: ClassVar[tuple[Option, ...]] = (
        Option(
            "quantile",
            None,
            "quantile level τ: quantile regression Σ ρ_τ(r) instead of Σ |r|",
            low=0.0,
            high=1.0,
            allow_none=True,
        ),
    )

    @classmethod
    def from_options(cls, quantile: float | None = None, **values: Any) -> LADModel:
        """LAD, or quantile regression at level τ when ``quantile`` is given."""
        return cls(**values) if quantile is None else QuantileModel(quantile, **values)  # type: ignore[call-arg]

    @classmethod
    def variants(cls) -> dict[str, type[AggregatedModel]]:
        return {"": cls, "--quantile TAU": QuantileModel}

    #: costs (c⁺, c⁻) of a positive and a negative residual: |r| = 1·r⁺ + 1·r⁻
    def costs(self) -> tuple[float, float]:
        return 1.0, 1.0

    def n_coefficients(self, data: LADData) -> int:
        return data.m + int(self.fit_intercept)

    # ------------------------------------------------------------------ data
    def check_data(self, data: LADData) -> None:
        p = self.n_coefficients(data)
        if data.n < p:
            raise DataError(
                f"Fewer rows ({data.n}) than coefficients ({p}: {data.m} columns"
                f"{' + intercept' if self.fit_intercept else ''}); the fit is not identified."
            )

    # ------------------------------------------------------------------ clustering
    def default_rate(self, data: LADData) -> float:
        """r^0 = max{3m/n, 0.0005} if m·n > 5·10^8, else max{2m/n, 0.0005} (paper §4)."""
        m, n = self.n_coefficients(data), data.n
        if self.init == "band":
            return min(1.0, self._band_fraction(data) + 2 * self.bins * m / n)
        factor = 3 if m * n > 5e8 else 2
        return min(1.0, max(factor * m / n, 0.0005))

    def _sample_size(self, data: LADData) -> int:
        """max(20p, sfac · n^{2/3} p^{1/2}) (Portnoy & Koenker's size); sfac None: 1.5 for
        p ≤ 20, else 1 (measured in docs/lad.md: the sample fit dominates at large p)."""
        p = self.n_coefficients(data)
        sfac = self.sfac if self.sfac is not None else (1.5 if p <= 20 else 1.0)
        return int(min(data.n, max(20 * p, round(sfac * data.n ** (2 / 3) * p**0.5))))

    def _band_fraction(self, data: LADData) -> float:
        return min(1.0, self.band * self._sample_size(data) / data.n)

    def initial_partition(self, data: LADData, rate: float, rng: np.random.Generator) -> Partition:
        """Paper §4: fit on a small random sample → residuals r; one k-means pass on (r, y).
        'band' and 'bins' place the rows by the residual quantiles of the sample, as with rows in
        blocks (:meth:`initial_rule`, :meth:`initial_labels`): no ranking of every row."""
        if self.init in ("band", "bins"):
            rows = np.sort(rng.choice(data.n, self.initial_sample_size(data), replace=False))
            weight = None if data.weight is None else data.weight[rows]
            sample = dataclasses.replace(data, X=data.X[rows], y=data.y[rows], weight=weight)
            rule = self.initial_rule(sample, data, rate)
            return Partition.from_labels(self.initial_labels(data, 0, rule))
        p = self.n_coefficients(data)
        size = min(data.n, max(20 * p, 1000))
        picked = rng.choice(data.n, size=size, replace=False)
        coef, intercept = self._sample_fit(data.X[picked], data.y[picked])
        residual = data.y - data.X @ coef - intercept
        k = n_clusters_for_rate(rate, data.n, minimum=min(data.n, p + 1))
        if self.init == "kmeans":
            labels = kmeans_one_pass(np.column_stack([residual, data.y]), k, rng)
        else:
            labels = kmeans_one_pass(residual, k, rng)
        return Partition.from_labels(labels)

    def _sample_fit(self, X, y) -> tuple[NDArray[np.float64], float]:
        """Fit on the sample (least squares or LAD): only used to place the initial clusters."""
        X = dense(X)  # the sample is small
        design = np.column_stack([np.ones(len(y)), X]) if self.fit_intercept else X
        if self.sample_fit == "fn":
            c_plus, c_minus = self.costs()
            beta = quantile_fit(design, y, c_plus / (c_plus + c_minus))
        else:
            beta = np.linalg.lstsq(design, y, rcond=None)[0]
        return (beta[1:], float(beta[0])) if self.fit_intercept else (beta, 0.0)

    # ------------------------------------------------------------------ the chunked data pass
    def check_blocks(self) -> None:
        """Refuse the settings that need every row at once: split='minority' (a cluster's rows)
        and the k-means initial clusters."""
        if self.split == "minority":
            raise InvalidParameterError(
                "split='minority' needs every cluster's rows at once; with rows in blocks "
                "(--engine) use split='band' or split='sign'."
            )
        if self.init not in ("band", "bins"):
            raise InvalidParameterError(
                f"init={self.init!r} clusters all rows at once (k-means); with rows in blocks "
                "(--engine dask) use init='band' or init='bins'."
            )

    def initial_sample_size(self, whole: Any) -> int:
        """Rows of the sample that places C^0 when the rows are in blocks (:meth:`initial_rule`)."""
        if self.init == "band":
            return self._sample_size(whole)
        return min(whole.n, max(20 * self.n_coefficients(whole), 1000))

    def initial_rule(self, sample: LADData, whole: Any, rate: float) -> ResidualBins:
        """C^0 without ranking every row: the sample fit's residuals on the sample itself give
        the quantiles of the residuals of all rows. 'bins': k clusters between the quantiles
        j/k; 'band': the rows whose residual lies within M/2n of the τ-quantile (M = r^0 n −
        2·bins·p) are singletons, and bins·p clusters on each side split the rest at equal
        shares of the quantiles."""
        coef, intercept = self._sample_fit(sample.X, sample.y)
        residual = sample.y - sample.X @ coef - intercept
        n = whole.n
        if self.init == "bins":
            k = n_clusters_for_rate(rate, n, minimum=min(n, self.n_coefficients(whole) + 1))
            return ResidualBins(coef, intercept, np.quantile(residual, np.arange(1, k) / k))
        bins = self.bins * self.n_coefficients(whole)
        M = max(1, int(rate * n) - 2 * bins)
        c_plus, c_minus = self.costs()
        tau = c_plus / (c_plus + c_minus)
        low, high = max(0.0, tau - (M // 2) / n), min(1.0, tau + (M - M // 2) / n)
        steps = np.arange(1, bins) / bins
        return ResidualBins(
            coef,
            intercept,
            np.quantile(residual, low * steps),
            band=(float(np.quantile(residual, low)), float(np.quantile(residual, high))),
            above=np.quantile(residual, high + (1 - high) * steps),
        )

    def initial_labels(self, rows: LADData, offset: int, rule: ResidualBins) -> NDArray[np.int64]:
        """Cluster labels of a block under ``rule`` (any non-negative integers: the driver
        renumbers them): residual bins, and for 'band' a singleton per row inside the band."""
        kernels = compiled.kernels_for(rows.X)
        if kernels is not None:  # the same labels in one read of the rows
            band = rule.band if rule.band is not None else (np.inf, np.inf)
            above = rule.above if rule.above is not None else np.zeros(0)
            return kernels.residual_bins(
                rows.X, rows.y, rule.coef, rule.intercept, rule.edges, band, above, offset
            )
        residual = rows.y - rows.X @ rule.coef - rule.intercept
        labels = np.searchsorted(rule.edges, residual).astype(np.int64)
        if rule.band is None:
            return labels
        assert rule.above is not None, "a band rule has the edges above it"
        bins = rule.edges.size + 1
        below, over = residual < rule.band[0], residual > rule.band[1]
        labels[over] = bins + np.searchsorted(rule.above, residual[over])
        middle = np.flatnonzero(~below & ~over)
        labels[middle] = 2 * bins + offset + middle
        return labels

    def cluster_columns(self, rows: LADData) -> list[NDArray]:
        """(w_i, w_i x_i, w_i y_i) per row: their cluster sums are the aggregated data (w_i = 1
        without row weights: the clusters' row counts)."""
        if issparse(rows.X):
            raise DataError("Rows in blocks must be dense; give a dense X with --engine dask.")
        w = ROW_COUNT if rows.weight is None else rows.weight
        return [w, rows.weighted_X, rows.weighted_y]

    def aggregate_from_sums(self, sums: NDArray[np.float64], partition: Any) -> LADAggregate:
        """The aggregated data from the cluster sums of :meth:`cluster_columns`."""
        return LADAggregate(
            x_sum=np.ascontiguousarray(sums[:, 1:-1]),
            y_sum=sums[:, -1].copy(),
            weight=sums[:, 0].copy(),
            partition=partition,
        )

    # ------------------------------------------------------------------ aggregated data
    def aggregate(
        self, data: LADData, partition: Partition, *, previous: Any = None
    ) -> LADAggregate:
        if (
            data.weight is None
            and not issparse(data.X)
            and partition.n_clusters == data.n
            and np.array_equal(partition.labels, np.arange(data.n))
        ):  # singletons (the full problem): the data themselves, no copy
            return LADAggregate(data.X, data.y, np.ones(data.n), partition)
        weight, x_sum, y_sum = _cluster_sums(data, partition)
        for sums in (weight, x_sum, y_sum):  # the certificate reuses them: no solver writes
            sums.flags.writeable = False
        return LADAggregate(x_sum=x_sum, y_sum=y_sum, weight=weight, partition=partition)

    # ------------------------------------------------------------------ aggregated problem (3)
    def declare(self, agg: LADAggregate) -> Problem:
        """(3): min Σ_k |C_k| (c⁺ e⁺_k + c⁻ e⁻_k) s.t. β₀ + x̄_k β + e⁺_k − e⁻_k = ȳ_k."""
        c_plus, c_minus = self.costs()
        K, m = agg.x_sum.shape
        p = Problem("LAD aggregated problem (3)")
        beta = p.variables("beta", m)
        fit = agg.xbar @ beta
        if self.fit_intercept:
            fit = fit + p.variables("beta0", 1)
        e_plus, e_minus = p.variables("e_plus", K, lower=0.0), p.variables("e_minus", K, lower=0.0)
        p.minimize(c_plus * agg.weight @ e_plus + c_minus * agg.weight @ e_minus)
        p.subject_to("deviation", fit + e_plus - e_minus == agg.ybar)
        return p

    def read(self, values: Values, agg: LADAggregate) -> LADSolution:
        """β, β₀ and s_k = ∂F/∂ȳ_k / |C_k| ∈ [−c⁻, c⁺] (None when the solver gave none)."""
        multiplier = values.dual("deviation")
        intercept = float(values["beta0"][0]) if self.fit_intercept else 0.0
        dual = None if multiplier is None else multiplier / agg.weight
        return LADSolution(values["beta"].copy(), intercept, agg.partition, dual)

    def matrix_program(self, agg: LADAggregate, previous: Previous | None = None) -> MatrixProgram:
        """The LP dual of (3) (:class:`~aidopt.solvers.algebra.DualForm`: a row per coefficient,
        a column s_k per cluster in [−c⁻|C_k|, c⁺|C_k|]), warm-started from the previous basis."""
        start = None
        if previous is not None and self.warm_start != "none":
            start = self._warm_basis(agg, previous, self.warm_start)
        program = self.declare(agg).dual(start_basis=start).program
        assert program is not None, "(3) is an LP of the dual form's shape"
        return program

    def solution_from_program(self, result: SolveResult, agg: LADAggregate) -> LADSolution:
        return self.read(self.declare(agg).dual().values(result), agg)

    def program_bound(self, result: SolveResult, agg: LADAggregate) -> float | None:
        """The dual's value at the returned point: a lower bound on F^t by weak duality."""
        return None if result.objective is None else -result.objective

    def _solution(
        self, beta: NDArray[np.float64], agg: LADAggregate, dual: NDArray | None = None
    ) -> LADSolution:
        if self.fit_intercept:
            return LADSolution(beta[1:].copy(), float(beta[0]), agg.partition, dual)
        return LADSolution(np.array(beta, dtype=np.float64), 0.0, agg.partition, dual)

    @staticmethod
    def _warm_basis(agg: LADAggregate, previous: Previous, rule: str) -> tuple | None:
        """Map the previous simplex basis to the split clusters.

        'inherit': a nonbasic parent's children keep its bound; of a basic parent's children the
        first stays basic and the others sit at the bound their residual sign asks for (regime
        1 → s = c⁺), so the basis keeps exactly one basic column per basic parent. 'regime':
        the same, but the children of a split nonbasic parent also take the bound of their sign.
        """
        part = agg.partition
        basis = previous.result.basis
        if basis is None or part.parent is None:
            return None
        col_prev, row_prev = basis
        status = col_prev[part.parent].copy()
        by_sign = np.where(part.cluster_regime == 1, BASIS_UPPER, BASIS_LOWER)
        basic_child = np.flatnonzero(status == BASIS_BASIC)
        _, first = np.unique(part.parent[basic_child], return_index=True)
        extra = np.setdiff1d(basic_child, basic_child[first], assume_unique=True)
        status[extra] = by_sign[extra]
        if rule == "regime":
            split = np.bincount(part.parent, minlength=col_prev.size)[part.parent] > 1
            nonbasic = split & (status != BASIS_BASIC)
            status[nonbasic] = by_sign[nonbasic]
        return status, row_prev

    # ------------------------------------------------------------------ structure
    def to_structure(
        self, kind: type, agg: LADAggregate, previous: Previous | None
    ) -> WeightedQuantileRegression:
        """(3) as min (c⁺ + c⁻) Σ_k |C_k| ρ_τ(ȳ_k − z̄_k β), τ = c⁺/(c⁺ + c⁻), warm-started from
        the previous (β, multipliers) with each child's share of its parent's."""
        c_plus, c_minus = self.costs()
        tau = c_plus / (c_plus + c_minus)
        start = None
        part = agg.partition
        if self.warm_start != "none" and previous is not None and part.parent is not None:
            old = previous.solution
            if old.cluster_dual is not None:
                coef = np.r_[old.intercept, old.coef] if self.fit_intercept else old.coef
                a_parent = old.cluster_dual / (c_plus + c_minus) + (1.0 - tau)  # per unit weight
                start = (coef, a_parent[part.parent] * agg.weight)
        return WeightedQuantileRegression(
            Z=agg.design(self.fit_intercept),
            y=agg.ybar,
            weight=agg.weight,
            tau=tau,
            scale=c_plus + c_minus,
            start=start,
        )

    def from_structure(self, kind: type, answer: QuantileFit, agg: LADAggregate) -> LADSolution:
        """β, and s_k = (c⁺ + c⁻) d_k / |C_k| from the multipliers d."""
        c_plus, c_minus = self.costs()
        return self._solution(answer.coef, agg, (c_plus + c_minus) * answer.dual / agg.weight)

    # ------------------------------------------------------------------ evaluation
    def evaluate(
        self, data: LADData, solution: LADSolution, *, aggregate: Any = None
    ) -> Evaluation:
        """E^t = Σ_i w_i ρ(y_i − β₀ − x_i β) (w_i = 1 unweighted) with a bound on its rounding
        error; regime = [r_i > 0]. On a large dense unweighted X, for a solution of clusters of
        these rows just aggregated, the same compiled read sums the certificate's terms at its
        candidate duals (``bound_terms``: :meth:`lower_bound` reads no row)."""
        found = self._candidates_to_read(data, solution, aggregate)
        if found is None:
            evaluation = self.evaluate_rows(data, solution, 0, data)
        else:
            candidates, gram = found
            duals = np.vstack([s for s, _ in candidates])
            labels = solution.partition.labels  # type: ignore[union-attr]
            evaluation, terms = self._evaluated_rows(data, solution, 0, data, labels, duals)
            if terms is not None:
                read = _BoundRead(solution, candidates, gram, terms)
                evaluation = dataclasses.replace(evaluation, bound_terms=read)
        if self.split == "minority" and solution.partition is not None:
            finer = self.split_hint(solution.partition, evaluation.regime)
            return dataclasses.replace(evaluation, split_regime=finer)
        return evaluation

    def _candidates_to_read(
        self, data: LADData, solution: LADSolution, agg: LADAggregate | None
    ) -> tuple | None:
        """:meth:`bound_candidates` of the solution's clusters when the evaluation's compiled
        read can sum their terms: the rows are large, dense, unweighted and ``agg`` holds the
        cluster sums of exactly these clusters (they are reused); else None."""
        part = solution.partition
        if (
            agg is None
            or agg.x_sum is data.X  # the full problem (singletons): the rows themselves
            or part is None
            or agg.partition is not part
            or data.weight is not None
            or compiled.kernels_for(data.X) is None
        ):
            return None
        return self.bound_candidates(agg, solution)

    def evaluate_rows(
        self, rows: LADData, solution: LADSolution, offset: int, whole: Any
    ) -> Evaluation:
        """:meth:`evaluate` on the block ``rows`` = entries offset, offset + 1, ... of ``whole``
        (n, m): the block's share of E^t and of its error bound, its regimes, and its split
        regime ('band': the block's ⌊band fraction · rows⌋ smallest |r_i| become singletons,
        numbered 2 + their index in ``whole``)."""
        return self._evaluated_rows(rows, solution, offset, whole, None, ())[0]

    def evaluate_and_bound_rows(
        self,
        rows: LADData,
        solution: LADSolution,
        offset: int,
        whole: Any,
        labels: NDArray[np.integer],
        duals: NDArray[np.float64],
    ) -> tuple[Evaluation, list[BoundTerms]]:
        """:meth:`evaluate_rows` and :meth:`cluster_bound_terms` of the block (``duals``: q × K,
        a cluster dual per row): on a large dense unweighted X in one compiled read of the rows
        (each chunk's dual sums while its rows are in cache), else one after the other."""
        duals = np.asarray(duals, dtype=np.float64)
        evaluation, terms = self._evaluated_rows(rows, solution, offset, whole, labels, duals)
        if terms is None:
            terms = self.cluster_bound_terms(rows, labels, duals)
        return evaluation, terms

    def _evaluated_rows(self, rows, solution, offset, whole, labels, duals):
        """(:meth:`evaluate_rows`, the certificate's terms at ``duals`` when the compiled read
        gave them, else None)."""
        c_plus, c_minus = self.costs()
        w = rows.weight
        kernels = compiled.kernels_for(rows.X) if w is None else None
        terms = None
        if kernels is not None:  # |r|, sign r, chunk sums of ρ(r) (and of |X|, the duals' terms)
            known = abs_column_sums_known(rows.X)  # the run's first evaluation sums |X|
            found = kernels.residual_loss(
                rows.X,
                rows.y,
                solution.coef,
                solution.intercept,
                c_plus,
                c_minus,
                CHUNK,
                labels,
                duals if len(duals) else None,
                abs_sums=not known,
            )
            column_sums = (
                abs_column_sums(rows.X)
                if known
                else abs_column_sums_from(rows.X, found.abs_sums.sum(axis=0))
            )
            if len(duals):
                terms = self._chunk_bound_terms(rows, found.products, found.scalars, column_sums)
            size, regime = found.size, found.positive
            total, added = added_chunk_sums(found.loss[:, None])
            objective = float(total[0])
            loss_sum = (objective + float(added[0])) * (1 + 2 * GAMMA)  # ≥ Σ|ρ(r_i)|
            sum_error = GAMMA * loss_sum * (1 + 2 * EPS) + float(added[0])
        else:
            # r = y − Xβ − β₀ (in this order) in one vector of n: each costs page faults
            residual = np.asarray(rows.X @ solution.coef, dtype=np.float64)
            np.subtract(rows.y, residual, out=residual)
            residual -= solution.intercept
            positive = residual > 0
            regime = positive.view(np.int8)  # 1 where r_i > 0
            size = np.abs(residual)
            if c_plus == c_minus:  # c·|r| is (±c)·r to the bit
                loss = size if c_plus == 1.0 else size * c_plus
            else:
                loss = np.where(positive, c_plus, c_minus) * size
            if w is not None:
                loss = loss * w
            objective, sum_error = accurate_sum(loss)
            if w is not None or (c_plus, c_minus) != (1.0, 1.0):  # needed below only then
                loss_sum = float(loss.sum()) * (1 + 2 * GAMMA)
            column_sums = abs_column_sums(rows.X) if w is None else None
        if w is None and (c_plus, c_minus) != (1.0, 1.0):
            sum_error += EPS * loss_sum  # the products c·|r_i|
        # |fl(r_i) − r_i| ≤ γ_{m+2} (|y_i| + Σ_j |x_ij||β_j| + |β₀|), summed over i (× w_i)
        if w is None:
            scale = (
                vector_sums(rows.y)[0]
                + float(column_sums @ np.abs(solution.coef))
                + rows.n * abs(solution.intercept)
            )
        else:
            scale = (
                float(w @ np.abs(rows.y))
                + float((w @ np.abs(rows.X)) @ np.abs(solution.coef))
                + float(w.sum()) * abs(solution.intercept)
            ) * (1 + (rows.n + 2) * EPS)
            sum_error += 2 * EPS * loss_sum  # the products c·r_i·w_i
        residual_error = (rows.m + 3) * EPS * scale * max(c_plus, c_minus)
        finer = None
        if self.split == "band":
            k = min(rows.n - 1, int(self._band_fraction(whole) * rows.n))
            near = _smallest(size, k)
            wide = offset + rows.n + 2 > np.iinfo(np.int32).max
            finer = regime.astype(np.int64 if wide else np.int32)
            finer[near] = near + (2 + offset)
        return Evaluation(objective, regime, finer, sum_error + residual_error), terms

    def split_hint(self, partition, regime):
        """Minority singletons: in a cluster whose smaller sign part has at most
        ``minority`` · |C_k| entries, those entries become singletons; other impure clusters
        split by sign."""
        labels = partition.labels
        pos = np.bincount(labels, weights=regime, minlength=partition.n_clusters)
        neg = partition.sizes - pos
        minority_sign = (pos < neg).astype(np.int64)  # the sign of the smaller part
        small = np.minimum(pos, neg) <= self.minority * partition.sizes
        lone = small[labels] & (regime == minority_sign[labels])
        finer = regime.astype(np.int64)  # the singletons' numbers do not fit a narrow regime
        finer[lone] = 2 + np.flatnonzero(lone)
        return finer

    def solution_to_dict(self, data: LADData, solution: LADSolution) -> dict[str, Any]:
        return {
            "coef": {
                name: float(v) for name, v in zip(data.feature_names, solution.coef, strict=True)
            },
            "intercept": float(solution.intercept),
        }

    def solution_from_dict(
        self, data: LADData, payload: dict[str, Any], dual: DualPoint | None = None
    ) -> LADSolution:
        coef = payload["coef"]
        missing = [name for name in data.feature_names if name not in coef]
        if missing:
            raise DataError(f"The solution has no coefficient for the column(s) {missing}.")
        return LADSolution(
            np.array([float(coef[name]) for name in data.feature_names]),
            float(payload.get("intercept", 0.0)),
        )

    # ------------------------------------------------------------------ the certificate
    def lower_bound(
        self,
        data: LADData,
        solution: LADSolution,
        evaluation: Evaluation,
        upper: float,
        dual: DualPoint | None = None,
        *,
        aggregate: Any = None,
    ) -> Bound | None:
        """Weak duality on the original LP: for u_i ∈ w_i[−c⁻, c⁺] and any β,
        Σ_i w_i ρ(y_i − z_i β) ≥ uᵀy − βᵀ(Zᵀu), z_i = (1, x_i), w_i = 1 for unweighted data. u is
        the aggregated dual spread over the entries (u_i = s_k w_i for i ∈ C_k; Zᵀu = Σ_k s_k S_k,
        S_k = Σ_{C_k} w_i z_i), repaired so that Zᵀu ≈ 0 on the clusters whose s_k is inside its
        box; the residual e = Zᵀu that rounding leaves costs |β*ᵀe| ≤ ‖Dβ*‖₂‖D⁻¹e‖₂ with
        ‖Dβ*‖₂ ≤ (‖W½y‖₂ + E/(min(c⁺, c⁻)√min w)) / √λ_min(D⁻¹GD⁻¹) (‖W½Zβ*‖₂ ≤ ‖W½y‖₂ +
        ‖W½r*‖₁), D = diag(√G_jj), and ZᵀWZ ⪰ G = Σ_k W_k z̄_k z̄_kᵀ (the aggregated Gram at the
        weighted means). A (nearly) rank-deficient design gives no bound, with a warning naming the
        dependent columns. The terms are the evaluation's (``bound_terms``) when its read summed
        them for this solution, else summed here in a read of their own."""
        c_plus, c_minus = self.costs()
        if dual is not None:
            s = dual.expand(data.n, evaluation.regime)
            if s.size and (s.min() < -c_minus or s.max() > c_plus):
                raise ValueError(f"the dual point leaves its box [{-c_minus:g}, {c_plus:g}]")
            bound = self._bound_at(
                data, s, upper, self._full_gram(data), data.n, "the given dual point"
            )
            return best_with_dual([(bound, partial(self._dual_point, s, evaluation))])
        part = solution.partition
        if part is None:
            return None
        read = evaluation.bound_terms
        if isinstance(read, _BoundRead) and read.solution is solution:  # summed as evaluated
            candidates, gram, all_terms = read.candidates, read.gram, read.terms
        else:
            candidates, gram = self.bound_candidates(
                self.aggregate_of(data, part, aggregate), solution
            )
            duals = np.vstack([s for s, _ in candidates])
            all_terms = self.cluster_bound_terms(data, part.labels, duals)
        found = []
        for (s, what), terms in zip(candidates, all_terms, strict=True):
            source = f"{what} spread over the entries, on all data"
            bound = self.bound_from_terms(
                terms, gram, part.n_clusters, upper, source, list(data.feature_names)
            )
            found.append((bound, partial(self._spread_dual_point, s, part, evaluation)))
        return best_with_dual(found)

    def bound_candidates(
        self, agg: LADAggregate, solution: LADSolution
    ) -> tuple[list[tuple[NDArray[np.float64], str]], NDArray[np.float64]]:
        """The cluster duals s (K,) to spread over the entries, each with what it is, and the
        aggregated Gram G, all from the cluster sums (W_k, Σ w x, Σ w y) of the solved clusters."""
        c_plus, c_minus = self.costs()
        weight, x_sum, y_sum = agg.weight, agg.x_sum, agg.y_sum
        S = np.vstack([weight, x_sum.T]) if self.fit_intercept else np.ascontiguousarray(x_sum.T)
        candidates = [
            (
                self._rebuilt_dual(weight, x_sum, y_sum, S, solution),
                "the dual that complementary slackness gives the primal",
            )
        ]
        s = solution.cluster_dual
        if s is not None and s.shape == weight.shape:
            repaired = repair_equalities(S, np.zeros(S.shape[0]), s, -c_minus, c_plus)
            candidates.append((repaired, "the solver's dual"))
        # Σ_k W_k z̄_k z̄_kᵀ = Σ_k S_k S_kᵀ / W_k ⪯ ZᵀWZ (weighted means; W = I unweighted)
        gram = (S / weight) @ S.T
        return self._promising(candidates, S, y_sum, gram), gram

    def _promising(
        self,
        candidates: list[tuple[NDArray[np.float64], str]],
        S: NDArray[np.float64],
        y_sum: NDArray[np.float64],
        gram: NDArray[np.float64],
    ) -> list[tuple[NDArray[np.float64], str]]:
        """The candidates worth their row sums (each costs a product per entry and coefficient):
        a candidate is dropped when another dominates it on the cluster sums, with at least its
        value uᵀy = Σ_k s_k Y_k and at most its ‖D⁻¹Zᵀu‖₂ = ‖D⁻¹S s‖₂ — its bound uᵀy −
        ‖Dβ*‖₂‖D⁻¹Zᵀu‖₂ is then no higher, whatever ‖Dβ*‖₂ (up to the rounding allowances).
        A choice of the dual points to sum, not a bound: the certificate is computed on the
        rows for those kept."""
        scale = np.sqrt(np.diag(gram))
        if len(candidates) < 2 or not np.all(scale > 0):
            return candidates
        values = [float(s @ y_sum) for s, _ in candidates]
        residuals = [float(np.linalg.norm((S @ s) / scale)) for s, _ in candidates]

        def dominated(d: int) -> bool:
            return any(
                b != d
                and values[b] >= values[d]
                and residuals[b] <= residuals[d]
                and (values[b], -residuals[b], -b) > (values[d], -residuals[d], -d)
                for b in range(len(candidates))
            )

        return [c for d, c in enumerate(candidates) if not dominated(d)]

    def bound_terms(self, rows: LADData, s: NDArray[np.float64]) -> BoundTerms:
        """The row sums of the bound of :meth:`lower_bound` at u = s∘w on the block ``rows``
        (s ∈ [−c⁻, c⁺] per unit weight, one per row; u = s unweighted; weighted, fl(s_i w_i) is
        shrunk by 1 − 2ε so that |u_i| ≤ |s_i| w_i holds in exact arithmetic: u stays in its
        box [−c⁻w_i, c⁺w_i]): uᵀy and Zᵀu with their rounding bounds, ‖W½y‖₂², min w."""
        w = rows.weight
        u = weighted_below(s, w)
        value, value_error = accurate_sum(u * rows.y)
        value_error += EPS * float(np.abs(u) @ np.abs(rows.y))
        bound_u = float(np.abs(u).max(initial=0.0))
        e, error = accurate_tdot(rows.X, u, abs_bound=bound_u * abs_column_sums(rows.X))
        if self.fit_intercept:
            e_1, err_1 = accurate_sum(u)
            e, error = np.r_[e_1, e], np.r_[err_1, error]
        wy = rows.y if w is None else np.sqrt(w) * rows.y
        w_min = 1.0 if w is None else float(w.min())
        return BoundTerms(value, value_error, e, error, float(wy @ wy), w_min, rows.n)

    def cluster_bound_terms(
        self, rows: LADData, labels: NDArray[np.integer], duals: NDArray[np.float64]
    ) -> list[BoundTerms]:
        """:meth:`bound_terms` at u = s[labels] for each cluster dual s, a row of ``duals``
        (q × K). On a large dense unweighted X in a large run: one compiled read of the rows for
        all of them, u never made (:func:`aidopt.numerics.compiled.cluster_dual_sums`; the bounds of
        :meth:`_chunk_bound_terms`)."""
        kernels = compiled.kernels_for(rows.X)
        if kernels is None or rows.weight is not None or not len(duals):
            return [self.bound_terms(rows, s[labels]) for s in duals]
        duals = np.asarray(duals, dtype=np.float64)  # no copy of a q × K array
        products, scalars = kernels.cluster_dual_sums(rows.X, rows.y, labels, duals, CHUNK)
        return self._chunk_bound_terms(rows, products, scalars, abs_column_sums(rows.X))

    def _chunk_bound_terms(
        self,
        rows: LADData,
        products: NDArray[np.float64],
        scalars: NDArray[np.float64],
        column_sums: NDArray[np.float64],
    ) -> list[BoundTerms]:
        """The terms of :meth:`bound_terms` from the compiled chunk sums at each dual (chunks of
        CHUNK rows summed in float64, the chunk sums added by :func:`aidopt.core.certificate.
        added_chunk_sums`), with its rounding bounds: γΣ|v| per sum plus the addition of its
        chunk sums, ε Σ|u_i y_i| for the products u_i y_i, and for Zᵀu — added four rows at a
        time, so γ_FOURS (70 roundings, not CHUNK + 2) — through max|u| · Σ_i |x_i|
        (``column_sums`` ≥ Σ_i |x_ij|)."""
        norm_y_squared = vector_sums(rows.y)[1]
        chunks, q, p = products.shape
        # every dual's chunk sums added at once: Σ u a (p columns), then Σ u y, Σ|u y|, Σ u, Σ|u|
        columns = np.concatenate([products, scalars[:, :, :4]], axis=2).reshape(chunks, -1)
        all_sums, all_added = added_chunk_sums(columns)
        terms = []
        for d in range(q):
            at = d * (p + 4)
            e, e_added = all_sums[at : at + p], all_added[at : at + p]
            sums, added = all_sums[at + p : at + p + 4], all_added[at + p : at + p + 4]
            uy, u_sum = float(sums[0]), float(sums[2])
            # sums of non-negative terms in chunks: the exact ones are at most (1 + 2γ) × these
            abs_uy, abs_u = (sums[[1, 3]] + added[[1, 3]]) * (1 + 2 * GAMMA)
            bound_u = float(scalars[:, d, 4].max(initial=0.0))
            value_error = (GAMMA + EPS) * abs_uy * (1 + 2 * EPS) + float(added[0])
            e_error = GAMMA_FOURS * bound_u * column_sums * (1 + 4 * EPS) + e_added
            if self.fit_intercept:
                e = np.r_[u_sum, e]
                e_error = np.r_[GAMMA * abs_u * (1 + 2 * EPS) + float(added[2]), e_error]
            terms.append(BoundTerms(uy, value_error, e, e_error, norm_y_squared, 1.0, rows.n))
        return terms

    def bound_from_terms(
        self,
        terms: BoundTerms,
        gram: NDArray[np.float64],
        n_clusters: int,
        upper: float,
        source: str,
        feature_names: list[str],
    ) -> Bound | None:
        """D(u) = uᵀy − βᵀ(Zᵀu) ≥ uᵀy − ‖Dβ*‖₂‖D⁻¹Zᵀu‖₂ minus every rounding allowance (see
        :meth:`lower_bound`); None (with a warning) for a (nearly) rank-deficient design."""
        c_plus, c_minus = self.costs()
        # |βᵀe| ≤ ‖Dβ‖₂ ‖D⁻¹e‖₂ with D = diag(√G_jj): the column scales cancel
        scale = np.sqrt(np.diag(gram))
        if not np.all(scale > 0):
            self._warn_rank(feature_names, gram)
            return None
        residual = float(np.linalg.norm((np.abs(terms.e) + terms.e_error) / scale))
        lam = safe_min_eigenvalue(gram / np.outer(scale, scale), n_clusters)
        if lam <= 1e-13:
            self._warn_rank(feature_names, gram)
            return None
        # ‖W½Zβ*‖₂ ≤ ‖W½y‖₂ + ‖W½r*‖₁ and ‖W½r*‖₁ ≤ Σ w_i|r*_i|/√min w ≤ E*/(min(c⁺, c⁻)√min w)
        # (W = I unweighted); gram ⪯ ZᵀWZ, so ‖Dβ*‖₂ ≤ ‖W½Zβ*‖₂/√λ
        norm_y = float(np.sqrt(terms.norm_y_squared)) * (1 + (terms.n + 2) * EPS)
        root_w_min = float(np.sqrt(terms.w_min)) * (1.0 - 2 * EPS)
        beta_bound = (norm_y + max(upper, 0.0) / (min(c_plus, c_minus) * root_w_min)) / np.sqrt(lam)
        allowance = terms.value_error + beta_bound * residual
        source = f"LP dual of (2) at {source}"
        return Bound(terms.value - allowance, source, None, terms.value, allowance)

    def _bound_at(self, data, s, upper, gram, terms, source) -> Bound | None:
        """The bound of :meth:`lower_bound` at u = s∘w on all rows (its dual point not yet
        attached: :meth:`_dual_point`)."""
        sums = self.bound_terms(data, s)
        return self.bound_from_terms(sums, gram, terms, upper, source, data.feature_names)

    def _spread_dual_point(
        self, s: NDArray[np.float64], part: Partition, evaluation: Evaluation
    ) -> DualPoint:
        """The cluster dual s spread over the entries (u_i = s_k w_i, i ∈ C_k), as a dual point."""
        return self._dual_point(s[part.labels], evaluation)

    def _dual_point(self, s: NDArray[np.float64], evaluation: Evaluation) -> DualPoint:
        """s as a dual point (compact: the entries whose value is not their regime's default)."""
        c_plus, c_minus = self.costs()
        return DualPoint.compress(s, evaluation.regime, (-c_minus, c_plus))

    def _rebuilt_dual(self, weight, x_sum, y_sum, S, solution: LADSolution) -> NDArray[np.float64]:
        """The cluster dual that complementary slackness gives (β₀, β): s_k = c⁺ where the
        cluster's aggregated residual is positive, −c⁻ where negative; the clusters it
        interpolates (residual 0) are free and make Σ_k s_k S_k = 0 by least squares (S, p × K:
        the columns S_k = Σ_{i∈C_k} w_i z_i of the aggregated dual's constraints)."""
        c_plus, c_minus = self.costs()
        fit = x_sum @ solution.coef + weight * solution.intercept
        rbar = (y_sum - fit) / weight
        size = (np.abs(y_sum) + np.abs(x_sum) @ np.abs(solution.coef)) / weight
        tie = np.abs(rbar) <= 1e-9 * (size + abs(solution.intercept))
        s = np.where(rbar > 0, c_plus, -c_minus)
        s[tie] = 0.5 * (c_plus - c_minus)
        return repair_equalities(S, np.zeros(S.shape[0]), s, -c_minus, c_plus, free=tie)

    def _full_gram(self, data: LADData) -> NDArray[np.float64]:
        p = self.n_coefficients(data)
        gram = np.zeros((p, p))
        w = data.weight
        for start in range(0, data.n, 65536):
            block = data.X[start : start + 65536]
            block = dense(block)
            if self.fit_intercept:
                block = np.hstack([np.ones((block.shape[0], 1)), block])
            weighted = block if w is None else block * w[start : start + 65536, None]
            gram += weighted.T @ block  # Σ w_i z_i z_iᵀ
        return gram

    def _warn_rank(self, feature_names: list[str], gram: NDArray[np.float64]) -> None:
        """Warn that the design is (nearly) rank-deficient, naming dependent columns."""
        from scipy.linalg import qr

        names = (["(intercept)"] if self.fit_intercept else []) + list(feature_names)
        _, r, piv = qr(gram, pivoting=True)
        diag = np.abs(np.diag(r))
        rank = int(np.sum(diag > 1e-10 * diag[0])) if diag.size and diag[0] > 0 else 0
        dependent = [names[j] for j in piv[rank:]]
        warnings.warn(
            f"The design matrix is rank-deficient or nearly so (rank {rank} of {len(names)}; "
            f"dependent column(s): {', '.join(dependent) or 'none found'}): the coefficients are "
            "not unique and the optimum cannot be certified. Drop or combine those columns.",
            DataWarning,
            stacklevel=4,
        )


def _smallest(values: NDArray[np.float64], k: int) -> NDArray[np.intp]:
    """The indices of the entries ≤ the k-th smallest value (0-based; ties included):
    ``np.flatnonzero(values <= np.partition(values, k)[k])``. For a small k of many values the
    partial sort runs on the entries below a threshold read off a strided sample, when at least
    k + 1 lie below it (then the k-th smallest is among them: the same answer)."""
    n = values.size
    if n >= 1 << 14 and k < n // 8:
        sample = values[::16]
        q = min(sample.size - 1, 2 * (k + 1) * sample.size // n + 16)  # ~2× the expected share
        below = np.flatnonzero(values <= np.partition(sample, q)[q])
        if below.size > k:
            kept = values[below]
            return below[kept <= np.partition(kept, k)[k]]
    return np.flatnonzero(values <= np.partition(values, k)[k])


def _power_of_two(values):
    """The power of two nearest each value (1 for zeros): an exact scaling factor."""
    v = np.asarray(values, dtype=np.float64)
    out = np.exp2(np.round(np.log2(np.where(v > 0, v, 1.0))))
    return out if out.ndim else float(out)


class QuantileModel(LADModel):
    """Quantile regression at level τ = ``quantile``: min Σ_i ρ_τ(y_i − β₀ − x_i β)."""

    citation: ClassVar[str] = (
        "Koenker & Bassett (1978); AID as in Park & Klabjan (2016), §3.1, with ρ_τ for |·|"
    )
    options: ClassVar[tuple[Option, ...]] = (
        Option("quantile", 0.5, "quantile level τ", low=0.0, high=1.0),
        *LADModel.options,
    )

    quantile: float

    def costs(self) -> tuple[float, float]:
        return self.quantile, 1.0 - self.quantile


MODEL = LADModel
