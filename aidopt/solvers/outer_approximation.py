"""Exact outer approximation (OA) for convex MIQPs on a MILP solver (HiGHS).

HiGHS solves LP, convex QP and MILP but not MIQP. For

    min ½ xᵀQx + cᵀx   s.t. row_lower ≤ Ax ≤ row_upper, col bounds, x_j ∈ ℤ (j ∈ J_int),  Q ⪰ 0,

write ½ xᵀQx = ½ Σ_t (l_t·x)² (Q diagonal: l_t = √q_t e_t; otherwise from the eigenvalues of Q
on its support) and replace each square by an epigraph variable θ_t ≥ ½ (l_t·x)², kept as tangent
cuts θ_t ≥ a (l_t·x) − ½a² (convexity makes every cut valid). The master MILP

    min cᵀx + Σ_t θ_t  s.t. the rows, the cuts, x_j ∈ ℤ

is a relaxation, so its proven dual bound is a lower bound L on the MIQP. Each round (Duran &
Grossmann's OA, with Kelley/ECP cuts at the master point as well):

1. solve the master with HiGHS (warm-started with the incumbent) → bound, point x̂ and the
   integer assignments HiGHS found on the way (solution callback);
2. for every new assignment ŷ fix x_J = ŷ and solve the convex QP with HiGHS → feasible point,
   upper bound U (exact for that ŷ), and tangent cuts at the QP optimum;
3. add tangent cuts where x̂ violates θ_t ≥ ½ (l_t·x̂)²;
4. stop when U − L ≤ max(abs_tol, tol·|U|).

OA terminates finitely: a repeated assignment whose QP optimum already carries cuts has master
value ≥ its QP value ≥ U. The master's own gap starts loose and is tightened as the OA gap
closes (early bounds need not be exact). HiGHS 1.15 has no lazy-constraint callback (its
callback input can only interrupt or inject a solution), so the master is re-solved each round
rather than kept as one branch-and-cut tree; the solution callback is used to harvest every
improving assignment of a round.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from aidopt.common.deadline import budget
from aidopt.common.lazy import sparse as sp
from aidopt.common.native import silenced_stdout
from aidopt.exceptions import SolverCapabilityError, SolverError
from aidopt.solvers.base import SolverAdapter, SolveResult, SolveStatus
from aidopt.solvers.highs import HighsAdapter
from aidopt.solvers.program import MatrixProgram, ProblemClass

__all__ = ["HighsOuterApproximation", "OAOptions", "separable_factor", "solve_convex_qp"]

_INITIAL_CUTS = 5  # tangent points per square in the first master (within finite bounds)
# HiGHS's active-set QP solver can cycle on degenerate QPs (HiGHS 1.16 on S3VM local-search QPs:
# > 10⁶ iterations at a constant objective, no end). Cap: measured on 378 S3VM QPs (local search
# and OA assignments, SSL-book sets), a solved QP needs ≤ 44·(cols + rows) iterations (1.16; 1.15:
# ≤ 6·(cols + rows)) and ≤ 2,100 in all.
_QP_ITERATIONS_MIN = 10_000
_QP_ITERATIONS_PER_SIZE = 100
# After a stall, a solve error or a spurious "unbounded", the same QP with its objective scaled
# by a power of two (exact: same minimiser) is tried again: HiGHS's active-set method behaves
# erratically in that scale (measured on the 8 of 424 S3VM QPs that HiGHS 1.16 fails on: 4 are
# solved at 2^-10 or 2^10).
_QP_RETRY_SCALES = (2.0**-10, 2.0**10)
_QP_RETRY = (SolveStatus.ERROR, SolveStatus.ITERATION_LIMIT, SolveStatus.UNBOUNDED)


@dataclass(frozen=True)
class OAOptions:
    """Options of the OA loop (``solver_options`` keys); other keys go to the HiGHS master.

    tol, abs_tol : stop when U − L ≤ max(abs_tol, tol·|U|).
    max_rounds : master solves at most.
    max_assignments : new integer assignments given a QP per round (from HiGHS' solution
        callback; the master's final point always is).
    """

    tol: float = 1e-7
    abs_tol: float = 1e-9
    max_rounds: int = 500
    max_assignments: int = 4
    highs: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, options: dict[str, Any] | None) -> OAOptions:
        opts = dict(options or {})
        own = {
            k: opts.pop(k) for k in ("tol", "abs_tol", "max_rounds", "max_assignments") if k in opts
        }
        return cls(**own, highs=opts)


def separable_factor(Q: sp.spmatrix, n: int) -> sp.csr_matrix:
    """L (T × n) with ½ xᵀQx = ½ ‖Lx‖², Q symmetric PSD; a diagonal Q gives one row per column.

    Raises SolverCapabilityError when Q is not positive semidefinite (OA needs convexity).
    """
    q = sp.csr_matrix(Q)
    q = 0.5 * (q + q.T)
    support = np.flatnonzero(np.asarray(abs(q).sum(axis=1)).ravel() > 0)
    if support.size == 0:
        return sp.csr_matrix((0, n))
    block = q[support][:, support]
    off_diagonal = block - sp.diags(block.diagonal())
    if off_diagonal.nnz == 0 or not np.any(off_diagonal.data):
        diag = block.diagonal()
        if np.any(diag < 0):
            raise SolverCapabilityError(
                "The quadratic objective is not convex (Q has a negative diagonal)."
            )
        rows = np.arange(support.size)
        return sp.csr_matrix((np.sqrt(diag), (rows, support)), shape=(support.size, n))
    lam, vec = np.linalg.eigh(block.toarray())
    scale = max(1.0, float(np.abs(lam).max()))
    if lam.min() < -1e-10 * scale:
        raise SolverCapabilityError(
            f"The quadratic objective is not convex (Q has eigenvalue {lam.min():.3g})."
        )
    keep = lam > 1e-12 * scale
    factor = (vec[:, keep] * np.sqrt(lam[keep])).T  # (T, |support|)
    full = np.zeros((factor.shape[0], n))
    full[:, support] = factor
    return sp.csr_matrix(full)


def solve_convex_qp(
    program: MatrixProgram,
    time_limit: float | None = None,
    *,
    options: dict[str, Any] | None = None,
) -> SolveResult:
    """A continuous convex QP on HiGHS with its fixed columns substituted out.

    HiGHS 1.15's QP solver reports some convex QPs with a fixed column as "non-convex" (and the
    adapter then raises); substituting fixed columns (col_lower = col_upper) into the rows and
    the objective avoids it. A failure is returned as status ``error``, never raised.

    It never hangs: HiGHS gets the smaller of ``time_limit`` and the time left before the run's
    deadline (:mod:`aidopt.common.deadline`), and a QP iteration cap (``qp_iteration_limit``, unless
    ``options`` sets one) of max(10⁴, 100·(cols + rows)) — far above what a solved QP needs, so
    reaching it means the active-set method cycles (status ``iteration_limit``). A stall, a solve
    error or "unbounded" is retried with the objective scaled by 2^-10 and 2^10 (exact) within
    the same time limit; the first status is returned when every attempt fails.
    """
    fixed = program.col_lower == program.col_upper
    free = np.flatnonzero(~fixed)
    value = np.where(fixed, program.col_lower, 0.0)
    A = sp.csc_matrix(program.A)
    shift = A @ value
    q = sp.csc_matrix(program.Q) if program.Q is not None else sp.csc_matrix(A.shape[1:] * 2)
    qv = q @ value
    reduced = MatrixProgram(
        c=(program.c + qv)[free],
        A=sp.csc_matrix(A[:, free]),
        row_lower=program.row_lower - shift,
        row_upper=program.row_upper - shift,
        col_lower=program.col_lower[free],
        col_upper=program.col_upper[free],
        Q=sp.csc_matrix(q[free][:, free]),
        offset=program.offset + float(program.c @ value) + 0.5 * float(value @ qv),
    )
    result = _solve_qp_with_retries(reduced, budget(time_limit), options)
    if result.x is None:
        return result
    x = value.copy()
    x[free] = result.x
    return replace(result, x=x, objective=program.objective_value(x))


def _solve_qp_with_retries(
    program: MatrixProgram, time_limit: float | None, options: dict[str, Any] | None
) -> SolveResult:
    """HiGHS on the QP with an iteration cap; on a stall, error or "unbounded" the objective is
    scaled by each of ``_QP_RETRY_SCALES`` in turn (the answer is scaled back)."""
    cap = max(_QP_ITERATIONS_MIN, _QP_ITERATIONS_PER_SIZE * (program.n_cols + program.n_rows))
    highs_options = {"qp_iteration_limit": cap, **(options or {})}
    end = None if time_limit is None else time.perf_counter() + time_limit
    first: SolveResult | None = None
    failures: list[str] = []
    for scale in (1.0, *_QP_RETRY_SCALES):
        left = None if end is None else max(0.0, end - time.perf_counter())
        if first is not None and left == 0.0:
            break
        target = program
        if scale != 1.0:
            Q = None if program.Q is None else scale * program.Q
            target = replace(program, c=scale * program.c, Q=Q)
        try:
            result = HighsAdapter().solve_program(target, time_limit=left, options=highs_options)
        except SolverError as exc:  # an adapter that raises on a HiGHS error
            result = SolveResult(status=SolveStatus.ERROR, message=str(exc))
        if result.status is SolveStatus.ITERATION_LIMIT:
            result = replace(
                result,
                message=f"HiGHS QP stopped at its iteration cap "
                f"{highs_options['qp_iteration_limit']} (the active-set method cycles on it)",
            )
        if result.status is SolveStatus.OPTIMAL:
            if scale == 1.0:
                return result
            duals = None if result.row_duals is None else result.row_duals / scale
            bound = None if result.bound is None else (result.bound - program.offset) / scale
            return replace(
                result,
                objective=None,  # recomputed from x by the caller
                bound=None if bound is None else bound + program.offset,
                row_duals=duals,
                message=f"optimal, objective scaled by {scale:g} (after {'; '.join(failures)})",
            )
        if result.status not in _QP_RETRY:  # solved elsewhere: optimal, infeasible, time limit
            if failures:
                result = replace(result, message=f"{result.message} (after {'; '.join(failures)})")
            return result
        first = first or result
        failures.append(f"×{scale:g}: {result.status.value} ({result.message})")
    assert first is not None
    return replace(first, message="; ".join(failures))


class HighsOuterApproximation(SolverAdapter):
    """MIQP through OA on HiGHS' MILP (see module docstring); LP/QP/MILP go to HiGHS directly."""

    NAME: ClassVar[str] = "highs-oa"
    DESCRIPTION: ClassVar[str] = "exact outer approximation on HiGHS MILPs: convex MIQP"
    REQUIRED_MODULES: ClassVar[tuple[str, ...]] = ("highspy",)
    SUPPORTS: ClassVar[frozenset[ProblemClass]] = frozenset(ProblemClass)
    SUPPORTS_MATRIX: ClassVar[bool] = True
    INSTALL_HINT: ClassVar[str] = "Install it with: pip install highspy"

    def accurate_options(self, gap: float) -> dict[str, Any]:
        return {"tol": max(gap, 1e-8), "abs_tol": gap}

    def solve_program(
        self,
        program: MatrixProgram,
        *,
        time_limit: float | None = None,
        verbose: bool = False,
        options: dict[str, Any] | None = None,
        start: NDArray[np.float64] | None = None,
    ) -> SolveResult:
        """Solve ``program``; ``start`` (default: the program's ``start_point``) is an optional
        point whose integers seed the incumbent."""
        self.check_available()
        start = program.start_point if start is None else start
        if program.problem_class is not ProblemClass.MIQP:
            return HighsAdapter().solve_program(
                program, time_limit=time_limit, verbose=verbose, options=options
            )
        return _OARun(program, OAOptions.from_dict(options), time_limit, verbose).run(start)


