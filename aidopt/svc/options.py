"""The parameters of support-vector clustering, declared once: the estimator
:class:`aidopt.svc.estimator.SupportVectorClustering` and ``aidopt cluster`` are generated from
them (a light module: the command line's parser reads it without importing scikit-learn)."""

from __future__ import annotations

from aidopt.common.options import Option, parse_seed
from aidopt.svc.fit import METHODS

__all__ = ["CLUSTER_OPTIONS"]

CLUSTER_OPTIONS: tuple[Option, ...] = (
    Option(
        "method",
        "svdd",
        "phase 1: the domain of novelty (svdd: certified, the best certified one on the paper's "
        "sets and two moons, docs/svc.md)",
        kind=str,
        choices=METHODS,
    ),
    Option(
        "kernel",
        "rbf",
        "the kernel (the labelling follows the RBF mean shift)",
        kind=str,
        choices=("rbf",),
    ),
    Option("gamma", 1.0, "γ of the kernel exp(−γ‖a − b‖²)", low=0.0),
    Option(
        "C",
        1.0,
        "penalty C: SVDD's for svdd and libsvm (≥ 1/N; libsvm's ν = 1/(N·C)), (1)'s for the others",
        low=0.0,
    ),
    Option("budget", 50, "BSGD's budget B (support vectors kept)", kind=int, low=1),
    Option("k", 5, "BSGD projection onto k ≤ B support vectors (pnn, prn)", kind=int, low=1),
    Option("theta", 0.01, "BSGD stops when ‖w_{t+1} − w_t‖ ≤ θ", low=0.0),
    Option(
        "min_epochs",
        0.0,
        "BSGD applies the stopping rule only after this many passes (0: the paper's rule)",
        low=0.0,
        closed="left",
    ),
    Option(
        "labelling",
        "equilibria",
        "phase 2: Algorithm 3, or Ben-Hur's complete graph (small N)",
        kind=str,
        choices=("equilibria", "complete-graph"),
    ),
    Option(
        "eps",
        None,
        "strip B_ε: |f(x)| ≤ ε (None: the strip_fraction rule)",
        low=0.0,
        closed="left",
        allow_none=True,
    ),
    Option(
        "strip_fraction",
        0.1,
        "share of the rows in the strip when eps is None",
        low=0.0,
        high=1.0,
        closed="right",
    ),
    Option("m", 20, "points of the segment test", kind=int, low=2),
    Option("solver", None, "AID's inner solver (None: boxqp)", kind=str, allow_none=True),
    Option("tol", 1e-6, "AID's relative gap target", low=0.0, closed="left"),
    Option("time_limit", None, "AID's time limit in seconds", low=0.0, allow_none=True),
    Option(
        "random_state",
        None,
        "random seed",
        kind=int,
        low=0,
        allow_none=True,
        flag="--seed",
        parse=parse_seed,
    ),
)
