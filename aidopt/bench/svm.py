"""SVM benchmark: AID against libsvm, liblinear and the full QP, each on the same solver.

``aidopt bench svm --sizes 30000x10,50000x50 --repeats 3 --out bench-out`` generates the
instances (``aidopt.data.svm.make_svm``: two overlapping Gaussian classes), runs every method on
each in its own process with a time limit, and writes (``--append``: add to the runs already in
``--out``, so that a grid can be run one cell per invocation)

* ``svm_runs.csv``: one row per run (status, seconds, objective E of (7), training accuracy,
  lower bound, gap, r^0, r^T, T, support-vector share of the library fits, peak memory);
* ``svm_summary.csv`` / ``svm_summary.md``: per (n, m, pair) the paper's Table 3 columns —
  r^0, r^T, T, T_AID and T_base (mean and std), Γ (training-accuracy difference), Δ (relative
  objective difference) and ρ = T_AID / T_base (mean and std);
* ``svm_figure6.png``: times and ρ against n, one line per m (the paper's Figure 6).

Pairs (AID uses the same library or solver for its aggregated problems as its baseline):
aid-libsvm / libsvm, aid-liblinear / liblinear, aid-highs / full-highs, aid-gurobi / full-gurobi.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from aidopt.bench.common import parse_choice_list, parse_sizes, run_isolated, write_outputs
from aidopt.data.svm import make_svm

METHODS: dict[str, str] = {
    "aid-libsvm": "AID, aggregated problems by libsvm (SVC, sample_weight = |C_k|)",
    "libsvm": "scikit-learn SVC(kernel='linear', C=M) on the full data, the paper's benchmark",
    "aid-liblinear": "AID, aggregated problems by liblinear (LinearSVC, hinge, max_iter 1e5)",
    "liblinear": "scikit-learn LinearSVC(loss='hinge', C=M, tol=1e-3, max_iter=100000), full data",
    "aid-highs": "AID, aggregated dual QP by HiGHS (matrix path)",
    "full-highs": "the full dual QP by HiGHS (matrix path, singleton clusters)",
    "aid-gurobi": "AID, aggregated dual QP by Gurobi (pip licence: ≤ 200 QP variables)",
    "full-gurobi": "the full dual QP by Gurobi",
}
PAIRS: dict[str, str] = {
    "aid-libsvm": "libsvm",
    "aid-liblinear": "liblinear",
    "aid-highs": "full-highs",
    "aid-gurobi": "full-gurobi",
}
_OK = ("optimal", "gap")
_GRACE = 30.0  # s over --time-limit before a run is killed (the libraries have no time limit)


# ---------------------------------------------------------------------- one run (in a worker)
def run_method(
    method: str, instance: str, M: float, tol: float, time_limit: float
) -> dict[str, Any]:
    """Fit one method on one instance (called in a fresh process by the worker)."""
    base = Path(instance)
    X = np.load(base.with_suffix(".X.npy"))
    y = np.load(base.with_suffix(".y.npy"))
    if method in ("libsvm", "liblinear"):
        return _run_library(method, X, y, M)
    return _run_aidopt(method, X, y, M, tol, time_limit)


def _primal(X, y, M, w, b) -> tuple[float, float]:
    """E of (7) and the training accuracy at (w, b)."""
    f = X @ w + b
    objective = 0.5 * float(w @ w) + M * float(np.maximum(0.0, 1.0 - y * f).sum())
    return objective, float(np.mean(np.where(f > 0, 1.0, -1.0) == y))


def _run_library(method: str, X, y, M: float) -> dict[str, Any]:
    from sklearn.svm import SVC, LinearSVC

    if method == "libsvm":
        fit = SVC(kernel="linear", C=M)
    else:
        fit = LinearSVC(loss="hinge", C=M, tol=1e-3, max_iter=100_000, random_state=0)
    start = time.perf_counter()
    fit.fit(X, y)
    seconds = time.perf_counter() - start
    objective, accuracy = _primal(X, y, M, fit.coef_[0], float(fit.intercept_[0]))
    out = {"status": "optimal", "seconds": seconds, "objective": objective, "accuracy": accuracy}
    if method == "libsvm":
        out["sv_share"] = len(fit.support_) / len(y)
    else:
        out["n_iter"] = int(np.max(fit.n_iter_))
        if out["n_iter"] >= 100_000:
            out["status"] = "iteration_limit"
    return out


def _run_aidopt(method: str, X, y, M: float, tol: float, time_limit: float) -> dict[str, Any]:
    import warnings

    from aidopt.driver import AIDSolver
    from aidopt.exceptions import AidoptError, SolverLicenseError
    from aidopt.models.svm import SVMData, SVMModel

    data = SVMData.from_arrays(X, y)
    solver = AIDSolver(SVMModel(M=M), solver=method.split("-")[1], tol=tol, time_limit=time_limit)
    start = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = solver.solve(data) if method.startswith("aid") else solver.solve_full(data)
    except AidoptError as exc:  # Gurobi's size-limited licence, HiGHS failing on the first QP
        return {
            "status": "solver_limit" if isinstance(exc, SolverLicenseError) else "error",
            "seconds": time.perf_counter() - start,
            "message": str(exc)[:200],
        }
    objective, accuracy = _primal(X, y, M, result.solution.w, result.solution.b)
    return {
        "status": result.status.value,
        "seconds": result.seconds,
        "objective": objective,
        "accuracy": accuracy,
        "lower_bound": result.lower_bound,
        "gap": result.gap,
        "iterations": result.iterations,
        "initial_rate": result.records[0].rate,
        "final_rate": result.final_rate,
        "message": result.message[:200],
    }


# ---------------------------------------------------------------------- the benchmark
def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--sizes",
        default="30000x10,30000x50,30000x90,50000x10,50000x50,50000x90",
        help="comma-separated NxM list (default: %(default)s)",
    )
    parser.add_argument("--repeats", type=int, default=3, help="instances per size (seeds)")
    parser.add_argument("--seed", type=int, default=0, help="first seed")
    parser.add_argument(
        "--methods",
        default="aid-libsvm,libsvm,aid-liblinear,liblinear",
        help=f"comma-separated subset of {', '.join(METHODS)} (default: %(default)s)",
    )
    parser.add_argument("--M", type=float, default=0.1, help="penalty M (the paper: 0.1)")
    parser.add_argument(
        "--tol", type=float, default=1e-4, help="AID gap tolerance (the paper's SVM ε, 1e-4)"
    )
    parser.add_argument(
        "--separation", type=float, default=2.0, help="class separation of the generator (2.0)"
    )
    parser.add_argument(
        "--time-limit",
        type=float,
        default=900.0,
        help="seconds per run (default 900); AID stops itself, a library run is killed 30 s later",
    )
    parser.add_argument("--out", type=Path, default=Path("bench-out"), help="output folder")
    parser.add_argument(
        "--append",
        action="store_true",
        help="keep the runs already in OUT/svm_runs.csv and summarise them with the new ones",
    )


def run(args: argparse.Namespace) -> int:
    methods = parse_choice_list(args.methods, METHODS, "method")
    sizes = parse_sizes(args.sizes)
    previous = args.out / "svm_runs.csv"
    rows = pd.read_csv(previous).to_dict("records") if args.append and previous.exists() else []
    total, done = len(sizes) * args.repeats * len(methods), 0
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="aidopt-bench-svm-") as tmp:
        for n, m in sizes:
            for rep in range(args.repeats):
                seed = args.seed + rep
                X, y = make_svm(n, m, seed=seed, separation=args.separation)
                instance = Path(tmp) / f"svm_{n}_{m}_{seed}"
                np.save(instance.with_suffix(".X.npy"), X)
                np.save(instance.with_suffix(".y.npy"), y)
                for method in methods:
                    done += 1
                    print(
                        f"[{done}/{total}] n={n} m={m} seed={seed} {method} ...",
                        end="",
                        file=sys.stderr,
                        flush=True,
                    )
                    res = run_isolated(
                        "aidopt.bench.svm:run_method",
                        {
                            "method": method,
                            "instance": str(instance),
                            "M": args.M,
                            "tol": args.tol,
                            "time_limit": args.time_limit,
                        },
                        timeout=args.time_limit + _GRACE,
                    )
                    print(
                        f" {res.get('status')} {res.get('seconds') or float('nan'):.3f} s",
                        file=sys.stderr,
                        flush=True,
                    )
                    rows.append({"n": n, "m": m, "seed": seed, "method": method, **res})
                    _save(rows, args.out)  # partial results survive an interrupted run
                for suffix in (".X.npy", ".y.npy"):
                    instance.with_suffix(suffix).unlink(missing_ok=True)
    summary = _save(rows, args.out)[1]
    if not summary.empty:
        plot(summary, args.out / "svm_figure6.png")
    print(summary_markdown(summary))
    print(
        f"wrote {args.out}/svm_runs.csv, svm_summary.csv, svm_summary.md, svm_figure6.png",
        file=sys.stderr,
    )
    return 0


def _save(rows: list[dict], out: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    runs = pd.DataFrame(rows)
    if not runs.empty:  # a re-run of (instance, method) replaces the earlier one
        runs = runs.drop_duplicates(["n", "m", "seed", "method"], keep="last")
    summary = summarize(runs)
    write_outputs(runs, out, "svm_runs")
    write_outputs(summary, out, "svm_summary")
    (out / "svm_summary.md").write_text(summary_markdown(summary))
    return runs, summary


def pair_table(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per (instance, pair) with both methods finished: ρ, Δ, Γ and AID's r^0, r^T, T."""
    out = []
    for (n, m, seed), group in runs.groupby(["n", "m", "seed"], sort=False):
        ok = group[group["status"].isin(_OK)].set_index("method")
        for aid, base in PAIRS.items():
            if aid not in ok.index or base not in ok.index:
                continue
            a, r = ok.loc[aid], ok.loc[base]
            out.append(
                {
                    "n": n,
                    "m": m,
                    "seed": seed,
                    "pair": f"{aid} vs {base}",
                    "initial_rate": a["initial_rate"],
                    "final_rate": a["final_rate"],
                    "iterations": a["iterations"],
                    "t_aid": a["seconds"],
                    "t_base": r["seconds"],
                    "rho": a["seconds"] / r["seconds"],
                    "delta": (a["objective"] - r["objective"]) / r["objective"],
                    "gamma": a["accuracy"] - r["accuracy"],
                    "aid_gap": a.get("gap"),
                    "sv_share": r.get("sv_share", np.nan),
                }
            )
    return pd.DataFrame(out)