class _OARun:
    """State of one OA solve: the persistent HiGHS master, bounds, incumbent, counters."""

    def __init__(self, program: MatrixProgram, opts: OAOptions, time_limit, verbose) -> None:
        import highspy

        self.hs = highspy
        self.program = program
        self.opts = opts
        time_limit = budget(time_limit)  # the run's deadline holds too
        self.deadline = None if time_limit is None else time.perf_counter() + max(time_limit, 0)
        self.verbose = verbose
        self.n = program.n_cols
        self.integer = np.flatnonzero(np.zeros(0) if program.integer is None else program.integer)
        self.L = separable_factor(program.Q, self.n)
        self.T = self.L.shape[0]
        self.lower = -math.inf
        self.upper = math.inf
        self.best_x: NDArray[np.float64] | None = None
        self.seen: set[bytes] = set()
        self.cut_points: list[set[float]] = [set() for _ in range(self.T)]
        self.stats: dict[str, float] = {"rounds": 0, "cuts": 0, "qp_solves": 0, "qp_failures": 0}
        self.stats.update({"master_seconds": 0.0, "qp_seconds": 0.0})
        self.found: list[NDArray[np.float64]] = []
        self.master_x: NDArray[np.float64] | None = None
        self.tightened = False
        self.master = self._build_master()

    # ------------------------------------------------------------------ the loop
    def run(self, start: NDArray[np.float64] | None) -> SolveResult:
        t0 = time.perf_counter()
        if start is not None:
            self._try_assignment(np.asarray(start, dtype=np.float64))
        self._add_initial_cuts(start)
        status, message = SolveStatus.ITERATION_LIMIT, "round limit reached"
        master_gap = 1e-3
        last_lower = -math.inf
        while self.stats["rounds"] < self.opts.max_rounds:
            if self._remaining() == 0.0:
                status, message = SolveStatus.TIME_LIMIT, "time limit reached"
                break
            self.stats["rounds"] += 1
            master = self._solve_master(master_gap)
            if master in (SolveStatus.INFEASIBLE, SolveStatus.UNBOUNDED):
                status, message = master, f"the master MILP is {master.value}"
                break
            if master is SolveStatus.ERROR:
                raise SolverError("Solver 'highs-oa': the HiGHS master MILP failed.")
            if self.master_x is None:  # time limit before any master point
                status, message = SolveStatus.TIME_LIMIT, "time limit reached in the master"
                break
            new = 0
            for x in [self.master_x, *self.found[: self.opts.max_assignments]]:
                new += self._try_assignment(x)
            cuts = self._add_cuts_at(self.master_x, only_violated=True)
            if self._converged():
                status, message = SolveStatus.OPTIMAL, "OA gap closed"
                break
            if master is SolveStatus.TIME_LIMIT:
                status, message = SolveStatus.TIME_LIMIT, "time limit reached in the master"
                break
            if self._gap() <= 10.0 * self.T * self._row_tolerance():
                self._tighten_feasibility()  # the gap is down to what the tolerances allow
            progress = self.lower > last_lower + 0.1 * self._target()
            last_lower = self.lower
            if new == 0 and (cuts == 0 or not progress):
                # No new assignment and the bound is not moving: what is left is the master's
                # own gap, then its feasibility tolerances (each of the T cut rows may be
                # violated by primal_feasibility_tolerance); tighten them in turn.
                if master_gap == 0.0 and not self._tighten_feasibility():
                    status = SolveStatus.ITERATION_LIMIT
                    message = f"stalled at OA gap {self._gap():.3g} (MILP tolerances)"
                    break
                master_gap = 0.0 if master_gap <= 1e-9 else master_gap * 1e-3
            else:
                master_gap = min(master_gap, max(0.1 * self._gap(), 0.0))
        seconds = time.perf_counter() - t0
        info = {**self.stats, "gap": self._gap(), "separable_terms": self.T}
        if self.best_x is None:
            return SolveResult(
                status=status if status is not SolveStatus.OPTIMAL else SolveStatus.ERROR,
                seconds=seconds,
                message=message,
                info=info,
            )
        return SolveResult(
            status=status,
            objective=self.upper,
            bound=self.lower if math.isfinite(self.lower) else None,
            x=self.best_x,
            seconds=seconds,
            iterations=int(self.stats["rounds"]),
            message=message,
            info=info,
        )

    # ------------------------------------------------------------------ pieces
    def _remaining(self) -> float | None:
        if self.deadline is None:
            return None
        return max(0.0, self.deadline - time.perf_counter())

    def _gap(self) -> float:
        if not (math.isfinite(self.upper) and math.isfinite(self.lower)):
            return math.inf
        return max(0.0, self.upper - self.lower)

    def _target(self) -> float:
        """The gap to reach: max(abs_tol, tol·|U|)."""
        scale = abs(self.upper) if math.isfinite(self.upper) else 1.0
        return max(self.opts.abs_tol, self.opts.tol * scale)

    def _converged(self) -> bool:
        return self._gap() <= self._target()

    def _row_tolerance(self) -> float:
        value = self.master.getOptionValue("primal_feasibility_tolerance")
        return float(value[1] if isinstance(value, tuple) else value)

    def _tighten_feasibility(self) -> bool:
        """Once: MILP feasibility tolerances down to 1e-9 (False if already done)."""
        if self.tightened:
            return False
        self.tightened = True
        for key in ("mip_feasibility_tolerance", "primal_feasibility_tolerance"):
            self.master.setOptionValue(key, 1e-9)
        return True

    def _build_master(self):
        """The master MILP: columns x then θ (θ_t ≥ 0), objective cᵀx + Σθ, the program's rows."""
        hs, p = self.hs, self.program
        inf = hs.kHighsInf
        lp = hs.HighsLp()
        lp.num_col_ = self.n + self.T
        lp.num_row_ = p.n_rows
        lp.col_cost_ = np.r_[p.c, np.ones(self.T)]
        lp.col_lower_ = np.r_[np.clip(p.col_lower, -inf, inf), np.zeros(self.T)]
        lp.col_upper_ = np.r_[np.clip(p.col_upper, -inf, inf), np.full(self.T, inf)]
        lp.row_lower_ = np.clip(p.row_lower, -inf, inf)
        lp.row_upper_ = np.clip(p.row_upper, -inf, inf)
        lp.offset_ = float(p.offset)
        a = sp.csc_matrix(sp.hstack([sp.csr_matrix(p.A), sp.csr_matrix((p.n_rows, self.T))]))
        lp.a_matrix_.format_ = hs.MatrixFormat.kColwise
        lp.a_matrix_.start_ = a.indptr
        lp.a_matrix_.index_ = a.indices
        lp.a_matrix_.value_ = a.data
        kinds = np.zeros(self.n + self.T, dtype=bool)
        kinds[self.integer] = True
        lp.integrality_ = [
            hs.HighsVarType.kInteger if k else hs.HighsVarType.kContinuous for k in kinds
        ]
        with silenced_stdout(not self.verbose, discard=True):  # the banner of highspy ≥ 1.16
            h = hs.Highs()
        h.setOptionValue("output_flag", bool(self.verbose))
        for key, value in self.opts.highs.items():
            if h.setOptionValue(key, value) != hs.HighsStatus.kOk:
                raise ValueError(f"HiGHS rejected the option {key!r} = {value!r}.")
        h.passModel(lp)
        h.cbMipImprovingSolution.subscribe(self._on_solution)
        return h

    def _on_solution(self, event) -> None:
        self.found.append(np.array(event.data_out.mip_solution[: self.n], dtype=np.float64))

    def _solve_master(self, gap: float) -> SolveStatus:
        h, hs = self.master, self.hs
        h.setOptionValue("mip_rel_gap", float(max(gap, 0.0)))
        h.setOptionValue("mip_abs_gap", float(self.opts.abs_tol * 0.1))
        remaining = self._remaining()
        if remaining is not None:
            h.setOptionValue("time_limit", float(max(remaining, 1e-3)))
        if self.best_x is not None:
            sol = hs.HighsSolution()
            sol.col_value = list(np.r_[self.best_x, 0.5 * (self.L @ self.best_x) ** 2])
            sol.value_valid = True
            h.setSolution(sol)
        self.found = []
        start = time.perf_counter()
        h.run()
        self.stats["master_seconds"] += time.perf_counter() - start
        model_status = h.getModelStatus()
        st = hs.HighsModelStatus
        info = h.getInfo()
        if model_status in (st.kInfeasible,):
            self.master_x = None
            return SolveStatus.INFEASIBLE
        if model_status in (st.kUnbounded, st.kUnboundedOrInfeasible):
            self.master_x = None
            return SolveStatus.UNBOUNDED
        bound = float(info.mip_dual_bound)
        if math.isfinite(bound):
            self.lower = max(self.lower, bound)
        has_point = int(info.primal_solution_status) == 2  # kSolutionStatusFeasible
        self.master_x = np.array(h.getSolution().col_value[: self.n]) if has_point else None
        if model_status == st.kOptimal:
            return SolveStatus.OPTIMAL
        if model_status in (st.kTimeLimit, st.kInterrupt):
            return SolveStatus.TIME_LIMIT
        return SolveStatus.OPTIMAL if has_point else SolveStatus.ERROR

    def _try_assignment(self, x: NDArray[np.float64]) -> int:
        """QP at the integers of x (once per assignment): upper bound and cuts. Returns 1 if new."""
        y = np.round(x[self.integer])
        key = y.astype(np.int64).tobytes()
        if key in self.seen:
            return 0
        self.seen.add(key)
        p = self.program
        lo, hi = p.col_lower.copy(), p.col_upper.copy()
        lo[self.integer] = y
        hi[self.integer] = y
        qp = replace(p, col_lower=lo, col_upper=hi, integer=None, start_basis=None, meta={})
        start = time.perf_counter()
        result = solve_convex_qp(qp, time_limit=self._remaining())
        self.stats["qp_seconds"] += time.perf_counter() - start
        self.stats["qp_solves"] += 1
        if result.status is SolveStatus.INFEASIBLE:
            return 1  # these integers admit no feasible point (a no-good cut is not needed: OA
            # masters that keep returning them stall, which is reported)
        if result.status is not SolveStatus.OPTIMAL or result.x is None:
            self.stats["qp_failures"] += 1  # e.g. a spurious "unbounded" (HiGHS#1363)
            return 1
        xq = result.x
        value = p.objective_value(xq)
        if value < self.upper:
            self.upper, self.best_x = value, xq
        self._add_cuts_at(xq, only_violated=False)
        return 1

    def _add_initial_cuts(self, start: NDArray[np.float64] | None) -> None:
        """Tangents at evenly spread points of each l_t·x over the column bounds (when finite)."""
        p = self.program
        lo = np.where(np.isfinite(p.col_lower), p.col_lower, np.nan)
        hi = np.where(np.isfinite(p.col_upper), p.col_upper, np.nan)
        L = self.L.toarray() if self.T * self.n <= 4_000_000 else None
        points: list[NDArray[np.float64]] = []
        if L is not None:
            z_lo = np.where(L > 0, L * lo, L * hi).sum(axis=1)  # nan when unbounded
            z_hi = np.where(L > 0, L * hi, L * lo).sum(axis=1)
            finite = np.isfinite(z_lo) & np.isfinite(z_hi)
            grid = np.linspace(0.0, 1.0, _INITIAL_CUTS)
            for s in grid:
                points.append(np.where(finite, z_lo + s * (z_hi - z_lo), 0.0))
        if start is not None:
            points.append(self.L @ start)
        for z in points:
            self._add_cut_rows(z)

    def _add_cuts_at(self, x: NDArray[np.float64], *, only_violated: bool) -> int:
        """Tangent cuts at x; with ``only_violated`` (the master point, Kelley/ECP) only where
        θ_t under-estimates ½(l_t·x)², and none when the total under-estimate is below a tenth
        of the OA tolerance (such cuts cannot close the gap; the master's tolerances can)."""
        z = self.L @ x
        if only_violated:
            theta = np.asarray(self.master.getSolution().col_value[self.n :])
            target = self._target()
            excess = 0.5 * z**2 - theta
            if excess.clip(min=0.0).sum() <= 0.1 * target:
                return 0
            z = np.where(excess > 0.01 * target / max(self.T, 1), z, np.nan)
        return self._add_cut_rows(z)

    def _add_cut_rows(self, z: NDArray[np.float64]) -> int:
        """Rows θ_t − a_t (l_t·x) ≥ −½ a_t² for every finite a_t = z_t not cut before."""
        rows = [
            t for t in range(self.T) if np.isfinite(z[t]) and float(z[t]) not in self.cut_points[t]
        ]
        if not rows:
            return 0
        L = self.L
        starts, index, value = [0], [], []
        for t in rows:
            a = float(z[t])
            self.cut_points[t].add(a)
            seg = slice(L.indptr[t], L.indptr[t + 1])
            index.extend(L.indices[seg].tolist())
            value.extend((-a * L.data[seg]).tolist())
            index.append(self.n + t)
            value.append(1.0)
            starts.append(len(index))
        points = np.array([float(z[t]) for t in rows])
        self.master.addRows(
            len(rows),
            -0.5 * points**2,
            np.full(len(rows), self.hs.kHighsInf),
            len(index),
            np.array(starts[:-1], dtype=np.int32),
            np.array(index, dtype=np.int32),
            np.array(value, dtype=np.float64),
        )
        self.stats["cuts"] += len(rows)
        return len(rows)
