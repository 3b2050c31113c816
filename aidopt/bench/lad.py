"""LAD benchmark: AID against the full LP (HiGHS), scikit-learn and R quantreg's Frisch–Newton.

``aidopt bench lad --sizes 100000x10,400000x100 --repeats 3 --out bench-out`` generates the
instances (paper style, Laplace noise, intercept), runs every method on each in its own process
with a time limit, and writes ``lad_runs.csv`` (one row per run), ``lad_summary.csv`` and
``lad_summary.md`` (means over repeats: times, ρ = T_method / T_reference, Δ = relative objective
difference, r^0, r^T, T, peak memory) and ``lad_times.png``.
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

from aidopt.bench.common import parse_sizes, run_isolated, write_outputs
from aidopt.data.lad import make_lad

METHODS: dict[str, str] = {
    "aid-highs": "AID, HiGHS dual simplex on the aggregated LP (matrix path, warm-started)",
    "full-highs-simplex": "full LP, HiGHS dual simplex (matrix path, LP dual form)",
    "full-highs-ipm": "full LP, HiGHS interior point (matrix path, LP dual form)",
    "sklearn": "scikit-learn QuantileRegressor(quantile=0.5, alpha=0, solver='highs')",
    "quantreg-fn": "R quantreg rq.fit.fnb (Frisch-Newton interior point), the paper's benchmark",
}
REFERENCES = ("quantreg-fn", "full-highs-ipm", "full-highs-simplex", "sklearn")

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
def run_method(method: str, instance: str, time_limit: float) -> dict[str, Any]:
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
    return _run_aidopt(method, X, y, time_limit)


def _run_aidopt(method: str, X, y, time_limit: float) -> dict[str, Any]:
    from aidopt.driver import AIDSolver
    from aidopt.models.lad import LADData, LADModel

    data = LADData.from_arrays(X, y)
    options = {"solver": "ipm"} if method == "full-highs-ipm" else None
    solver = AIDSolver(LADModel(), solver="highs", solver_options=options, time_limit=time_limit)
    result = solver.solve(data) if method.startswith("aid") else solver.solve_full(data)
    return {
        "status": result.status.value,
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
    out = subprocess.run(
        [
            "Rscript",
            script.name,
            str(base.with_suffix(".X.bin")),
            str(base.with_suffix(".y.bin")),
            str(n),
            str(m),
        ],
        capture_output=True,
        text=True,
        timeout=time_limit,
        check=True,
    )
    Path(script.name).unlink()
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
    parser.add_argument("--out", type=Path, default=Path("bench-out"), help="output folder")


def run(args: argparse.Namespace) -> int:
    methods = _methods(args.methods)
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
                    res = run_isolated(
                        "aidopt.bench.lad:run_method",
                        {
                            "method": method,
                            "instance": str(instance),
                            "time_limit": args.time_limit,
                        },
                        timeout=args.time_limit + 60,
                    )
                    print(
                        f" {res.get('status')} {res.get('seconds') or float('nan'):.3f} s",
                        file=sys.stderr,
                    )
                    rows.append({"n": n, "m": m, "seed": seed, "method": method, **res})
                for suffix in (".X.npy", ".y.npy", ".X.bin", ".y.bin"):
                    instance.with_suffix(suffix).unlink(missing_ok=True)
    runs = add_ratios(pd.DataFrame(rows))
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
    chosen = [t.strip() for t in text.split(",") if t.strip()]
    unknown = [t for t in chosen if t not in METHODS]
    if unknown:
        raise SystemExit(f"unknown method(s): {', '.join(unknown)}; known: {', '.join(METHODS)}")
    return chosen


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
            *[f"rho_{b}" for b in REFERENCES],
        ]
        if c in runs
    ]
    grouped = runs.groupby(["n", "m", "method"], sort=False)
    summary = grouped[cols].mean(numeric_only=True)
    summary["seconds_std"] = grouped["seconds"].std(ddof=0)
    summary["runs"] = grouped.size()
    summary["ok"] = grouped["status"].apply(lambda s: int(s.isin(["optimal", "gap"]).sum()))
    return summary.reset_index()


def summary_markdown(summary: pd.DataFrame) -> str:
    """One line per (n, m, method), the paper's Table 2 columns."""
    head = (
        "| n | m | method | r^0 | r^T | T | seconds | Δ | ρ vs fn | ρ vs HiGHS IPM | "
        "peak MB | ok/runs |\n|---|---|---|---|---|---|---|---|---|---|---|---|"
    )
    lines = [head]

    def pct(v):
        return "" if pd.isna(v) else f"{100 * v:.3f}%"

    def num(v, fmt):
        return "" if pd.isna(v) else format(v, fmt)

    for _, r in summary.iterrows():
        lines.append(
            f"| {r.n:,} | {r.m} | {r.method} | {pct(r.get('initial_rate'))} | "
            f"{pct(r.get('final_rate'))} | {num(r.get('iterations'), '.1f')} | "
            f"{num(r.seconds, '.3f')} | {num(r.get('delta'), '.1e')} | "
            f"{num(r.get('rho_quantreg-fn'), '.2f')} | {num(r.get('rho_full-highs-ipm'), '.2f')} | "
            f"{num(r.get('peak_mb'), '.0f')} | {r.ok}/{r.runs} |"
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
