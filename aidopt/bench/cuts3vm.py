"""CutS3VM benchmark: CutS3VM vs AID-S3VM (AID1/AID5) vs a supervised SVM on the SSL-book sets,
and CutS3VM's time against n (the O(sn) claim of Theorem 7).

``aidopt bench cuts3vm --sets digit1,text --labeled 10,100 --splits 0-11 --aid gurobi,highs``

Part 1 (accuracy and time). For every official split: CutS3VM over a (C_l, C_u) grid, each run in
its own time limit, the data scaled by one scalar so that the mean ‖x − μ_u‖ is 1 (the paper
does not say how it normalised; b = 2r − 1 is fixed and the margin is 1, so the scale matters),
r estimated from the labeled points (the paper used the true unlabeled ratio, an oracle);
AID-S3VM and the supervised SVM through ``aidopt.bench.s3vm.run_group`` on the raw data with the
AID paper's Table 8 setting (M_l = 5, M_u = 1, r^0 = 0.01, balance per set), up to 5 iterations.
Every (set, l, split, method) group runs in a fresh process. The classification rate is on the
unlabeled points (transductive), averaged over splits.

Part 2 (``--scaling-sets``): CutS3VM at a fixed setting on nested random subsets of growing n of
the largest sets (labeled fraction fixed), a few seeds each; the slope of log(time) against
log(n) is fitted and plotted.

Outputs in ``--out``: ``cuts3vm_runs.csv``, ``cuts3vm_scaling.csv``, ``cuts3vm_summary.md`` and
``cuts3vm_scaling.png``.
"""

from __future__ import annotations

import argparse
import sys
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
from aidopt.bench.s3vm import PAPER_TABLE6, PAPER_TABLE8, table8_balance
from aidopt.common.lazy import issparse

SMALL_SETS = ("digit1", "usps", "coil2", "bci", "g241c", "g241d", "text")
C_L_GRID = (1e3, 1e4, 1e5)
C_U_GRID = (1.0, 10.0, 100.0)
FIXED = (1e4, 10.0)  # the setting of the "fixed" column and of part 2


# ---------------------------------------------------------------------- workers
def _scaled(X, unlabeled: np.ndarray):
    """X / mean_i ‖x_i − μ_u‖ (one scalar, so sparse X stays sparse)."""
    mu = np.asarray(X[unlabeled].mean(axis=0)).ravel()
    if issparse(X):
        sq = np.asarray(X.multiply(X).sum(axis=1)).ravel() - 2 * np.asarray(X @ mu).ravel()
        sq += mu @ mu
    else:
        sq = ((X - mu) ** 2).sum(axis=1)
    scale = float(np.sqrt(np.maximum(sq, 0.0)).mean())
    return X / scale if scale > 0 else X


def _fit(X, y_masked, truth, unlabeled, C_l, C_u, eps, time_limit, seed) -> dict[str, Any]:
    from threadpoolctl import threadpool_limits

    from aidopt.baselines.cuts3vm import CutS3VM
    from aidopt.exceptions import AidoptError, ConvergenceWarning
    from aidopt.models.s3vm import S3VMData

    data = S3VMData.from_arrays(X, y_masked)
    model = CutS3VM(C_l=C_l, C_u=C_u, eps=eps, time_limit=time_limit, random_state=seed)
    with threadpool_limits(1), warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        start = time.perf_counter()
        try:
            result = model.solve(data)
        except AidoptError as exc:  # e.g. the master QP not certified: report it, go on
            return {"C_l": C_l, "C_u": C_u, "status": "error", "message": str(exc)[:200]}
        seconds = time.perf_counter() - start
    return {
        "C_l": C_l,
        "C_u": C_u,
        "status": result.status,
        "accuracy": float((result.labels == truth[unlabeled]).mean()),
        "seconds": seconds,
        "objective": result.objective,
        "constraints": result.constraints,
        "rounds": result.iterations,
        "cccp_iterations": result.cccp_iterations,
    }


def run_cuts3vm_group(
    dataset: str,
    labeled: int,
    split: int,
    grid: list[list[float]],
    eps: float,
    time_limit: float,
    scale: bool,
) -> dict[str, Any]:
    """CutS3VM over the grid on one official split (called in a fresh process)."""
    from aidopt.data.sslbook import load_split

    s = load_split(dataset, labeled, split)
    unlabeled = ~s.labeled
    X = _scaled(s.X, unlabeled) if scale else s.X
    rows = [
        _fit(X, s.masked_target(), s.y, unlabeled, C_l, C_u, eps, time_limit, split)
        for C_l, C_u in grid
    ]
    return {"status": "ok", "rows": rows}


