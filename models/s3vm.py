"""Semi-supervised SVM (S3VM), the Bennett–Demiriz MIQP, under AID (Park & Klabjan 2016, §3.3).

Labeled entries I_l (labels y_i = ±1) and unlabeled entries I_u; f(x) = w·x + b. Problem (12):

    E* = min ½‖w‖² + M_l Σ_{I_l} max{0, 1 − y_i f(x_i)} + M_u Σ_{I_u} max{0, 1 − |f(x_i)|}

(the best label of an unlabeled entry is d_i = sign f(x_i), Lemma 1). Bennett–Demiriz MIQP (14),
written with one η per unlabeled entry (equivalent to the paper's η⁺/η⁻ pair, K_u fewer columns):

    min  ½‖w‖² + M_l Σ_{I_l} ξ_i + M_u Σ_{I_u} η_i
    s.t. y_i f(x_i) ≥ 1 − ξ_i,  ξ_i ≥ 0                          i ∈ I_l        (14a)
         f(x_i) + η_i + M⁺_i (1 − d_i) ≥ 1                        i ∈ I_u        (14b)
         −f(x_i) + η_i + M⁻_i d_i ≥ 1,  η_i ≥ 0,  d_i ∈ {0, 1}     i ∈ I_u        (14d)

Aggregated problem (15): the same model on the centroids x̄_k of labeled clusters C_k (one label
each) and unlabeled clusters D_k, with weights |C_k|, |D_k| on the losses and one binary d_k per
unlabeled cluster. Row weights ω_i > 0 (``supports_weights``: row i's loss counts ω_i times in
(12)) make the centroids weighted means and the cluster weights W_k = Σ ω_i; every argument
below holds with them (the balance constraint and factors use weighted means and class
totals). The full MIQP (14) is (15) on singleton clusters. Options of §4.3:
``balance="constraint"``: (1/|I_u|) Σ_{I_u} f(x_i) = (1/|I_l|) Σ_{I_l} y_i;
``balance="cost"``: M_l is multiplied by max{1, |I_l^∓|/|I_l^±|} on the minority class (the
paper states the aim — a larger weight for the minority class — but prints the two ratios the
other way round; the aim is implemented).

Exact pieces (see ``docs/s3vm.md``):

* span reduction: w = Vᵀu with V an orthonormal basis of the centroid span
(``aidopt.numerics.span``);
  the model is solved in u ∈ ℝ^r, r ≤ K: few columns, and a diagonal Hessian (separable);
* big-M from the data (:mod:`aidopt.solvers.s3vm_big_m`): the value U of a feasible point (w = 0,
  the previous hyperplane, a local search) bounds ‖u‖, b and so every score at an optimum;
  M⁺_k = 1 − min f_k, M⁻_k = 1 + max f_k never bind (checked again at the reported solution);
* declustering (Prop. 5): labeled clusters split by 1 − y_i f(x_i) > 0; unlabeled clusters into
  up to four parts by (1 − d̄_k f(x_i) > 0, f(x_i) > 0), encoded as regimes 0..3;
* the certificate (:mod:`aidopt.models.s3vm_certificate`). Prop. 5's "every cluster pure"
  proves nothing ((15) is no relaxation of (12): the unlabeled loss is not convex); (15) with
  unlabeled margins 1 − ρ_k W* (cluster radii ρ_k, W* = √(2E^t) ≥ ‖w*‖) is one. When every
  cluster is pure it is solved, and the run is certified optimal only when its proven bound L
  satisfies E^t − L ≤ cert_tol·max{1, |E^t|}; otherwise the unlabeled clusters its solution
  places inside the margin are halved along its hyperplane (regimes 4..7) and AID goes on. The
  aggregated optimum F^t is no lower bound.

Solve procedure (``solve_procedure``, several programs per iteration, on the user's solver): the
local-search QPs, the MIQP (15) and, when every cluster is pure, the relaxation above, the MIQPs
to a relative gap of 1e-9. A solver of the :class:`~aidopt.solvers.structures.SemiSupervisedSVM`
structure (``bnb``, the default: branch and bound on convex relaxations) takes (15) and the
relaxation as that structure instead: no big-M, no local search outside it. A Pyomo MIQP
solver by name solves the Pyomo model of (15) (``build``) and is certified only once every
unlabeled cluster is a point (then (15) is a relaxation of (12)).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import partial
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from aidopt.common.jsonable import by_name, from_names
from aidopt.common.lazy import dense
from aidopt.common.lazy import sparse as sp
from aidopt.common.options import Option
from aidopt.common.validation import check_predict_input
from aidopt.core.certificate import Bound, DualPoint
from aidopt.core.clustering import kmeans_lloyd, kmeans_one_pass
from aidopt.core.contract import AggregatedModel, Evaluation, Previous, SubSolve
from aidopt.core.partition import Partition, nested_labels
from aidopt.data.containers import SemiSupervisedData
from aidopt.exceptions import DataError
from aidopt.models.s3vm_certificate import (
    S3VMCertificate,
    centroids,
    certify,
    halves,
    spread_clusters,
)
from aidopt.numerics.span import CentroidSpan
from aidopt.solvers.algebra import Problem, Values, sum_squares
from aidopt.solvers.base import SolveResult, SolveStatus
from aidopt.solvers.program import MatrixProgram, ProblemClass
from aidopt.solvers.s3vm_big_m import BigM, local_search
from aidopt.solvers.structures import SemiSupervisedSVM

__all__ = ["S3VMAggregate", "S3VMCertificate", "S3VMData", "S3VMModel", "S3VMSolution"]

S3VMData = SemiSupervisedData  # the data S3VM takes: X, y = ±1 labeled, 0 unlabeled

_NEG, _POS, _UNL = 0, 1, 2  # entry groups: labeled −1, labeled +1, unlabeled
FEW_LABELS = 50  #: with fewer labeled entries (and m < n) a run makes 4 starts by default
_GAP = 1e-9  # relative MIP gap of every MIQP of the procedure (the certificate compares values)


# ---------------------------------------------------------------------- aggregated data
@dataclass(frozen=True, eq=False)
class S3VMAggregate:
    """Aggregated data of (15) in reduced, centred coordinates x̃_k = V (x̄_k − μ).

    μ (``center``) is the mean of the unlabeled entries and V spans {x̄_k − μ}. The model uses
    f(x) = w·(x − μ) + b' with b' = b + w·μ: the same hyperplanes (b is free), smaller score
    ranges for the big-M, and the balance constraint becomes b' = ȳ_l (``y_l``, the mean label).
    ``kind[k]`` is −1/+1 for a labeled cluster, 0 for an unlabeled one; ``cost[k]`` the loss
    weight (M_l·balance factor·|C_k| or M_u·|D_k|). ``data`` is kept for the certificate's pass.
    """

    span: CentroidSpan
    weight: NDArray[np.float64]
    kind: NDArray[np.float64]
    cost: NDArray[np.float64]
    center: NDArray[np.float64]
    y_l: float
    partition: Partition
    data: S3VMData

    @property
    def xt(self) -> NDArray[np.float64]:
        return self.span.reduced

    @property
    def L(self) -> NDArray[np.int64]:
        return np.flatnonzero(self.kind != 0)

    @property
    def U(self) -> NDArray[np.int64]:
        return np.flatnonzero(self.kind == 0)


# ---------------------------------------------------------------------- solution
@dataclass(frozen=True)
class S3VMSolution:
    """Hyperplane (w, b); d̄ of the unlabeled clusters (±1, 0 for labeled ones); F^t."""

    w: NDArray[np.float64]
    b: float
    cluster_d: NDArray[np.float64]
    aggregated_objective: float
    partition: Partition
    big_m: dict[str, float]
    certificate: S3VMCertificate | None = None

    def decision_function(self, X: ArrayLike | sp.spmatrix) -> NDArray[np.float64]:
        X = check_predict_input(X, self.w.shape[0], type(self).__name__, accept_sparse=True)
        return np.asarray(X @ self.w).ravel() + self.b

    def predict(self, X: ArrayLike | sp.spmatrix) -> NDArray[np.int64]:
        """Lemma 1: the label of an entry is the sign of its decision value (+1 at 0)."""
        return np.where(self.decision_function(X) >= 0, 1, -1)


# ---------------------------------------------------------------------- the model
class S3VMModel(AggregatedModel[S3VMData, S3VMAggregate, S3VMSolution]):
    """S3VM (12)/(14)/(15): min ½‖w‖² + M_l Σ hinge(labeled) + M_u Σ max{0, 1 − |f|}(unlabeled).

    ``balance`` as in §4.3; ``cert_tol`` the relative tolerance of the certificate
    E^t − L ≤ cert_tol·max{1, |E^t|}. ``min_clusters``: the paper's "at least 10 initial
    clusters" (§4.3); by default a floor on the total K^0 (the unlabeled clustering takes up the
    slack), with ``min_clusters_per_group`` a floor on each of the three clusterings (labeled −1,
    labeled +1, unlabeled; capped at the group's size, so l = 10 keeps the labeled entries as
    points). The paper does not say which.
    """

    name: ClassVar[str] = "s3vm"
    problem_class: ClassVar[ProblemClass] = ProblemClass.MIQP
    data_type: ClassVar[type] = SemiSupervisedData
    supports_weights: ClassVar[bool] = True
    structures: ClassVar[tuple[type, ...]] = (SemiSupervisedSVM,)
    options_can_be_infeasible: ClassVar[bool] = True  # the balance constraint
    default_solver: ClassVar[str] = "bnb"  # exact branch and bound, open (docs/s3vm.md)
    citation: ClassVar[str] = (
        "Park & Klabjan (2016), §3.3, problems (12)-(16), Lemma 1, Prop. 5; "
        "Bennett & Demiriz (1999)"
    )
    options: ClassVar[tuple[Option, ...]] = (
        Option("M_l", 5.0, "M_l, the labeled loss weight of (12)", low=0.0, flag="--Ml"),
        Option("M_u", 1.0, "M_u, the unlabeled loss weight of (12)", low=0.0, flag="--Mu"),
        Option(
            "balance",
            "constraint",
            "unbalanced-data technique of §4.3: the mean score of I_u = the mean label of I_l "
            "('constraint'), M_l raised on the minority class ('cost'), or none",
            kind=str,
            choices=("constraint", "cost", None),
            cli_values={"none": None},
        ),
        Option(
            "cert_tol",
            1e-6,
            "relative tolerance of the certificate E^t − L ≤ cert_tol·max{1, |E^t|}",
            low=0.0,
            high=1.0,
            closed="left",
            cli=False,
        ),
        Option("min_clusters", 10, "at least this many initial clusters (§4.3)", kind=int, low=1),
        Option(
            "min_clusters_per_group",
            False,
            "apply --min-clusters to each of the three initial clusterings, not to the total",
            kind=bool,
            flag="--per-group",
        ),
        Option(
            "init",
            "kmeans",
            "initial clustering of each group: one k-means assignment to random rows "
            "('one-pass', the paper's 'one iteration of k-means'), k-means++ seeds and one Lloyd "
            "step ('kmeans++'), or k-means to convergence, best of 3 ('kmeans')",
            kind=str,
            choices=("one-pass", "kmeans++", "kmeans"),
        ),
    )
    M_l: float
    M_u: float
    balance: str
    cert_tol: float
    min_clusters: int
    min_clusters_per_group: bool
    init: str

    # ------------------------------------------------------------------ data
    def check_data(self, data: S3VMData) -> None:
        counts = np.bincount(data.group, minlength=3)
        if counts[_NEG] == 0 or counts[_POS] == 0:
            raise DataError(
                f"S3VM needs labeled rows of both classes; found {counts[_NEG]} of class "
                f"{data.classes[0]!r} and {counts[_POS]} of class {data.classes[1]!r}."
            )
        if counts[_UNL] == 0:
            raise DataError("No unlabeled rows: S3VM needs unlabeled rows (empty target).")

    def balance_factors(self, data: S3VMData) -> tuple[float, float]:
        """Multipliers of M_l for classes (−1, +1): 1 unless ``balance="cost"`` (then the ratios
        of the classes' sizes, total row weights with weights)."""
        if self.balance != "cost":
            return 1.0, 1.0
        omega = data.row_weights
        n_neg, n_pos = omega[data.y < 0].sum(), omega[data.y > 0].sum()
        return max(1.0, n_pos / n_neg), max(1.0, n_neg / n_pos)

    # ------------------------------------------------------------------ clustering
    def default_rate(self, data: S3VMData) -> float:
        """The smaller of the paper's r^0 values: 0.01 for n ≤ 10,000, else 0.0001 (§4)."""
        return 0.01 if data.n <= 10_000 else 0.0001

    def default_n_init(self, data: S3VMData) -> int:
        """4 starts when fewer than :data:`FEW_LABELS` entries are labeled and the entries
        outnumber the features, else 1: with few labels (12) has near-equal local optima, and
        its lowest of 4 starts rates no lower than one start; with m ≥ n every labelling is
        separable and more starts rated lower (docs/results/s3vm/studies.md, "n_init")."""
        if not isinstance(data, SemiSupervisedData):  # the run's data check says what is wrong
            return 1
        few = np.count_nonzero(data.y) < FEW_LABELS
        return 4 if few and data.m < data.n else 1

    def initial_partition(self, data: S3VMData, rate: float, rng: np.random.Generator) -> Partition:
        """One k-means per group (labeled −1, labeled +1, unlabeled; ``init``: one pass, as the
        paper, or k-means++ with one or many Lloyd steps), ⌈r^0·size⌉ clusters each, at least
        ``min_clusters`` in total or per group (§4.3)."""
        group = data.group
        sizes = np.bincount(group, minlength=3)
        k = np.minimum(sizes, np.maximum(1, np.ceil(rate * sizes))).astype(int)
        if self.min_clusters_per_group:
            k = np.minimum(sizes, np.maximum(k, self.min_clusters))
        else:
            k[_UNL] = min(sizes[_UNL], max(k[_UNL], self.min_clusters - k[_NEG] - k[_POS]))
        labels = np.zeros(data.n, dtype=np.int64)
        for g in (_NEG, _POS, _UNL):
            rows = np.flatnonzero(group == g)
            block = data.X[rows]
            block = dense(block)
            if self.init == "one-pass":
                labels[rows] = kmeans_one_pass(block, int(k[g]), rng)
            else:
                labels[rows] = kmeans_lloyd(block, int(k[g]), rng, full=self.init == "kmeans")
        return Partition.from_labels(nested_labels(group, labels))

    # ------------------------------------------------------------------ aggregated data
    def aggregate(
        self, data: S3VMData, partition: Partition, *, previous: Any = None
    ) -> S3VMAggregate:
        weight = partition.weights(data.weight)
        kind = np.zeros(partition.n_clusters)
        kind[partition.labels] = data.y  # clusters never mix groups
        xbar = centroids(data, partition)
        unl = kind == 0
        center = weight[unl] @ xbar[unl] / weight[unl].sum()
        span = CentroidSpan.of(xbar - center)
        beta_neg, beta_pos = self.balance_factors(data)
        cost = np.where(
            kind < 0, self.M_l * beta_neg, np.where(kind > 0, self.M_l * beta_pos, self.M_u)
        )
        return S3VMAggregate(
            span=span,
            weight=weight,
            kind=kind,
            cost=cost * weight,
            center=center,
            y_l=float(np.average(data.y[data.labeled], weights=data.row_weights[data.labeled])),
            partition=partition,
            data=data,
        )

    # ------------------------------------------------------------------ aggregated problem (15)
    def declare(self, agg: S3VMAggregate) -> Problem:
        """(15) with the big-M of :meth:`_big_m`."""
        return self._declare(agg, np.ones(agg.U.size), self._big_m(agg))

    def read(self, values: Values, agg: S3VMAggregate) -> S3VMSolution:
        return self._read(values, agg, self._big_m(agg))

    def matrix_program(self, agg: S3VMAggregate, previous: Previous | None = None) -> MatrixProgram:
        """(15) with the previous hyperplane among the big-M's feasible points, and a MIP start."""
        margin, bounds = np.ones(agg.U.size), self._big_m(agg, previous=previous)
        start = self._start_point(agg, bounds, margin)
        return self._declare(agg, margin, bounds).program(
            start_point=start, meta={"bounds": bounds}
        )

    def _declare(self, agg: S3VMAggregate, margin: NDArray[np.float64], bounds: BigM) -> Problem:
        """(15) with unlabeled margins ``margin`` (1 in (15)) in the reduced centred coordinates
        (w = Vᵀu, b' = b + w·μ, f_k = u·x̃_k + b'), u and b' in the boxes of ``bounds``:

            min  ½‖u‖² + Σ_{k∈K_l} |C_k| M_l ξ_k + Σ_{k∈K_u} |D_k| M_u η_k
            s.t. ȳ_k f_k ≥ 1 − ξ_k (14a),  f_k + η_k + M⁺_k (1 − d_k) ≥ margin_k (14b),
                 −f_k + η_k + M⁻_k d_k ≥ margin_k (14d),  ξ, η ≥ 0,  d_k ∈ {0, 1}

        with M⁺_k = margin_k − min f_k and M⁻_k = margin_k + max f_k over the box. d_k is fixed
        where the score range has one sign (Lemma 1); η_k and d_k where the margin is ≤ 0 (the
        loss is then 0; its rows are left out)."""
        L, U, xt = agg.L, agg.U, agg.xt
        f_lo, f_hi = bounds.score_range(np.linalg.norm(xt[U], axis=1))
        idle = margin <= 0
        d_lo = (f_lo >= 0).astype(np.float64)
        d_hi = np.where(idle, d_lo, (f_hi >= 0).astype(np.float64))
        p = Problem("S3VM aggregated problem (15)")
        u = p.variables("u", agg.span.rank, lower=-bounds.W, upper=bounds.W)
        b = p.variables("b", 1, lower=bounds.b_lo, upper=bounds.b_hi)
        xi = p.variables("xi", L.size, lower=0.0)
        eta = p.variables("eta", U.size, lower=0.0, upper=np.where(idle, 0.0, np.inf))
        d = p.variables("d", U.size, lower=d_lo, upper=d_hi, integer=True)
        p.minimize(0.5 * sum_squares(u) + agg.cost[L] @ xi + agg.cost[U] @ eta)
        p.subject_to("labeled_margin", agg.kind[L] * (xt[L] @ u + b) >= 1.0 - xi)
        on = np.flatnonzero(~idle)
        pick = sp.identity(U.size, format="csr")[on]  # the unlabeled clusters with rows
        f, eta_on, d_on = xt[U[on]] @ u + b, pick @ eta, pick @ d
        big_plus, big_minus = margin[on] - f_lo[on], margin[on] + f_hi[on]
        p.subject_to("positive_side", f + eta_on + big_plus * (1.0 - d_on) >= margin[on])
        p.subject_to("negative_side", -f + eta_on + big_minus * d_on >= margin[on])
        return p

    def _read(
        self, values: Values, agg: S3VMAggregate, bounds: BigM, objective: float | None = None
    ) -> S3VMSolution:
        """The solution at the solved (15); d_k as ±1 (0 on labeled clusters)."""
        u, xi, eta = values["u"], values["xi"], values["eta"]
        d = np.zeros(len(agg.weight))
        d[agg.U] = np.where(values["d"] > 0.5, 1.0, -1.0)
        if objective is None:
            objective = float(0.5 * u @ u + agg.cost[agg.L] @ xi + agg.cost[agg.U] @ eta)
        return self._solution(agg, u, float(values["b"][0]), d, objective, bounds)

    def _solve(
        self, agg: S3VMAggregate, margin: NDArray, bounds: BigM, solve: SubSolve
    ) -> tuple[SolveResult, Values | None]:
        """(15) with margins ``margin`` on the user's solver, from the point that gave U."""
        problem = self._declare(agg, margin, bounds)
        program = problem.program(start_point=self._start_point(agg, bounds, margin))
        result = solve(program, gap=_GAP)
        return result, None if result.x is None else problem.values(result)

    def _big_m(
        self,
        agg: S3VMAggregate,
        margin: NDArray | None = None,
        previous: Previous | None = None,
        solve: SubSolve | None = None,
    ) -> BigM:
        """The big-M of (15) with unlabeled margins ``margin`` (:class:`~aidopt.solvers.
        s3vm_big_m.BigM`) from w = 0, the previous hyperplane and, given ``solve``, a local
        search from the best of these (a tighter U: smaller W and M's, and a MIP start)."""
        s = self.to_semi_supervised(agg, margin)
        offsets = (agg.y_l,) if self.balance == "constraint" else (-1.0, 0.0, 1.0, agg.y_l)
        points = [np.r_[np.zeros(agg.span.rank), b] for b in offsets]
        if previous is not None:
            w = previous.solution.w
            u = agg.span.reduce(w[None, :])[0]  # the old span lies in the new one
            b = agg.y_l if self.balance == "constraint" else previous.solution.b + w @ agg.center
            points.append(np.r_[u, b])
        bounds = BigM.of(s, points)
        if solve is None:
            return bounds
        return BigM.of(s, [*points, local_search(s, bounds.start, solve.qp, solve.remaining)])

    def _start_point(self, agg: S3VMAggregate, bounds: BigM, margin) -> NDArray[np.float64]:
        """The full column vector of the point that gave U (a MIP start)."""
        u, b = bounds.start[:-1], float(bounds.start[-1])
        f = agg.xt @ u + b
        L, U = agg.L, agg.U
        xi = np.maximum(0.0, 1.0 - agg.kind[L] * f[L])
        d = (f[U] >= 0).astype(np.float64)
        eta = np.maximum(0.0, margin - np.abs(f[U]))
        return np.r_[u, b, xi, eta, d]

    # ------------------------------------------------------------------ solution
    def _solution(self, agg, u, b, d, objective, bounds: BigM | None) -> S3VMSolution:
        """Lift w = Vᵀu; check at the solution that the big-M cut off no optimal point (no
        big-M without ``bounds``: the structure route)."""
        big_m = {} if bounds is None else bounds.check(agg.xt, u, b, objective)
        w = agg.span.lift(u)
        return S3VMSolution(
            w=w,
            b=b - w @ agg.center,  # back from b' = b + w·μ
            cluster_d=d,
            aggregated_objective=objective,
            partition=agg.partition,
            big_m=big_m,
        )

    # ------------------------------------------------------------------ the solve procedure
    def solve_procedure(
        self, agg: S3VMAggregate, solve: SubSolve, previous: Previous | None
    ) -> tuple[S3VMSolution | None, SolveResult]:
        """The local search for the big-M, the MIQP (15), then the certificate when every
        cluster is pure (module docstring), all on the user's solver; on a solver of the
        :class:`~aidopt.solvers.structures.SemiSupervisedSVM` structure, (15) as that (no big-M)."""
        if solve.handles(SemiSupervisedSVM):
            start = self._big_m(agg, previous=previous).start
            fit, result = solve.structure(self.to_semi_supervised(agg, None, start), gap=_GAP)
            if fit is None or result.status is not SolveStatus.OPTIMAL:
                return None, result
            r = agg.span.rank
            d = np.where(agg.kind == 0, fit.d, 0.0)
            assert result.objective is not None, "an optimal answer has its objective"
            solution = self._solution(agg, fit.w[:r], fit.b, d, result.objective, None)
        else:
            bounds = self._big_m(agg, previous=previous, solve=solve)
            result, values = self._solve(agg, np.ones(agg.U.size), bounds, solve)
            if result.status is not SolveStatus.OPTIMAL or values is None:
                return None, result
            solution = self._read(values, agg, bounds, result.objective)
        certificate = self._certify(agg, solution, result, solve)
        return replace(solution, certificate=certificate), result

    def to_semi_supervised(
        self,
        agg: S3VMAggregate,
        margin: NDArray[np.float64] | None = None,
        start: NDArray[np.float64] | None = None,
    ) -> SemiSupervisedSVM:
        """(15) with unlabeled margins ``margin`` (1 by default) as the structure, in the
        reduced centred coordinates (w ↦ u, b ↦ b'); ``start`` a point (u, b')."""
        margins = np.ones(agg.kind.size)
        if margin is not None:
            margins[agg.U] = margin
        r = agg.span.rank
        return SemiSupervisedSVM(
            features=agg.xt,
            y=agg.kind,
            cost=agg.cost,
            margin=margins,
            bias=agg.y_l if self.balance == "constraint" else None,
            start=None if start is None else (start[:r], float(start[r])),
        )

    def _certify(
        self, agg: S3VMAggregate, solution: S3VMSolution, result: SolveResult, solve: SubSolve
    ) -> S3VMCertificate | None:
        """The certificate (:func:`~aidopt.models.s3vm_certificate.certify`); None while some
        cluster is impure."""
        data = agg.data
        f = solution.decision_function(data.X)
        if agg.partition.impure(self._prop5_regimes(data, f, solution)).any():
            return None
        upper = self._objective(data, f, solution.w)
        tol = self.cert_tol * max(1.0, abs(upper))
        relaxed = partial(self._relaxed, agg, solve=solve)
        return certify(data, agg.partition, agg.U, upper, tol, result.bound, relaxed)

    def _relaxed(self, agg: S3VMAggregate, margin: NDArray, solve: SubSolve):
        """(15) with unlabeled margins ``margin``: (its proven lower bound or None, its
        hyperplane (w, b) or None)."""
        r = agg.span.rank
        if solve.handles(SemiSupervisedSVM):
            fit, relaxed = solve.structure(self.to_semi_supervised(agg, margin), gap=_GAP)
            u, b = (None, 0.0) if fit is None else (fit.w[:r], fit.b)
        else:
            bounds = self._big_m(agg, margin, solve=solve)
            relaxed, values = self._solve(agg, margin, bounds, solve)
            u, b = (None, 0.0) if values is None else (values["u"], float(values["b"][0]))
        bound = relaxed.bound if relaxed.status is SolveStatus.OPTIMAL else None
        if u is None:
            return bound, None
        w = agg.span.lift(u)
        return bound, (w, b - w @ agg.center)

    # ------------------------------------------------------------------ evaluation
    def _objective(self, data: S3VMData, f: NDArray, w: NDArray) -> float:
        """(12) at a hyperplane: ½‖w‖² + M_l Σ β_y ω_i max{0, 1 − y f} + M_u Σ ω_i max{0,
        1 − |f|} (ω = 1 without row weights)."""
        beta_neg, beta_pos = self.balance_factors(data)
        omega = data.row_weights
        lab = data.labeled
        y = data.y[lab]
        weight = self.M_l * np.where(y < 0, beta_neg, beta_pos) * omega[lab]
        labeled = weight @ np.maximum(0.0, 1.0 - y * f[lab])
        unlabeled = self.M_u * omega[~lab] @ np.maximum(0.0, 1.0 - np.abs(f[~lab]))
        return float(0.5 * w @ w + labeled + unlabeled)

    def objective(self, data: S3VMData, w: NDArray, b: float) -> float:
        """(12) on the original data at the hyperplane (w, b)."""
        f = np.asarray(data.X @ w).ravel() + b
        return self._objective(data, f, np.asarray(w, dtype=np.float64))

    @staticmethod
    def _prop5_regimes(data: S3VMData, f: NDArray, solution: S3VMSolution) -> NDArray[np.int64]:
        """Labeled: 1 − y f > 0 (0/1). Unlabeled, the four parts of Prop. 5 (0..3):
        2·[1 − d̄_k f > 0] + [f > 0], d̄_k the label of the entry's cluster in (15)."""
        d = solution.cluster_d[solution.partition.labels]
        lab = data.labeled
        regime = np.where(
            lab,
            (1.0 - data.y * f > 0).astype(np.int64),
            2 * (1.0 - d * f > 0).astype(np.int64) + (f > 0).astype(np.int64),
        )
        return regime.astype(np.int64)

    def evaluate(
        self, data: S3VMData, solution: S3VMSolution, *, aggregate: Any = None
    ) -> Evaluation:
        f = solution.decision_function(data.X)
        regime = self._prop5_regimes(data, f, solution)
        cert = solution.certificate
        if cert is not None and cert.split is not None:
            regime = regime + 4 * cert.split
        elif cert is None and not solution.partition.impure(regime).any():
            # A Pyomo solver gave no certificate: pure clusters prove nothing (module
            # docstring) until the unlabeled clusters are points; halve the others.
            targets = spread_clusters(data, solution.partition)
            if targets.size:
                regime = regime + 4 * halves(data, solution.partition, targets, None)
        return Evaluation(objective=self._objective(data, f, solution.w), regime=regime)

    def lower_bound(
        self,
        data: S3VMData,
        solution: S3VMSolution,
        evaluation: Evaluation,
        upper: float,
        dual: DualPoint | None = None,
        *,
        aggregate: Any = None,
    ) -> Bound | None:
        """The certificate's bound (module docstring): the optimum of a relaxation of (12),
        proven by the MIQP solver — solver-attested, not re-checkable from the data alone.
        None while some cluster is impure or the relaxation was not solved."""
        cert = solution.certificate
        if cert is None:
            # A solver that runs no certificate (a Pyomo MIQP solver by name): once every
            # unlabeled cluster is a point, (15) is itself a relaxation of (12) and its optimum,
            # which the solver claimed, is the bound.
            if spread_clusters(data, solution.partition).size:
                return None
            return Bound(
                solution.aggregated_objective,
                "optimum of (15) on point clusters (a relaxation of (12)) claimed by the solver",
                solver_attested=True,
            )
        if cert.lower_bound is None:
            return None
        return Bound(
            cert.lower_bound,
            f"optimum of a relaxation of (12) ({cert.kind}, W = {cert.W:.6g}) proven by the "
            "MIQP solver",
            solver_attested=True,
        )

    def solution_from_dict(
        self, data: S3VMData, payload: dict[str, Any], dual: DualPoint | None = None
    ) -> S3VMSolution:
        """The hyperplane of a saved result, every entry its own cluster labeled by Lemma 1
        (``aidopt verify`` recomputes E from it; the bound is the solver's)."""
        w = from_names(payload.get("w"), data.feature_names, "weight")
        b = float(payload["b"])
        f = np.asarray(data.X @ w).ravel() + b
        d = np.where(data.labeled, 0.0, np.where(f >= 0, 1.0, -1.0))
        cert = payload["certificate"]
        certificate = None if cert is None else S3VMCertificate.from_dict(cert)
        big_m = {str(k): float(v) for k, v in payload["big_m"].items()}
        objective = float(payload["aggregated_objective"])
        return S3VMSolution(w, b, d, objective, Partition.singletons(data.n), big_m, certificate)

    def solution_to_dict(self, data: S3VMData, solution: S3VMSolution) -> dict[str, Any]:
        unl = ~data.labeled
        labels = solution.predict(data.X[np.flatnonzero(unl)])
        cert = solution.certificate
        return {
            "w": by_name(data.feature_names, solution.w),
            "b": float(solution.b),
            "labels": [int(v) for v in labels],
            "classes": {"-1": data.classes[0], "1": data.classes[1]},
            "aggregated_objective": solution.aggregated_objective,
            "certificate": None if cert is None else cert.to_dict(),
            "big_m": solution.big_m,
        }


MODEL = S3VMModel
