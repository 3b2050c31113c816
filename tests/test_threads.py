"""BLAS threads: AID runs under one, Frisch–Newton parallelises by the count the caller allowed."""

import numpy as np
import threadpoolctl

import aidopt.solvers.frisch_newton as fn
from aidopt.common.threads import blas_threads, single_thread_blas
from aidopt.core.driver import AIDSolver, Hook
from aidopt.data.containers import RegressionData
from aidopt.data.lad import make_lad
from aidopt.models.lad import LADModel


def _blas_counts() -> list[int]:
    return [i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]


def test_inside_the_limit_blas_threads_is_what_the_caller_allowed():
    allowed = max(_blas_counts(), default=1)
    assert blas_threads() == allowed
    with single_thread_blas():
        assert set(_blas_counts()) <= {1}
        assert blas_threads() == allowed
        with single_thread_blas():
            assert blas_threads() == allowed
        assert set(_blas_counts()) <= {1}
    assert max(_blas_counts(), default=1) == allowed


def test_an_aid_run_uses_one_blas_thread_and_frisch_newton_the_allowed_count(monkeypatch):
    allowed = blas_threads()
    seen: dict[str, object] = {}

    class Record(Hook):
        def on_start(self, solver, data, partition):
            seen["counts"] = _blas_counts()

    init = fn._Gram.__init__

    def record_threads(self, X, threads):
        seen.setdefault("threads", threads)
        init(self, X, threads)

    monkeypatch.setattr(fn._Gram, "__init__", record_threads)
    X, y = make_lad(3000, 4, seed=0)[:2]
    result = AIDSolver(LADModel(), solver="fn", hooks=[Record()]).solve(
        RegressionData.from_arrays(X, y)
    )
    assert result.status.value == "optimal"
    assert set(seen["counts"]) <= {1}
    assert seen["threads"] == allowed
    assert max(_blas_counts(), default=1) == allowed
    assert np.isfinite(result.objective)