def run_scaling_point(
    dataset: str,
    n: int,
    rho: float,
    seed: int,
    C_l: float,
    C_u: float,
    eps: float,
    time_limit: float,
) -> dict[str, Any]:
    """CutS3VM on a random subset of n rows (fraction rho labeled), in a fresh process."""
    from aidopt.data.sslbook import labeled_sizes, load_split

    s = load_split(dataset, labeled_sizes(dataset)[0], 0)
    rng = np.random.default_rng(seed)
    rows = rng.permutation(s.y.size)[:n]
    X, y = s.X[rows], s.y[rows]
    labeled = np.zeros(n, dtype=bool)
    labeled[: max(2, round(rho * n))] = True  # rows are in random order already
    if np.unique(y[labeled]).size < 2:  # both classes among the labels
        first_other = np.flatnonzero(y != y[0])[0]
        labeled[first_other] = True
    X = _scaled(X, ~labeled)
    y_masked = np.where(labeled, y, np.nan)
    row = _fit(X, y_masked, y, ~labeled, C_l, C_u, eps, time_limit, seed)
    nnz = X.nnz if issparse(X) else X.size
    return {"status": "ok", "row": {**row, "set": dataset, "n": n, "seed": seed, "nnz": nnz}}


# ---------------------------------------------------------------------- the benchmark
def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sets", default=",".join(SMALL_SETS), help="SSL-book sets ('' = none)")
    parser.add_argument("--labeled", default="10,100", help="labeled sizes (SecStr: 1000)")
    parser.add_argument("--splits", default="0-11", help="split indices, e.g. 0-11 or 0,3")
    parser.add_argument("--Cl", default=",".join(map(str, C_L_GRID)), help="C_l grid")
    parser.add_argument("--Cu", default=",".join(map(str, C_U_GRID)), help="C_u grid")
    parser.add_argument("--eps", type=float, default=0.1, help="CutS3VM ε (0.1)")
    parser.add_argument("--time-limit", type=float, default=60.0, help="seconds per CutS3VM run")
    parser.add_argument("--no-scale", action="store_true", help="raw features for CutS3VM")
    parser.add_argument(
        "--aid", default="gurobi,highs", help="AID-S3VM solvers ('' = CutS3VM and the SVM only)"
    )
    parser.add_argument("--aid-max-iter", type=int, default=5, help="AID iterations (5)")
    parser.add_argument("--aid-time-limit", type=float, default=120.0, help="seconds per AID run")
    parser.add_argument("--scaling-sets", default="", help="sets for part 2, e.g. secstr,text")
    parser.add_argument(
        "--scaling-sizes",
        default="1000,2000,5000,10000,20000,40000,83679",
        help="subset sizes n (capped at the set's size)",
    )
    parser.add_argument("--scaling-rho", type=float, default=0.05, help="labeled fraction")
    parser.add_argument("--scaling-seeds", type=int, default=3, help="subsets per size")
    parser.add_argument("--out", type=Path, default=Path("bench-out"), help="output folder")
    parser.add_argument("--append", action="store_true", help="add to existing CSV files")


def run(args: argparse.Namespace) -> int:
    from aidopt.data.sslbook import SETS, n_splits

    sets = parse_choice_list(args.sets.lower(), SETS, "set")
    scaling_sets = parse_choice_list(args.scaling_sets.lower(), SETS, "set")
    grid = [[c_l, c_u] for c_l in parse_float_list(args.Cl) for c_u in parse_float_list(args.Cu)]
    if list(FIXED) not in grid:
        grid.append(list(FIXED))
    solvers = [s.strip() for s in args.aid.split(",") if s.strip()]
    rows: list[dict[str, Any]] = []
    for name in sets:
        sizes = [1000] if name == "secstr" else parse_int_list(args.labeled)
        splits = [k for k in parse_int_list(args.splits) if k < n_splits(name)]
        for labeled in sizes:
            for split in splits:
                key = {"set": name, "labeled": labeled, "split": split}
                res = _log(
                    key,
                    "cuts3vm",
                    run_isolated(
                        "aidopt.bench.cuts3vm:run_cuts3vm_group",
                        {
                            **{"dataset": name, "labeled": labeled, "split": split},
                            **{"grid": grid, "eps": args.eps, "time_limit": args.time_limit},
                            "scale": not args.no_scale,
                        },
                        timeout=120 + len(grid) * (2 * args.time_limit + 30),
                    ),
                )
                rows.extend({**key, "method": "CutS3VM", **r} for r in _rows(res))
                for solver in ["svm", *solvers]:
                    rows.extend(_aid_rows(key, solver, args))
    scaling = _scaling(scaling_sets, args)
    _write(args, rows, scaling)
    return 0


