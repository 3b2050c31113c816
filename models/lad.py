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

Evaluation and certificate (:mod:`aidopt.core.check_loss`, the framework's): E^t with its rounding
bound, and weak duality of the LP (2) at the aggregated dual spread over the entries, or at the
dual complementary slackness gives the primal (the better of the two).
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from aidopt.common.lazy import dense
from aidopt.common.options import Option
from aidopt.core.check_loss import CheckLossAggregate, CheckLossFit, CheckLossModel
from aidopt.core.clustering import ResidualBins, kmeans_one_pass, n_clusters_for_rate, smallest
from aidopt.core.contract import AggregatedModel, Evaluation, Previous
from aidopt.core.partition import Partition
from aidopt.core.sample_fits import quantile_fit
from aidopt.data.containers import RegressionData
from aidopt.data.lad import GENERATOR
from aidopt.exceptions import InvalidParameterError
from aidopt.solvers.algebra import Problem, Values
from aidopt.solvers.base import SolveResult
from aidopt.solvers.program import BASIS_BASIC, BASIS_LOWER, BASIS_UPPER, MatrixProgram
from aidopt.solvers.structures import QuantileFit, WeightedQuantileRegression

__all__ = ["LADAggregate", "LADData", "LADModel", "LADSolution", "QuantileModel"]

LADData = RegressionData  # the data LAD takes: X (n × m), y (n,), row weights w (optional)
LADAggregate = CheckLossAggregate  # cluster sums (W_k, Σ w x, Σ w y) and the centroids
LADSolution = CheckLossFit  # β, β₀ and the cluster duals s_k ∈ [−c⁻, c⁺]


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


class LADModel(CheckLossModel):
    """Least absolute deviations regression (2)/(3): min Σ_i |y_i − β₀ − x_i β|.

    ``fit_intercept`` adds β₀ (a column of ones). The policy options (measured in docs/lad.md;
    every choice keeps the certificate) decide the initial clusters, the sample fit that places
    them (sample of max(20p, sfac · n^{2/3} p^{1/2}) entries, Portnoy & Koenker's size), the
    declustering (sign × magnitude: impure clusters split by sign, their entries with |r| in the
    band of the ``band`` · sample-size smallest |r| become singletons) and the warm starts.
    """

    name: ClassVar[str] = "lad"
    structures: ClassVar[tuple[type, ...]] = (WeightedQuantileRegression,)
    default_solver: ClassVar[str] = "fn"  # measured faster than HiGHS simplex/IPM (docs/lad.md)
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
        """Cluster labels of a block under ``rule``: residual bins, and for 'band' a singleton per
        row inside the band (:class:`~aidopt.core.clustering.ResidualBins`)."""
        return rule.labels(rows.X, rows.y, offset)

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

    # ------------------------------------------------------------------ declustering
    def evaluate(
        self, data: LADData, solution: LADSolution, *, aggregate: Any = None
    ) -> Evaluation:
        """E^t and regime = [r_i > 0] (:class:`~aidopt.core.check_loss.CheckLossModel`), with
        the 'minority' split's regimes."""
        evaluation = super().evaluate(data, solution, aggregate=aggregate)
        if self.split == "minority" and solution.partition is not None:
            finer = self.split_hint(solution.partition, evaluation.regime)
            return dataclasses.replace(evaluation, split_regime=finer)
        return evaluation

    def split_regime(
        self, size: NDArray[np.float64], regime: NDArray, offset: int, whole: Any
    ) -> NDArray | None:
        """'band': the block's ⌊band fraction · rows⌋ smallest |r_i| become singletons,
        numbered 2 + their index in ``whole``."""
        if self.split != "band":
            return None
        n = size.size
        near = smallest(size, min(n - 1, int(self._band_fraction(whole) * n)))
        wide = offset + n + 2 > np.iinfo(np.int32).max
        finer = regime.astype(np.int64 if wide else np.int32)
        finer[near] = near + (2 + offset)
        return finer

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

    def cost_error(self) -> float:
        """|fl(1 − τ) − (1 − τ)| (0 for τ ≥ ½, where the subtraction is exact), doubled."""
        exact = 1 - Fraction(self.quantile)
        return 2.0 * float(abs(Fraction(1.0 - self.quantile) - exact))


MODEL = LADModel
