"""LAD benchmark: AID and Frisch–Newton against R quantreg's fn, the full LP and scikit-learn.

``aidopt bench lad --sizes 100000x10,400000x100 --repeats 3 --out bench-out`` generates the
instances (paper style, Laplace noise, intercept), runs every method on each in its own process
with a time limit (``--time-limit``, per method ``--method-time-limit quantreg-fn=400``), and
writes ``lad_runs.csv`` (one row per run), ``lad_summary.csv`` and ``lad_summary.md`` (means over
repeats: times, ρ = T_method / T_reference, Δ = relative objective difference, r^0, r^T, T, peak
memory, status) and ``lad_times.png``. ``--append`` adds the new runs to the ``lad_runs.csv``
already in ``--out`` (one grid row per invocation) and summarises them all.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from aidopt.bench.common import parse_choice_list, parse_sizes, run_isolated, write_outputs
from aidopt.data.lad import make_lad

METHODS: dict[str, str] = {
    "aid-fn": "AID, Frisch-Newton on each aggregated problem (warm-started), default policy",
    "aid-highs": "AID, HiGHS dual simplex on the aggregated LP (basis warm start), default policy",
    "aid-fn-paper": "AID, Frisch-Newton inner solver, paper policy (k-means init, sign split)",
    "full-fn": "aidopt's Frisch-Newton on the full data",
    "full-highs-simplex": "full LP, HiGHS dual simplex (matrix path, LP dual form)",
    "full-highs-ipm": "full LP, HiGHS interior point (matrix path, LP dual form)",
    "sklearn": "scikit-learn QuantileRegressor(quantile=0.5, alpha=0, solver='highs')",
    "quantreg-fn": "R quantreg rq.fit.fnb (Frisch-Newton interior point), the paper's benchmark",
}
REFERENCES = ("quantreg-fn", "full-fn", "full-highs-ipm", "full-highs-simplex", "sklearn")

_R_SCRIPT = r"""
args <- commandArgs(TRUE)
n <- as.integer(args[3]); m <- as.integer(args[4])
con <- file(args[1], "rb"); X <- matrix(readBin(con, "double", n * m), nrow = n); close(con)
con <- file(args[2], "rb"); y <- readBin(con, "double", n); close(con)
suppressPackageStartupMessages(library(quantreg))
Z <- cbind(1, X)
t <- system.time(f <- rq.fit.fnb(Z, y))
cat(sprintf("%.6f %.17g\n", t[["elapsed"]], sum(abs(f$residuals))))
"""


def r_quantreg_available() -> bool:
    if shutil.which("Rscript") is None:
        return False
    probe = subprocess.run(
        ["Rscript", "-e", "suppressPackageStartupMessages(library(quantreg))"],
        capture_output=True,
    )
    return probe.returncode == 0


# ---------------------------------------------------------------------- one run (in a worker)
def run_method(method: str, instance: str, time_limit: float, tol: float = 1e-6) -> dict[str, Any]:
    """Fit one method on one instance (called in a fresh process by the worker)."""
    base = Path(instance)
    X = np.load(base.with_suffix(".X.npy"))
    y = np.load(base.with_suffix(".y.npy"))
    if method == "quantreg-fn":
        return _run_quantreg(base, *X.shape, time_limit)
    if method == "sklearn":
        from sklearn.linear_model import QuantileRegressor

        start = time.perf_counter()
        fit = QuantileRegressor(quantile=0.5, alpha=0.0, solver="highs").fit(X, y)
        seconds = time.perf_counter() - start
        objective = float(np.abs(y - fit.predict(X)).sum())
        return {"status": "optimal", "seconds": seconds, "objective": objective}
    return _run_aidopt(method, X, y, time_limit, tol)


def _run_aidopt(method: str, X, y, time_limit: float, tol: float) -> dict[str, Any]:
    from aidopt.driver import AIDSolver
    from aidopt.exceptions import SolverError
    from aidopt.models.lad import LADData, LADModel

    data = LADData.from_arrays(X, y)
    options = {"solver": "ipm"} if method == "full-highs-ipm" else None
    model = LADModel(init="kmeans", split="sign") if method == "aid-fn-paper" else LADModel()
    solver = AIDSolver(
        model,
        solver="fn" if method.endswith(("-fn", "-fn-paper")) else "highs",
        solver_options=options,
        time_limit=time_limit,
        tol=tol,
    )
    try:
        result = solver.solve(data) if method.startswith("aid") else solver.solve_full(data)
    except SolverError as exc:  # the first (for full: the only) solve hit the time limit
        if "time_limit" not in str(exc):
            raise
        return {"status": "timeout", "seconds": None, "message": str(exc)}
    return {
        "status": result.status.value,
        "certified": result.certified,
        "seconds": result.seconds,
        "objective": result.objective,
        "lower_bound": result.lower_bound,
        "iterations": result.iterations,
        "initial_rate": result.records[0].rate,
        "final_rate": result.final_rate,
    }


def _run_quantreg(base: Path, n: int, m: int, time_limit: float) -> dict[str, Any]:
    with tempfile.NamedTemporaryFile("w", suffix=".R", delete=False) as script:
        script.write(_R_SCRIPT)
    command = ["Rscript", script.name, str(base.with_suffix(".X.bin"))]
    command += [str(base.with_suffix(".y.bin")), str(n), str(m)]
    try:
        out = subprocess.run(command, capture_output=True, text=True, timeout=time_limit)
    except subprocess.TimeoutExpired:  # reading the data counts: R got `time_limit` in all
        return {"status": "timeout", "seconds": None, "objective": None}
    finally:
        Path(script.name).unlink()
    if out.returncode != 0:
        return {"status": "error", "seconds": None, "message": out.stderr[-500:]}
    seconds, objective = out.stdout.split()
    return {"status": "optimal", "seconds": float(seconds), "objective": float(objective)}


# ---------------------------------------------------------------------- the benchmark
def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--sizes",
        default="100000x10,100000x100,400000x10,400000x100",
        help="comma-separated NxM list (default: %(default)s)",
    )
    parser.add_argument("--repeats", type=int, default=1, help="instances per size (seeds)")
    parser.add_argument("--seed", type=int, default=0, help="first seed")
    parser.add_argument(
        "--methods",
        default=None,
        help=f"comma-separated subset of {', '.join(METHODS)} (default: all available)",
    )
    parser.add_argument(
        "--time-limit", type=float, default=600.0, help="seconds per run (default 600)"
    )
    parser.add_argument(
        "--method-time-limit",
        default="",
        help="per-method limits overriding --time-limit, e.g. quantreg-fn=400,sklearn=120",
    )
    parser.add_argument(
        "--tol", type=float, default=1e-6, help="AID relative gap tolerance (default 1e-6)"
    )
    parser.add_argument("--out", type=Path, default=Path("bench-out"), help="output folder")
    parser.add_argument(
        "--append", action="store_true", help="add to the lad_runs.csv already in --out"
    )


def run(args: argparse.Namespace) -> int:
    methods = _methods(args.methods)
    limits = _method_limits(args.method_time_limit, args.time_limit)
    sizes = parse_sizes(args.sizes)
    rows = []
    total = len(sizes) * args.repeats * len(methods)
    done = 0
    with tempfile.TemporaryDirectory(prefix="aidopt-bench-") as tmp:
        for n, m in sizes:
            for rep in range(args.repeats):
                seed = args.seed + rep
                instance = _write_instance(Path(tmp), n, m, seed)
                for method in methods:
                    done += 1
                    print(
                        f"[{done}/{total}] n={n} m={m} seed={seed} {method} ...",
                        end="",
                        file=sys.stderr,
                        flush=True,
                    )
                    limit = limits.get(method, args.time_limit)
                    res = run_isolated(
                        "aidopt.bench.lad:run_method",
                        {
                            "method": method,
                            "instance": str(instance),
                            "time_limit": limit,
                            "tol": args.tol,
                        },
                        timeout=limit + 60,
                    )
                    print(
                        f" {res.get('status')} {res.get('seconds') or float('nan'):.3f} s",
                        file=sys.stderr,
                    )
                    res["time_limit"] = limit
                    rows.append({"n": n, "m": m, "seed": seed, "method": method, **res})
                for suffix in (".X.npy", ".y.npy", ".X.bin", ".y.bin"):
                    instance.with_suffix(suffix).unlink(missing_ok=True)
    runs = pd.DataFrame(rows)
    previous = args.out / "lad_runs.csv"
    if args.append and previous.exists():
        old = pd.read_csv(previous)
        runs = pd.concat([old[[c for c in old if not c.startswith(("rho_", "delta"))]], runs])
        runs = runs.drop(columns=["reference"], errors="ignore").reset_index(drop=True)
    runs = add_ratios(runs)
    summary = summarize(runs)
    write_outputs(runs, args.out, "lad_runs")
    write_outputs(summary, args.out, "lad_summary")
    (args.out / "lad_summary.md").write_text(summary_markdown(summary))
    plot(runs, args.out / "lad_times.png")
    print(summary_markdown(summary))
    print(
        f"wrote {args.out}/lad_runs.csv, lad_summary.csv, lad_summary.md, lad_times.png",
        file=sys.stderr,
    )
    return 0


def _methods(text: str | None) -> list[str]:
    if text is None:
        chosen = list(METHODS)
        if not r_quantreg_available():
            print(
                "Rscript with quantreg not found: skipping quantreg-fn "
                "(Debian: apt-get install r-cran-quantreg)",
                file=sys.stderr,
            )
            chosen.remove("quantreg-fn")
        return chosen
    return parse_choice_list(text, METHODS, "method")


def _method_limits(text: str, default: float) -> dict[str, float]:
    limits = {}
    for item in filter(None, (t.strip() for t in text.split(","))):
        name, _, value = item.partition("=")
        if name not in METHODS or not value:
            raise SystemExit(f"--method-time-limit: expected METHOD=SECONDS, got {item!r}")
        limits[name] = float(value)
    return limits


def _write_instance(folder: Path, n: int, m: int, seed: int) -> Path:
    X, y, _, _ = make_lad(n, m, seed=seed)
    base = folder / f"lad_{n}_{m}_{seed}"
    np.save(base.with_suffix(".X.npy"), X)
    np.save(base.with_suffix(".y.npy"), y)
    X.T.tofile(base.with_suffix(".X.bin"))  # column-major for R
    y.tofile(base.with_suffix(".y.bin"))
    return base


def add_ratios(runs: pd.DataFrame) -> pd.DataFrame:
    """Per instance: Δ vs the reference method's objective and ρ vs every baseline present."""
    out = []
    for _, group in runs.groupby(["n", "m", "seed"], sort=False):
        g = group.copy()
        ok = g[g["status"].isin(["optimal", "gap"])].set_index("method")
        ref = next((r for r in REFERENCES if r in ok.index), None)
        g["reference"] = ref
        g["delta"] = (
            (g["objective"] - ok.loc[ref, "objective"]) / ok.loc[ref, "objective"]
            if ref
            else np.nan
        )
        for base in REFERENCES:
            if base in ok.index:
                g[f"rho_{base}"] = g["seconds"] / ok.loc[base, "seconds"]
        out.append(g)
    return pd.concat(out, ignore_index=True)


