"""LAD benchmark: AID and Frisch–Newton against R quantreg (fnb, pfn), the full LP, scikit-learn.

``aidopt bench lad --sizes 100000x10,400000x100 --repeats 3 --out bench-out`` generates the
instances (paper style, Laplace noise, intercept: :func:`aidopt.data.lad.make_lad`) and runs
every method on each in its own process with a time limit (``--time-limit``, per method
``--method-time-limit quantreg-fn=400``) on the generic harness (:mod:`aidopt.bench.harness`):
``lad_runs.csv``, ``lad_summary.csv``, ``lad_summary.md`` (the paper's Table 2 columns: ρ against
R's fn and pfn, the full FN, HiGHS IPM and scikit-learn, Δ against R's objective — or the full FN's
where R did not finish —, r^0, r^T, T, peak memory) and ``lad_times.png``. R's quantreg runs
when Rscript and the package are installed (``aidopt.bench.libraries.r_quantreg_fn``).
"""

from __future__ import annotations

from aidopt.bench import libraries
from aidopt.bench.common import generator_option
from aidopt.bench.spec import BenchSpec, Method, Workload
from aidopt.common.options import Option
from aidopt.data.containers import RegressionData
from aidopt.data.lad import NOISES, make_lad


def instance(
    n: int, m: int, seed: int, noise: str = "laplace", generator: str = "aidopt"
) -> RegressionData:
    """``generator`` 'aidopt': the paper-style instance y = β₀ + xβ + ε
    (:func:`aidopt.data.lad.make_lad`, ``noise``); 'sklearn': data aidopt did not generate,
    scikit-learn's ``make_regression(n, m, n_informative=max(1, m // 2), bias=1, noise=10)``
    (Gaussian noise; ``noise`` unused)."""
    if generator == "sklearn":
        from sklearn.datasets import make_regression

        X, y = make_regression(
            n_samples=n,
            n_features=m,
            n_informative=max(1, m // 2),
            bias=1.0,
            noise=10.0,
            random_state=seed,
        )
        return RegressionData.from_arrays(X, y)
    X, y, _, _ = make_lad(n, m, seed=seed, noise=noise)
    return RegressionData.from_arrays(X, y)


SPEC = BenchSpec(
    workloads=(
        Workload(
            make=instance,
            sizes=((100_000, 10), (100_000, 100), (400_000, 10), (400_000, 100)),
            options=(
                Option("noise", "laplace", "noise distribution", kind=str, choices=NOISES),
                generator_option("make_lad", "make_regression"),
            ),
        ),
    ),
    methods=(
        Method("aid-fn", "aid", solver="fn", description="AID, Frisch-Newton (default policy)"),
        Method("aid-highs", "aid", solver="highs", description="AID, HiGHS dual simplex"),
        Method(
            "aid-fn-paper",
            "aid",
            solver="fn",
            model_options={"init": "kmeans", "split": "sign"},
            description="AID, Frisch-Newton, the paper's policy (k-means init, sign split)",
        ),
        Method("full-fn", "full", solver="fn", label="full FN", description="FN, full data"),
        Method("full-highs-simplex", "full", solver="highs", label="HiGHS simplex"),
        Method(
            "full-highs-ipm",
            "full",
            solver="highs",
            options={"solver_options": {"solver": "ipm"}},
            label="HiGHS IPM",
        ),
        Method(
            "sklearn",
            "baseline",
            run=libraries.sklearn_quantile,
            label="sklearn",
            description="scikit-learn QuantileRegressor(quantile=0.5, alpha=0, solver='highs')",
        ),
        Method(
            "quantreg-fn",
            "baseline",
            run=libraries.r_quantreg_fn,
            label="R fn",
            missing=libraries.quantreg_missing,
            description="R quantreg rq.fit.fnb (Frisch-Newton), the paper's benchmark",
        ),
        Method(
            "quantreg-pfn",
            "baseline",
            run=libraries.r_quantreg_pfn,
            label="R pfn",
            missing=libraries.quantreg_missing,
            description="R quantreg rq.fit.pfn (Frisch-Newton with preprocessing)",
        ),
    ),
    references=(
        "quantreg-fn",
        "quantreg-pfn",
        "full-fn",
        "full-highs-ipm",
        "full-highs-simplex",
        "sklearn",
    ),
    aid_options={"tol": 1e-6},
    time_limit=600.0,
    grace=60.0,
)
