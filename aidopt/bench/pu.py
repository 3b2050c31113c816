"""PU benchmark: the paper's Tables III/IV (F-measures) and a scaling study (time, memory).

``aidopt bench pu --part tables`` runs, on the 12 UCI sets (read in place from
``../shared/data/pu-uci``), for λ ∈ {1e-4, 1e-3, 1e-2, 1e-1} and the linear and Gaussian
(scale 1, γ = 0.5) kernels: the full QP (cvxpy + Clarabel: HiGHS 1.15's QP solver fails on these
problems, Gurobi's pip licence stops at 200 variables), USMO, and AID with USMO on the
aggregated problems, with the paper's split protocol; it reports both F-measures (the paper's
majority-class F1 and the positive-class F1) beside the paper's numbers for [7] (the full QP)
and USMO, and the largest relative objective difference to the full QP.

``aidopt bench pu --part scaling`` generates two-Gaussian PU instances (``make_pu``) of growing n
and runs each method in a fresh process with a time limit (training time and peak memory):
the full QP on Clarabel, HiGHS and Gurobi (statuses as reported: HiGHS fails on some, Gurobi's
pip licence refuses QPs over 200 variables), USMO, and AID on USMO, HiGHS and Gurobi. Outputs:
``pu_tables.csv/.md``, ``pu_scaling.csv/.md`` in ``--out`` (``--append`` adds to them, so a grid
can run in chunks).
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from aidopt.bench.common import (
    parse_choice_list,
    parse_float_list,
    parse_int_list,
    run_isolated,
    write_outputs,
)
from aidopt.data.pu import (
    PAPER_PRIORS,
    UCI_SETS,
    f1_majority,
    f1_positive,
    load_uci,
    make_pu,
    paper_split,
    uci_root,
)
from aidopt.kernels import Kernel

LAMBDAS = (1e-4, 1e-3, 1e-2, 1e-1)
METHODS = {
    "full-clarabel": "full QP, cvxpy + Clarabel (linear: (5) with w explicit; rbf: (6), dense K)",
    "full-highs": "full QP, HiGHS 1.15 (linear: (5); rbf: (6)), the status it reports",
    "full-gurobi": "full QP, Gurobi 13 (pip licence: ≤ 200 variables with quadratic terms)",
    "usmo": "USMO on all rows (the paper's solver, with the fourth optimality condition)",
    "aid-usmo": "AID, USMO on the aggregated problems (certified optimum)",
    "aid-highs": "AID, HiGHS on the aggregated problems (certified optimum)",
    "aid-gurobi": "AID, Gurobi on the aggregated problems (stops at the licence limit)",
}
TABLE_METHODS = ("full-clarabel", "usmo", "aid-usmo")

#: Tables III (linear) and IV (Gaussian): ([7], USMO) F-measures per λ = 1e-4, 1e-3, 1e-2, 1e-1
PAPER: dict[str, dict[str, tuple[tuple[float, float], ...]]] = {
    "linear": {
        "australian": ((67.9, 68.3), (67.7, 67.6), (69.0, 69.3), (70.0, 70.2)),
        "clean1": ((70.5, 70.2), (65.5, 65.6), (73.3, 73.0), (77.9, 75.6)),
        "diabetes": ((70.0, 70.1), (71.2, 71.1), (78.0, 79.3), (82.3, 82.3)),
        "heart": ((60.1, 59.4), (60.7, 60.0), (66.0, 66.0), (75.6, 75.6)),
        "heart-statlog": ((54.5, 54.5), (55.4, 55.2), (53.8, 53.8), (61.7, 60.2)),
        "house": ((59.9, 59.9), (59.0, 59.0), (57.4, 56.8), (64.6, 64.0)),
        "house-votes": ((59.6, 59.6), (60.0, 59.9), (57.1, 57.2), (61.7, 62.0)),
        "ionosphere": ((65.1, 65.1), (71.5, 72.0), (72.6, 73.7), (75.2, 75.2)),
        "isolet": ((91.8, 93.7), (93.3, 93.3), (94.7, 94.7), (95.5, 95.5)),
        "krvskp": ((81.1, 81.1), (79.6, 79.9), (82.9, 82.9), (80.6, 80.6)),
        "liverDisorders": ((55.7, 56.0), (63.9, 63.4), (68.8, 68.8), (68.8, 68.8)),
        "spectf": ((73.5, 73.5), (72.9, 72.3), (80.6, 80.6), (81.1, 81.1)),
    },
    "rbf": {
        "australian": ((64.2, 64.7), (70.6, 70.6), (59.4, 59.4), (0.0, 0.0)),
        "clean1": ((77.6, 77.6), (81.7, 81.7), (76.6, 76.6), (76.4, 76.4)),
        "diabetes": ((70.0, 70.0), (71.2, 70.6), (80.1, 80.1), (82.3, 82.3)),
        "heart": ((58.9, 58.9), (59.8, 59.8), (70.9, 70.9), (75.6, 75.6)),
        "heart-statlog": ((53.5, 53.5), (56.7, 56.7), (56.4, 56.4), (75.6, 75.6)),
        "house": ((56.5, 56.5), (61.1, 60.1), (56.8, 54.2), (74.0, 74.0)),
        "house-votes": ((61.2, 61.2), (59.2, 59.4), (57.5, 57.5), (71.8, 71.8)),
        "ionosphere": ((65.3, 65.3), (74.3, 74.1), (65.7, 65.7), (74.2, 74.2)),
        "isolet": ((75.3, 75.3), (75.7, 75.7), (76.4, 76.4), (75.9, 75.9)),
        "krvskp": ((82.4, 82.5), (84.3, 84.1), (73.2, 73.2), (73.2, 73.2)),
        "liverDisorders": ((57.0, 56.2), (62.2, 62.5), (68.8, 68.8), (68.8, 68.8)),
        "spectf": ((74.0, 74.0), (72.9, 72.1), (81.1, 81.1), (81.1, 81.1)),
    },
}


# ---------------------------------------------------------------------- one fit
def clarabel_full(X, labeled, prior: float, lam: float, kernel: Kernel, time_limit: float):
    """The full QP on Clarabel: (5) with w explicit (linear) or (6) with the dense Gram matrix.

    Returns (PUModel, PUData, PUSolution, status); the solution's β is the best bias for its α.
    """
    import cvxpy as cp

    from aidopt.models.pu import PUData, PUModel, PUSolution, optimal_bias

    data = PUData.from_arrays(X, labeled)
    model = PUModel(prior=prior, lam=lam, kernel=kernel)
    c1, c2 = model.constants(data)
    P, U = np.flatnonzero(labeled), np.flatnonzero(~labeled)
    opts = {"time_limit": time_limit, "tol_gap_abs": 1e-10, "tol_gap_rel": 1e-10}
    if kernel.kind == "linear":
        w, b, xi = cp.Variable(X.shape[1]), cp.Variable(), cp.Variable(U.size)
        f_u = X[U] @ w + b
        objective = 0.5 * cp.sum_squares(w) - c1 * (X[P].sum(axis=0) @ w + P.size * b)
        constraints = [xi >= 0, xi >= f_u, xi >= 0.5 + 0.5 * f_u]
        problem = cp.Problem(cp.Minimize(objective + c2 * cp.sum(xi)), constraints)
        problem.solve(solver="CLARABEL", **opts)
        if problem.status != "optimal":
            return model, data, None, _clarabel_status(problem.status)
        solution = PUSolution(bias=float(b.value), coef=w.value, norm_sq=float(w.value @ w.value))
        return model, data, solution, "optimal"
    K = kernel(X, X)
    alpha_p = np.full(P.size, c1)
    s, d = cp.Variable(U.size), cp.Variable(U.size)
    objective = (
        0.5 * cp.quad_form(s, cp.psd_wrap(K[np.ix_(U, U)])) - (K[np.ix_(U, P)] @ alpha_p) @ s
    )
    constraints = [cp.sum(s) == prior / (2 * lam), s + d / 2 <= c2, s - d / 2 >= 0]
    problem = cp.Problem(cp.Minimize(objective - 0.5 * cp.sum(d)), [*constraints, d >= 0, d <= c2])
    problem.solve(solver="CLARABEL", **opts)
    if problem.status != "optimal":
        return model, data, None, _clarabel_status(problem.status)
    alpha = np.where(labeled, c1, 0.0)
    alpha[U] = -np.clip(s.value, 0.0, c2)
    F = K @ alpha
    beta = optimal_bias(F[U], np.ones(U.size), c1 * P.size, c2)
    solution = PUSolution(
        bias=beta,
        coef=None,
        norm_sq=float(alpha @ F),
        entry_coef=alpha,
        labels=np.arange(X.shape[0]),
        train_decision=F + beta,
    )
    return model, data, solution, "optimal"


def _clarabel_status(status: str) -> str:
    """cvxpy's "user_limit" (Clarabel's time limit) is a time limit; others are kept."""
    return "time_limit" if status == "user_limit" else status


def fit(
    method: str, X, labeled, prior: float, lam: float, kernel: Kernel, time_limit: float
) -> dict[str, Any]:
    """Fit one method; returns status, seconds, objective (5), predictions and AID statistics."""
    from aidopt.driver import AIDSolver
    from aidopt.exceptions import AidoptError, SolverLicenseError
    from aidopt.models.pu import PUData, PUModel

    start = time.perf_counter()
    if method == "full-clarabel":
        model, data, solution, status = clarabel_full(X, labeled, prior, lam, kernel, time_limit)
        seconds = time.perf_counter() - start
        if solution is None:
            return {"status": status, "seconds": seconds}
        f = model.training_scores(data, solution)
        objective = model.evaluate(data, solution).objective
        return {"status": status, "seconds": seconds, "objective": objective, "f": f}
    data = PUData.from_arrays(X, labeled)
    solver = "usmo" if method in ("usmo", "aid-usmo") else method.split("-")[1]
    aid = AIDSolver(
        PUModel(prior=prior, lam=lam, kernel=kernel), solver=solver, tol=0.0, time_limit=time_limit
    )
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = aid.solve(data) if method.startswith("aid") else aid.solve_full(data)
    except AidoptError as exc:  # a licence refusal of the full QP is a solver limit
        status = "solver_limit" if isinstance(exc, SolverLicenseError) else "error"
        return {"status": status, "seconds": time.perf_counter() - start, "message": str(exc)}
    return {
        "status": result.status.value,
        "seconds": result.seconds,
        "objective": result.objective,
        "iterations": result.iterations,
        "final_rate": result.final_rate,
        "f": np.asarray(result.solution_dict["predictions"], dtype=np.float64),
    }


# ---------------------------------------------------------------------- (a) Tables III/IV
def run_tables(args: argparse.Namespace) -> pd.DataFrame:
    root = uci_root()
    names = [n for n in _names(args.datasets, UCI_SETS) if (root / f"{n}.mat").is_file()]
    if not names:
        raise SystemExit(f"No PU data sets found in {root} (set AIDOPT_PU_UCI).")
    kernels = _names(args.kernels, ("linear", "rbf"))
    rows = []
    for name in names:
        X, y = load_uci(name)
        prior = PAPER_PRIORS[name]
        for rep in range(args.repeats):
            labeled = paper_split(y, prior, np.random.default_rng(args.seed + rep))
            for kind in kernels:
                kernel = Kernel("rbf", gamma=args.gamma) if kind == "rbf" else Kernel("linear")
                for lam in args.lambdas:
                    for method in TABLE_METHODS:
                        out = fit(method, X, labeled, prior, lam, kernel, args.time_limit)
                        rows.append(_table_row(name, kind, lam, rep, method, out, y, labeled))
                    print(f"{name} {kind} λ={lam:g} repeat {rep}: done", file=sys.stderr)
    return pd.DataFrame(rows)


def _table_row(name, kind, lam, rep, method, out, y, labeled) -> dict[str, Any]:
    row = {"data": name, "kernel": kind, "lam": lam, "repeat": rep, "method": method}
    row.update({k: v for k, v in out.items() if k != "f"})
    if "f" in out:
        pred = np.where(out["f"][~labeled] >= 0.0, 1, -1)
        row["f1_paper"] = 100.0 * f1_majority(y[~labeled], pred)
        row["f1_positive"] = 100.0 * f1_positive(y[~labeled], pred)
    return row


def tables_markdown(runs: pd.DataFrame) -> str:
    """Per kernel: mean F (paper's majority-class F1 and positive-class F1) per data set and λ,
    the paper's [7] and USMO beside them, and max |Δobjective| / |full QP| over the repeats."""
    ref = runs[runs.method == "full-clarabel"].set_index(["data", "kernel", "lam", "repeat"])
    out = []
    for kind, group in runs.groupby("kernel", sort=False):
        title = "Table III (linear)" if kind == "linear" else "Table IV (Gaussian, γ = 0.5)"
        out.append(
            f"**{title}** — F-measure (%) on the unlabeled rows, mean over repeats: the paper's "
            "majority-class F1 (first five columns) and the positive-class F1 (F1+); Δobj = "
            "|objective − full QP| / |full QP|\n\n"
            "| data | λ | full QP | USMO | AID | paper [7] | paper USMO | "
            "full QP F1+ | AID F1+ | max Δobj AID | max Δobj USMO |\n"
            "|---|---|---|---|---|---|---|---|---|---|---|"
        )
        for (name, lam), cell in group.groupby(["data", "lam"], sort=False):
            mean = cell.groupby("method")[["f1_paper", "f1_positive"]].mean()
            paper = PAPER[kind][name][LAMBDAS.index(lam)] if lam in LAMBDAS else (np.nan,) * 2
            deltas = {}
            for method in ("aid-usmo", "usmo"):
                sub = cell[cell.method == method].set_index(["data", "kernel", "lam", "repeat"])
                base = ref.loc[sub.index, "objective"]
                deltas[method] = float(((sub.objective - base).abs() / base.abs()).max())
            out.append(
                f"| {name} | {lam:g} | {_f(mean, 'full-clarabel')} | {_f(mean, 'usmo')} | "
                f"{_f(mean, 'aid-usmo')} | {paper[0]:.1f} | {paper[1]:.1f} | "
                f"{_f(mean, 'full-clarabel', 'f1_positive')} | "
                f"{_f(mean, 'aid-usmo', 'f1_positive')} | {deltas['aid-usmo']:.1e} | "
                f"{deltas['usmo']:.1e} |"
            )
        out.extend(_average_rows(group, kind))
        out.append("")
    return "\n".join(out)


def _average_rows(group: pd.DataFrame, kind: str) -> list[str]:
    """Per λ: the mean over the data sets of the per-set mean F (the paper's "Avg." row)."""
    rows = []
    for lam, cell in group.groupby("lam", sort=False):
        per_set = cell.groupby(["method", "data"])[["f1_paper", "f1_positive"]].mean()
        mean = per_set.groupby("method").mean()
        names = cell.data.unique()
        paper = [
            np.mean([PAPER[kind][n][LAMBDAS.index(lam)][k] for n in names])
            if lam in LAMBDAS
            else np.nan
            for k in (0, 1)
        ]
        rows.append(
            f"| **Avg.** ({len(names)} sets) | {lam:g} | {_f(mean, 'full-clarabel')} | "
            f"{_f(mean, 'usmo')} | {_f(mean, 'aid-usmo')} | {paper[0]:.1f} | {paper[1]:.1f} | "
            f"{_f(mean, 'full-clarabel', 'f1_positive')} | "
            f"{_f(mean, 'aid-usmo', 'f1_positive')} | | |"
        )
    return rows


def _f(mean: pd.DataFrame, method: str, column: str = "f1_paper") -> str:
    return "" if method not in mean.index else f"{mean.loc[method, column]:.1f}"


# ---------------------------------------------------------------------- (b) scaling
def run_method(
    method: str, instance: str, prior: float, lam: float, kind: str, time_limit: float
) -> dict[str, Any]:
    """One scaling run (called in a fresh process by the worker); f is dropped."""
    data = np.load(instance)
    kernel = Kernel("linear") if kind == "linear" else Kernel("rbf")
    out = fit(method, data["X"], data["labeled"], prior, lam, kernel, time_limit)
    out.pop("f", None)
    return out


def run_scaling(args: argparse.Namespace) -> pd.DataFrame:
    methods = _names(args.methods, tuple(METHODS))
    rows = []
    with tempfile.TemporaryDirectory(prefix="aidopt-bench-pu-") as tmp:
        for kind in _names(args.kernels, ("linear", "rbf")):
            sizes = args.sizes_linear if kind == "linear" else args.sizes_rbf
            timed_out: set[str] = set()
            for n in sizes:
                X, _, labeled, prior = make_pu(n, args.m, seed=args.seed)
                instance = Path(tmp) / f"pu_{n}.npz"
                np.savez(instance, X=X, labeled=labeled)
                for method in methods:
                    if method in timed_out:
                        rows.append({"kernel": kind, "n": n, "method": method, "status": "skipped"})
                        continue
                    res = run_isolated(
                        "aidopt.bench.pu:run_method",
                        {
                            "method": method,
                            "instance": str(instance),
                            "prior": prior,
                            "lam": args.lam,
                            "kind": kind,
                            "time_limit": args.time_limit,
                        },
                        timeout=args.time_limit + 60,
                    )
                    stop = ("timeout", "time_limit", "solver_limit")
                    if res.get("status") in stop or (
                        method.startswith("full-") and res.get("status") != "optimal"
                    ):
                        timed_out.add(method)  # a larger n will not fit either
                    print(
                        f"{kind} n={n} {method}: {res.get('status')} "
                        f"{res.get('seconds') or float('nan'):.2f} s",
                        file=sys.stderr,
                    )
                    rows.append({"kernel": kind, "n": n, "method": method, **res})
                instance.unlink()
    return pd.DataFrame(rows)


def scaling_markdown(runs: pd.DataFrame) -> str:
    """Seconds, peak memory, Δ objective vs the reference (the full QP on Clarabel, else USMO),
    the speed-up against the fastest full QP that returned an optimum at that n and against the
    full QP on HiGHS when it did."""
    lines = [
        "| kernel | n | method | status | seconds | peak MB | Δobj vs reference | "
        "speed-up vs fastest full QP | vs full HiGHS | AID iters | r^T |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    # a "skipped" row is superseded by a run of the same method and n from a later chunk
    measured = runs[runs.status != "skipped"].set_index(["kernel", "n", "method"]).index
    keys = runs.set_index(["kernel", "n", "method"]).index
    runs = runs[(runs.status != "skipped").to_numpy() | ~keys.isin(measured)]
    order = {m: i for i, m in enumerate(METHODS)}
    for (kind, n), group in runs.groupby(["kernel", "n"], sort=False):
        group = group.sort_values("method", key=lambda m: m.map(order), kind="stable")
        ok = group[group.status == "optimal"].set_index("method")
        ref = next((m for m in ("full-clarabel", "usmo") if m in ok.index), None)
        full = ok[ok.index.str.startswith("full-")]
        fastest = full.seconds.idxmin() if len(full) else None
        for _, r in group.iterrows():
            delta = speed = vs_highs = ""
            if r.status == "optimal" and ref is not None:
                base = ok.loc[ref, "objective"]
                delta = f"{abs(r.objective - base) / abs(base):.1e} ({ref})"
            if r.status == "optimal" and fastest is not None and r.method != fastest:
                speed = f"{ok.loc[fastest, 'seconds'] / r.seconds:.1f}× ({fastest})"
            if r.status == "optimal" and "full-highs" in ok.index and r.method != "full-highs":
                vs_highs = f"{ok.loc['full-highs', 'seconds'] / r.seconds:.1f}×"
            lines.append(
                f"| {kind} | {n:,} | {r.method} | {r.status} | {_num(r.get('seconds'), '.2f')} | "
                f"{_num(r.get('peak_mb'), '.0f')} | {delta} | {speed} | {vs_highs} | "
                f"{_num(r.get('iterations') if r.method.startswith('aid') else None, '.0f')} | "
                f"{_num(r.get('final_rate') if r.method.startswith('aid') else None, '.2%')} |"
            )
    return "\n".join(lines) + "\n"


def scaling_plot(runs: pd.DataFrame, path: Path) -> None:
    """Seconds against n (log–log), one panel per kernel, optimal runs only."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ok = runs[runs.status == "optimal"]
    kinds = list(dict.fromkeys(ok.kernel))
    fig, axes = plt.subplots(1, len(kinds), figsize=(5 * len(kinds), 4), constrained_layout=True)
    for ax, kind in zip(np.atleast_1d(axes), kinds, strict=True):
        for method, sub in ok[ok.kernel == kind].groupby("method", sort=False):
            sub = sub.sort_values("n")
            color = f"C{list(METHODS).index(method)}"  # one colour per method in both panels
            ax.loglog(sub.n, sub.seconds, marker="o", label=method, color=color)
        ax.set_title(f"PU, {kind} kernel: optimal runs")
        ax.set_xlabel("n (rows)")
        ax.set_ylabel("training seconds")
        ax.legend(fontsize=8)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _num(value, fmt: str) -> str:
    return (
        ""
        if value is None or (isinstance(value, float) and math.isnan(value))
        else format(value, fmt)
    )


# ---------------------------------------------------------------------- CLI
def _names(text: str | None, known: tuple[str, ...]) -> list[str]:
    if text is None:
        return list(known)
    return parse_choice_list(text, known, "name")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--part", choices=("tables", "scaling", "all"), default="all")
    parser.add_argument("--kernels", default=None, help="linear,rbf (default both)")
    parser.add_argument("--datasets", default=None, help="UCI sets for --part tables (all)")
    parser.add_argument(
        "--lambdas", type=parse_float_list, default=list(LAMBDAS), help="tables: λ list"
    )
    parser.add_argument("--gamma", type=float, default=0.5, help="tables: rbf γ (0.5 = scale 1)")
    parser.add_argument("--repeats", type=int, default=3, help="tables: random splits (3)")
    parser.add_argument(
        "--sizes-linear",
        type=parse_int_list,
        default=[1000, 2000, 5000, 10000, 20000, 50000, 100000],
        help="scaling: n for the linear kernel",
    )
    parser.add_argument(
        "--sizes-rbf",
        type=parse_int_list,
        default=[1000, 2000, 5000, 10000, 20000],
        help="scaling: n for the rbf kernel (γ = 1/m)",
    )
    parser.add_argument("--m", type=int, default=10, help="scaling: features (10)")
    parser.add_argument("--lam", type=float, default=0.01, help="scaling: λ (0.01, the paper's)")
    parser.add_argument("--methods", default=None, help=f"scaling: subset of {', '.join(METHODS)}")
    parser.add_argument("--seed", type=int, default=0, help="first seed")
    parser.add_argument("--time-limit", type=float, default=600.0, help="seconds per run (600)")
    parser.add_argument("--out", type=Path, default=Path("bench-out"), help="output folder")
    parser.add_argument(
        "--append",
        action="store_true",
        help="add the runs to the CSV already in --out and rebuild its table from all rows "
        "(run the grid in chunks)",
    )


def _save(runs: pd.DataFrame, args: argparse.Namespace, stem: str, markdown) -> pd.DataFrame:
    """Write ``stem``.csv/.md in --out; with --append the rows already there are kept."""
    previous = args.out / f"{stem}.csv"
    if args.append and previous.is_file():
        runs = pd.concat([pd.read_csv(previous), runs], ignore_index=True)
    write_outputs(runs, args.out, stem)
    text = markdown(runs)
    (args.out / f"{stem}.md").write_text(text)
    print(text)
    return runs


def run(args: argparse.Namespace) -> int:
    if args.part in ("tables", "all"):
        _save(run_tables(args), args, "pu_tables", tables_markdown)
    if args.part in ("scaling", "all"):
        runs = _save(run_scaling(args), args, "pu_scaling", scaling_markdown)
        scaling_plot(runs, args.out / "pu_scaling.png")
    print(f"wrote the pu_* tables to {args.out}", file=sys.stderr)
    return 0