def summarize(runs: pd.DataFrame) -> pd.DataFrame:
    cols = [
        c
        for c in [
            "seconds",
            "objective",
            "delta",
            "iterations",
            "initial_rate",
            "final_rate",
            "peak_mb",
            "time_limit",
            *[f"rho_{b}" for b in REFERENCES],
        ]
        if c in runs
    ]
    grouped = runs.groupby(["n", "m", "method"], sort=False)
    summary = grouped[cols].mean(numeric_only=True)
    summary["seconds_std"] = grouped["seconds"].std(ddof=0)
    summary["runs"] = grouped.size()
    summary["ok"] = grouped["status"].apply(lambda s: int(s.isin(["optimal", "gap"]).sum()))
    summary["status"] = grouped["status"].apply(lambda s: "/".join(sorted(set(s.astype(str)))))
    if "certified" in runs:
        summary["certified"] = grouped["certified"].apply(lambda s: int((s == True).sum()))  # noqa: E712
    return summary.reset_index().sort_values(["n", "m"], kind="stable", ignore_index=True)


def summary_markdown(summary: pd.DataFrame) -> str:
    """One line per (n, m, method), the paper's Table 2 columns (ρ = T / T_baseline)."""
    head = (
        "| n | m | method | status | seconds | ρ vs R fn | ρ vs full FN | ρ vs HiGHS IPM | "
        "ρ vs sklearn | Δ | r^0 | r^T | T | peak MB |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    )
    lines = [head]

    def pct(v):
        return "" if pd.isna(v) else f"{100 * v:.2f}%"

    def num(v, fmt):
        return "" if pd.isna(v) else format(v, fmt)

    for _, r in summary.iterrows():
        status = r.status
        if r.get("certified", 0) and r.status == "optimal":
            status = "certified"
        limit = r.get("time_limit")
        seconds = f"> {limit:g}" if r.status == "timeout" and not pd.isna(limit) else ""
        lines.append(
            f"| {r.n:,} | {r.m} | {r.method} | {status} | {seconds or num(r.seconds, '.2f')} | "
            f"{num(r.get('rho_quantreg-fn'), '.3f')} | {num(r.get('rho_full-fn'), '.2f')} | "
            f"{num(r.get('rho_full-highs-ipm'), '.3f')} | {num(r.get('rho_sklearn'), '.3f')} | "
            f"{num(r.get('delta'), '.1e')} | {pct(r.get('initial_rate'))} | "
            f"{pct(r.get('final_rate'))} | {num(r.get('iterations'), '.0f')} | "
            f"{num(r.get('peak_mb'), '.0f')} |"
        )
    return "\n".join(lines) + "\n"


def plot(runs: pd.DataFrame, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ok = runs[runs["status"].isin(["optimal", "gap"])]
    table = ok.groupby(["n", "m", "method"])["seconds"].mean().unstack("method")
    fig, ax = plt.subplots(figsize=(9, 4.5), constrained_layout=True)
    table.plot(kind="bar", ax=ax, logy=True)
    ax.set_xticklabels([f"{n:,}×{m}" for n, m in table.index], rotation=0)
    ax.set_xlabel("instance (n × m)")
    ax.set_ylabel("seconds (log scale)")
    ax.set_title("LAD: AID vs full-data solvers (mean over repeats)")
    fig.savefig(path, dpi=120)
    plt.close(fig)
