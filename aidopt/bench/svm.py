"""SVM benchmark: AID against libsvm, liblinear and the full QP, each on the same solver.

``aidopt bench svm --sizes 30000x10,50000x50 --repeats 3 --out bench-out`` generates the
instances (:func:`aidopt.data.svm.make_svm`: two overlapping Gaussian classes, ``--separation``)
and runs every method on each in its own process with a time limit, on the generic harness
(:mod:`aidopt.bench.harness`; ``--append`` adds to the runs already in ``--out``, so that a grid
can be run one cell per invocation):

* ``svm_runs.csv``: one row per run (status, seconds, objective E of (7), training accuracy,
  lower bound, gap, r^0, r^T, T, support-vector share of libsvm, peak memory);
* ``svm_summary.csv`` / ``svm_summary.md``: per (n, m) one row per pair — the paper's Table 3
  columns: T_AID and T_base (mean, σ), ρ = T_AID / T_base (mean of the per-instance ratios, σ),
  Δ (relative objective difference), Γ (training-accuracy difference), SV, r^0, r^T, T;
* ``svm_figure6.png``: times (AID solid, its baseline dashed) and ρ against n, one line per m
  (the paper's Figure 6).

Pairs (AID uses the same library or solver for its aggregated problems as its baseline):
aid-libsvm / libsvm, aid-liblinear / liblinear, aid-highs / full-highs, aid-gurobi / full-gurobi;
aid-activeset (the default solver of ``svm``) / liblinear, the library a user picks for a linear
SVM (it penalises ½b², so its objective E of (7) is evaluated at its (w, b)). ``--generator
sklearn`` runs on scikit-learn's ``make_classification`` instead of aidopt's own generator.
"""

from __future__ import annotations

from typing import Any

from aidopt.bench import libraries
from aidopt.bench.common import generator_option, sklearn_classification
from aidopt.bench.spec import BenchSpec, Column, Method, Workload
from aidopt.common.options import Option
from aidopt.data.containers import BinaryData
from aidopt.data.svm import make_svm


def instance(
    n: int, m: int, seed: int, separation: float = 2.0, generator: str = "aidopt"
) -> BinaryData:
    """``generator`` 'aidopt': two overlapping Gaussian classes (:func:`aidopt.data.svm.make_svm`,
    ``separation``); 'sklearn': data aidopt did not generate, scikit-learn's
    ``make_classification(n, m, n_informative=max(2, m // 2), flip_y=0.05, class_sep=0.8)``,
    standardised (``separation`` unused)."""
    if generator == "sklearn":
        X, y = sklearn_classification(n, m, seed)
    else:
        X, y = make_svm(n, m, seed=seed, separation=separation)
    return BinaryData.from_arrays(X, y)


def accuracy(model: Any, data: BinaryData, solution: Any) -> dict[str, float]:
    """The training accuracy of a hyperplane (Γ of Table 3 is its difference)."""
    from aidopt.core.hinge import training_accuracy

    return {"accuracy": training_accuracy(data, solution.decision_function(data.X))}


SPEC = BenchSpec(
    workloads=(
        Workload(
            make=instance,
            sizes=(
                (30_000, 10),
                (30_000, 50),
                (30_000, 90),
                (50_000, 10),
                (50_000, 50),
                (50_000, 90),
            ),
            options=(
                Option("separation", 2.0, "class separation of the aidopt generator", low=0.0),
                generator_option("make_svm", "make_classification"),
            ),
        ),
    ),
    methods=(
        Method(
            "aid-activeset",
            "aid",
            solver="activeset",
            pair="liblinear",
            description="AID, aggregated problems by the exact warm-started primal active set",
        ),
        Method(
            "aid-libsvm",
            "aid",
            solver="libsvm",
            pair="libsvm",
            description="AID, aggregated problems by libsvm (SVC, sample_weight = |C_k|)",
        ),
        Method(
            "libsvm",
            "baseline",
            run=libraries.libsvm_svc,
            description="scikit-learn SVC(kernel='linear', C=M), the paper's benchmark (with "
            "--kernel: SVC with that kernel)",
        ),
        Method(
            "full-libsvm",
            "full",
            solver="libsvm",
            pair="libsvm",
            description="the full problem by libsvm (its own kernel evaluations), certified on "
            "all rows: the kernel SVM's default route",
        ),
        Method(
            "aid-liblinear",
            "aid",
            solver="liblinear",
            pair="liblinear",
            description="AID, aggregated problems by liblinear (LinearSVC, hinge)",
        ),
        Method(
            "liblinear",
            "baseline",
            run=libraries.liblinear_svc,
            description="scikit-learn LinearSVC(loss='hinge', C=M, tol=1e-3, max_iter=1e5)",
        ),
        Method("aid-highs", "aid", solver="highs", pair="full-highs"),
        Method("full-highs", "full", solver="highs", description="the full dual QP by HiGHS"),
        Method("aid-gurobi", "aid", solver="gurobi", pair="full-gurobi"),
        Method("full-gurobi", "full", solver="gurobi", description="pip licence: ≤ 200 vars"),
    ),
    model_options={"M": 0.1},
    metrics=accuracy,
    differences={"gamma": "accuracy"},
    columns=(Column("Γ", "gamma", ".2%"), Column("SV", "pair_sv_share", ".0%")),
    references=("liblinear",),
    default_methods=("aid-activeset", "aid-libsvm", "libsvm", "liblinear"),
    aid_options={"tol": 1e-4},  # the paper's SVM ε
    repeats=3,
    time_limit=900.0,
    grace=30.0,  # AID stops itself; a library run is killed 30 s after the limit
    plot="figure6",
)