def _aid_rows(key: dict[str, Any], solver: str, args) -> list[dict[str, Any]]:
    balance = table8_balance(key["set"])
    config = {
        "M_u": 1.0,
        "rate": 0.0001 if key["set"] == "secstr" else 0.01,
        "balance": balance,
        "floor": "total",
    }
    res = _log(
        key,
        solver,
        run_isolated(
            "aidopt.bench.s3vm:run_group",
            {
                **{"dataset": key["set"], "labeled": key["labeled"], "split": key["split"]},
                **{"solver": solver, "configs": [] if solver == "svm" else [config]},
                **{"max_iter": args.aid_max_iter, "time_limit": args.aid_time_limit, "M_l": 5.0},
            },
            timeout=120 + 2 * args.aid_time_limit,
        ),
    )
    out = []
    for row in _rows(res):
        level = row.get("level", "group")
        method = "SVM" if level == "SVM" else f"{level}-{solver}"
        out.append({**key, **row, "method": method})
    return out


def _scaling(sets: list[str], args) -> list[dict[str, Any]]:
    from aidopt.data.sslbook import load_split

    out = []
    for name in sets:
        total = load_split(name, 100 if name == "secstr" else 10, 0).y.size
        sizes = sorted({min(n, total) for n in parse_int_list(args.scaling_sizes)})
        for n in sizes:
            for seed in range(args.scaling_seeds):
                key = {"set": name, "n": n, "seed": seed}
                res = _log(
                    key,
                    "scaling",
                    run_isolated(
                        "aidopt.bench.cuts3vm:run_scaling_point",
                        {
                            **{"dataset": name, "n": n, "rho": args.scaling_rho, "seed": seed},
                            **{"C_l": FIXED[0], "C_u": FIXED[1], "eps": args.eps},
                            "time_limit": 10 * args.time_limit,
                        },
                        timeout=300 + 20 * args.time_limit,
                    ),
                )
                row = res.get("row", {"status": res.get("status")})
                out.append({**key, **row, "peak_mb": res.get("peak_mb")})
    return out


def _rows(res: dict[str, Any]) -> list[dict[str, Any]]:
    if res.get("status") != "ok":
        return [{"status": res.get("status"), "message": res.get("message", "")}]
    return res["rows"]


def _log(key: dict[str, Any], what: str, res: dict[str, Any]) -> dict[str, Any]:
    shown = " ".join(f"{k}={v}" for k, v in key.items())
    print(f"{shown} {what}: {res.get('status')} ({res['wall_seconds']:.0f} s)", file=sys.stderr)
    return res


def _write(args, rows: list[dict[str, Any]], scaling: list[dict[str, Any]]) -> None:
    frames = {}
    for stem, new in (("cuts3vm_runs", rows), ("cuts3vm_scaling", scaling)):
        frame, path = pd.DataFrame(new), args.out / f"{stem}.csv"
        if args.append and path.is_file():
            frame = pd.concat([pd.read_csv(path), frame], ignore_index=True)
        if len(frame):
            write_outputs(frame, args.out, stem)
        frames[stem] = frame
    parts = []
    if len(frames["cuts3vm_runs"]):
        parts.append(accuracy_markdown(frames["cuts3vm_runs"]))
    if len(frames["cuts3vm_scaling"]):
        parts.append(scaling_markdown(frames["cuts3vm_scaling"], args.out / "cuts3vm_scaling.png"))
    text = "\n".join(parts)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "cuts3vm_summary.md").write_text(text)
    print(text)


