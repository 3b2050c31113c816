"""PU benchmark: a scaling study (time, memory) and the paper's Tables III/IV (F-measures).

``aidopt bench pu`` (the spec, on the generic harness :mod:`aidopt.bench.harness`) generates
two-Gaussian PU instances (:func:`aidopt.data.pu.make_pu`, the model's prior π_U from the draw) of
growing n, two workloads (``linear``: the linear kernel; ``rbf``: the Gaussian kernel, γ = 1/m), and
runs each method in a fresh process with a time limit (training time and peak memory): the full QP
on Clarabel (``aidopt.bench.libraries.clarabel_pu``), HiGHS and Gurobi (statuses as reported:
Gurobi's pip licence refuses QPs over 200 variables), USMO on all rows, and AID on USMO, HiGHS and
Gurobi (tol 0: to the certificate); ``--generator sklearn`` runs on scikit-learn's
``make_classification`` instead of aidopt's own generator. A method stopped by a limit is not run on
the larger instances of that workload (``--part scaling`` and ``--kernels`` are the old spellings of
the default and of ``--workloads``). Outputs: ``pu_runs.csv``, ``pu_summary.csv``, ``pu_summary.md``
(Δ against the full QP on Clarabel, else USMO; ρ against Clarabel, USMO and the full QP on HiGHS)
and ``pu_scaling.png``; ``--append`` adds to them (a grid in chunks).

``aidopt bench pu --part tables`` runs, on the 12 UCI sets (read in place from
``../shared/data/pu-uci``), for λ ∈ {1e-4, 1e-3, 1e-2, 1e-1} and the linear and Gaussian
(scale 1, γ = 0.5) kernels: the full QP (cvxpy + Clarabel: HiGHS 1.15's QP solver fails on these
problems, Gurobi's pip licence stops at 200 variables), USMO, and AID with USMO on the
aggregated problems, with the paper's split protocol; it reports both F-measures (the paper's
majority-class F1 and the positive-class F1) beside the paper's numbers for [7] (the full QP)
and USMO, and the largest relative objective difference to the full QP: ``pu_tables.csv/.md``.
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
    generator_option,
    parse_choice_list,
    parse_float_list,
    sklearn_classification,
    write_outputs,
)
from aidopt.bench.spec import BenchSpec, Method, Workload
from aidopt.data.containers import PositiveUnlabeledData
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
from aidopt.numerics.kernels import Kernel


# ---------------------------------------------------------------------- the scaling study
def instance(
    n: int, m: int, seed: int, generator: str = "aidopt"
) -> tuple[PositiveUnlabeledData, dict[str, float]]:
    """20% of the positives labeled, the model's prior the draw's π_U (the positive share of the
    unlabeled rows). ``generator`` 'aidopt': two Gaussian classes, 40% positives
    (:func:`aidopt.data.pu.make_pu`); 'sklearn': data aidopt did not generate, scikit-learn's
    ``make_classification(n, m, n_informative=max(2, m // 2), weights=(0.6,), flip_y=0.05,
    class_sep=0.8)`` (40% positives), standardised."""
    if generator == "sklearn":
        X, y = sklearn_classification(n, m, seed, weights=(0.6,))
        rng = np.random.default_rng(seed)
        positives = np.flatnonzero(y == 1)
        labeled = np.zeros(n, dtype=bool)
        labeled[rng.choice(positives, size=positives.size // 5, replace=False)] = True
        prior = float(y[~labeled].mean())
    else:
        X, _, labeled, prior = make_pu(n, m, seed=seed)
    return PositiveUnlabeledData.from_arrays(X, labeled), {"prior": prior}


GENERATOR = generator_option("make_pu", "make_classification")


SPEC = BenchSpec(
    workloads=(
        Workload(
            make=instance,
            name="linear",
            sizes=tuple((n, 10) for n in (1000, 2000, 5000, 10000, 20000, 50000, 100000)),
            options=(GENERATOR,),
            model_options={"kernel": "linear"},
        ),
        Workload(
            make=instance,
            name="rbf",
            sizes=tuple((n, 10) for n in (1000, 2000, 5000, 10000, 20000)),
            options=(GENERATOR,),
            model_options={"kernel": "rbf"},
        ),
    ),
    methods=(
        Method(
            "full-clarabel",
            "baseline",
            run=libraries.clarabel_pu,
            label="Clarabel",
            description="full QP, cvxpy + Clarabel (linear: (5) with w explicit; rbf: (6))",
        ),
        Method("full-highs", "full", solver="highs", label="full HiGHS"),
        Method("full-gurobi", "full", solver="gurobi", description="pip licence: ≤ 200 vars"),
        Method("usmo", "full", solver="usmo", label="USMO", description="USMO on all rows"),
        Method("aid-usmo", "aid", solver="usmo", description="AID, USMO on the aggregated QPs"),
        Method("aid-highs", "aid", solver="highs", description="AID, HiGHS"),
        Method("aid-gurobi", "aid", solver="gurobi", description="AID, Gurobi"),
    ),
    parts={"tables": "aidopt.bench.pu"},
    references=("full-clarabel", "usmo", "full-highs"),
    model_options={"lam": 0.01},
    aid_options={"tol": 0.0},
    time_limit=600.0,
    skip_after_limit=True,
    plot="scaling",
    name="scaling",  # --part scaling: this spec, as before
    aliases={"--kernels": "--workloads", "--lam": "--lambda"},
)

LAMBDAS = (1e-4, 1e-3, 1e-2, 1e-1)
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


# ---------------------------------------------------------------------- Tables III/IV
def fit(
    method: str, X, labeled, prior: float, lam: float, kernel: Kernel, time_limit: float
) -> dict[str, Any]:
    """One table fit: status, seconds, objective (5) and the training scores f."""
    from aidopt.core.driver import AIDSolver
    from aidopt.exceptions import AidoptError, SolverLicenseError
    from aidopt.models.pu import PUModel

    data = PositiveUnlabeledData.from_arrays(X, labeled)
    model = PUModel(prior=prior, lam=lam, kernel=kernel)
    start = time.perf_counter()
    if method == "full-clarabel":
        outcome = libraries.clarabel_pu(model, data, time_limit)
        seconds = time.perf_counter() - start
        if outcome.solution is None:
            return {"status": outcome.status, "seconds": seconds}
        return {
            "status": outcome.status,
            "seconds": seconds,
            "objective": model.evaluate(data, outcome.solution).objective,
            "f": model.training_scores(data, outcome.solution),
        }
    aid = AIDSolver(model, solver="usmo", tol=0.0, time_limit=time_limit)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = aid.solve(data) if method.startswith("aid") else aid.solve_full(data)
    except AidoptError as exc:
        status = "solver_limit" if isinstance(exc, SolverLicenseError) else "error"
        return {"status": status, "seconds": time.perf_counter() - start, "message": str(exc)}
    return {
        "status": result.status.value,
        "seconds": result.seconds,
        "objective": result.objective,
        "iterations": result.iterations,
        "final_rate": result.final_rate,
        "f": model.training_scores(data, result.solution),
    }


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


def _names(text: str | None, known: tuple[str, ...]) -> list[str]:
    if text is None:
        return list(known)
    return parse_choice_list(text, known, "name")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``--part tables``."""
    parser.add_argument("--kernels", default=None, help="linear,rbf (default both)")
    parser.add_argument("--datasets", default=None, help="UCI sets (default all)")
    parser.add_argument("--lambdas", type=parse_float_list, default=list(LAMBDAS), help="λ list")
    parser.add_argument("--gamma", type=float, default=0.5, help="rbf γ (0.5 = scale 1)")
    parser.add_argument("--repeats", type=int, default=3, help="random splits (3)")
    parser.add_argument("--seed", type=int, default=0, help="first seed")
    parser.add_argument("--time-limit", type=float, default=600.0, help="seconds per fit (600)")
    parser.add_argument("--out", type=Path, default=Path("bench-out"), help="output folder")
    parser.add_argument(
        "--append",
        action="store_true",
        help="add the runs to pu_tables.csv in --out and rebuild its table from all rows",
    )


def run(args: argparse.Namespace) -> int:
    """``aidopt bench pu --part tables``: pu_tables.csv and pu_tables.md in --out."""
    runs = run_tables(args)
    previous = args.out / "pu_tables.csv"
    if args.append and previous.is_file():
        runs = pd.concat([pd.read_csv(previous), runs], ignore_index=True)
    write_outputs(runs, args.out, "pu_tables")
    text = tables_markdown(runs)
    (args.out / "pu_tables.md").write_text(text)
    print(text)
    print(f"wrote {args.out}/pu_tables.csv and pu_tables.md", file=sys.stderr)
    return 0