def summarize(runs: pd.DataFrame) -> pd.DataFrame:
    """Mean (and std for times and ρ) over the instances of each (n, m, pair)."""
    pairs = pair_table(runs) if not runs.empty else pd.DataFrame()
    if pairs.empty:
        return pairs
    grouped = pairs.groupby(["n", "m", "pair"], sort=False)
    summary = grouped[
        [
            "initial_rate",
            "final_rate",
            "iterations",
            "t_aid",
            "t_base",
            "gamma",
            "delta",
            "rho",
            "sv_share",
        ]
    ].mean()
    for col in ("t_aid", "t_base", "rho"):
        summary[f"{col}_std"] = grouped[col].std(ddof=0)
    summary["instances"] = grouped.size()
    return summary.reset_index().sort_values(["n", "m"], kind="stable", ignore_index=True)


def summary_markdown(summary: pd.DataFrame) -> str:
    """The paper's Table 3 layout, one line per (n, m, pair)."""
    head = (
        "| n | m | pair | r^0 | r^T | T | T_AID (σ) | T_base (σ) | Γ | Δ | ρ (σ) | SV | inst. |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    )
    if summary.empty:
        return head + "\n"

    def pct(v, digits=2):
        return "" if pd.isna(v) else f"{100 * v:.{digits}f}%"

    lines = [head]
    for _, r in summary.iterrows():
        lines.append(
            f"| {r.n:,} | {r.m} | {r.pair} | {pct(r.initial_rate)} | {pct(r.final_rate)} | "
            f"{r.iterations:.1f} | {r.t_aid:.2f} ({r.t_aid_std:.2f}) | "
            f"{r.t_base:.2f} ({r.t_base_std:.2f}) | {pct(r.gamma)} | {pct(r.delta, 4)} | "
            f"{r.rho:.3f} ({r.rho_std:.3f}) | {pct(r.sv_share, 0)} | {r.instances} |"
        )
    return "\n".join(lines) + "\n"


def plot(summary: pd.DataFrame, path: Path) -> None:
    """Figure 6 of the paper: (a) times of AID and the baseline against n, (b) ρ against n."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pairs = list(dict.fromkeys(summary["pair"]))
    fig, axes = plt.subplots(
        len(pairs), 2, figsize=(10, 4 * len(pairs)), squeeze=False, constrained_layout=True
    )
    for row, pair in zip(axes, pairs, strict=True):
        part = summary[summary["pair"] == pair]
        aid, base = pair.split(" vs ")
        for m, g in part.groupby("m"):
            g = g.sort_values("n")
            line = row[0].plot(g["n"], g["t_aid"], "o-", label=f"{aid}, m={m}")[0]
            row[0].plot(g["n"], g["t_base"], "s--", color=line.get_color(), label=f"{base}, m={m}")
            row[1].plot(g["n"], g["rho"], "o-", color=line.get_color(), label=f"m={m}")
        row[0].set(xlabel="n", ylabel="seconds", yscale="log", title=f"(a) times: {pair}")
        row[1].set(xlabel="n", ylabel="ρ = T_AID / T_base", yscale="log", title=f"(b) ρ: {pair}")
        row[1].axhline(1.0, color="grey", lw=0.8)
        row[0].legend(fontsize=7)
        row[1].legend(fontsize=7)
    fig.savefig(path, dpi=120)
    plt.close(fig)