# ---------------------------------------------------------------------- summaries
def accuracy_markdown(runs: pd.DataFrame) -> str:
    """Rates (%) and mean seconds per (set, l): SVM, CutS3VM fixed/best, AID1/AID5 per solver."""
    ok = runs[runs["accuracy"].notna()] if "accuracy" in runs else runs.iloc[0:0]
    aid_methods = sorted(m for m in ok["method"].unique() if m.startswith("AID"))
    head = ["set", "l", "splits", "SVM", "CutS3VM fixed", "CutS3VM best (C_l, C_u)"]
    head += ["CutS3VM grid s", *aid_methods, "paper T8 AID1", "paper T6 AID5/AID1/TSVM"]
    lines = [
        "## Unlabeled classification rate (%) and mean seconds per run\n",
        f"CutS3VM fixed: C_l = {FIXED[0]:g}, C_u = {FIXED[1]:g}; best: the grid cell with the "
        "best mean rate (oracle choice, as in both papers); grid s: seconds for the whole grid "
        "per split. Cells: rate / seconds (runs stopped by a time, iteration or licence limit "
        "included; their count in brackets). Paper columns: the AID paper's Table 8 (AID1 at "
        "this AID setting) and Table 6 (best parameters).\n",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for (name, labeled), g in ok.groupby(["set", "labeled"], sort=False):
        cut = g[g["method"] == "CutS3VM"]
        cells = [name, str(labeled), str(g["split"].nunique()), _cell(g[g["method"] == "SVM"])]
        fixed = cut[(cut["C_l"] == FIXED[0]) & (cut["C_u"] == FIXED[1])]
        cells.append(_cell(fixed))
        if len(cut):
            means = cut.groupby(["C_l", "C_u"])["accuracy"].mean()
            (cl, cu) = means.idxmax()
            best = cut[(cut["C_l"] == cl) & (cut["C_u"] == cu)]
            cells.append(f"{_cell(best)} ({cl:g}, {cu:g})")
            cells.append(f"{cut.groupby('split')['seconds'].sum().mean():.2f}")
        else:
            cells.extend(["-", "-"])
        cells.extend(_cell(g[g["method"] == m]) for m in aid_methods)
        col = 0 if labeled in (10, 1000) else 1
        table8 = PAPER_TABLE8.get(name, (None, None))[col]
        paper = PAPER_TABLE6.get(name, ((None,) * 3, (None,) * 3))[col]
        cells.append(_pct(table8))
        cells.append(" / ".join(_pct(v) for v in paper))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _cell(frame: pd.DataFrame) -> str:
    if not len(frame):
        return "-"
    stopped = frame["status"].isin(["time_limit", "solver_limit"]) | (
        (frame["status"] == "iteration_limit") & (frame["method"] == "CutS3VM")
    )  # AID1 is one iteration by design: its "iteration_limit" is no limit
    limited = int(stopped.sum())
    extra = f" [{limited}]" if limited else ""
    return f"{100 * frame['accuracy'].mean():.1f} / {frame['seconds'].mean():.2f}{extra}"


def _pct(value: Any) -> str:
    return "–" if value is None else f"{value:.1f}"


def scaling_markdown(curve: pd.DataFrame, png: Path) -> str:
    """Mean time per n, and the fitted slope of log(time) against log(n), per set; plot."""
    ok = curve[curve["seconds"].notna()] if "seconds" in curve else curve.iloc[0:0]
    lines = [
        "## CutS3VM time against n (Theorem 7 claims O(sn))\n",
        f"Fixed C_l = {FIXED[0]:g}, C_u = {FIXED[1]:g}; slope of log(seconds) on log(n) "
        "(least squares over all runs); per-CCCP-step time separates the cost of a pass from "
        "the number of passes.\n",
        "| set | n | runs | seconds | cuts | CCCP steps | ms per CCCP step | rate (%) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    slopes = {}
    for name, g in ok.groupby("set", sort=False):
        for n, h in g.groupby("n"):
            per_step = 1e3 * (h["seconds"] / h["cccp_iterations"].clip(lower=1)).mean()
            lines.append(
                f"| {name} | {n} | {len(h)} | {h['seconds'].mean():.3f} | "
                f"{h['constraints'].mean():.1f} | {h['cccp_iterations'].mean():.1f} | "
                f"{per_step:.2f} | {100 * h['accuracy'].mean():.1f} |"
            )
        if g["n"].nunique() > 1:
            slope = np.polyfit(np.log(g["n"]), np.log(g["seconds"]), 1)[0]
            step = np.log(g["seconds"] / g["cccp_iterations"].clip(lower=1))
            slopes[name] = (slope, np.polyfit(np.log(g["n"]), step, 1)[0])
    lines.append("")
    lines.extend(
        f"- {name}: time ∝ n^{a:.2f}; time per CCCP step ∝ n^{b:.2f}"
        for name, (a, b) in slopes.items()
    )
    if len(ok):
        _plot_scaling(ok, png)
        lines.append(f"\nPlot: {png.name}")
    return "\n".join(lines) + "\n"


def _plot_scaling(ok: pd.DataFrame, png: Path) -> None:
    """Two log-log panels: seconds per run and seconds per CCCP step, with O(n) references."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ok = ok.assign(per_step=ok["seconds"] / ok["cccp_iterations"].clip(lower=1))
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.2), constrained_layout=True)
    for ax, column, label in zip(
        axes, ("seconds", "per_step"), ("seconds per run", "seconds per CCCP step"), strict=True
    ):
        for k, (name, g) in enumerate(ok.groupby("set", sort=False)):
            color = f"C{k}"
            mean = g.groupby("n")[column].mean()
            ax.loglog(g["n"], g[column], ".", color=color, alpha=0.4)
            ax.loglog(mean.index, mean.values, "o-", color=color, label=name)
        n = np.array(sorted(ok["n"].unique()), dtype=float)
        ax.loglog(n, ok.groupby("n")[column].mean().iloc[0] * n / n[0], "k--", label="O(n)")
        ax.set_xlabel("n (samples)")
        ax.set_ylabel(label)
        ax.legend()
    fig.suptitle("CutS3VM time against n (log-log)")
    fig.savefig(png, dpi=100)
    plt.close(fig)
