"""``aidopt bench ocsvm``: the linear one-class SVM (1) by AID against the full QP, on two
Gaussian blobs away from the origin (:func:`aidopt.data.one_class.blobs`, the model's generator)."""

from __future__ import annotations

from aidopt.bench.spec import BenchSpec, Method, Workload
from aidopt.data.containers import FeatureData
from aidopt.data.one_class import blobs

__all__ = ["SPEC"]


def _instance(n: int, m: int, seed: int) -> FeatureData:
    return FeatureData.from_frame(blobs(n, m, seed=seed))


SPEC = BenchSpec(
    workloads=(Workload(make=_instance, sizes=((1_000, 3), (2_000, 5))),),
    methods=(
        Method("aid-activeset", "aid", solver="activeset", pair="full-highs"),
        Method("aid-highs", "aid", solver="highs", pair="full-highs"),
        Method("full-highs", "full", solver="highs"),
        Method("aid-gurobi", "aid", solver="gurobi", pair="full-highs"),
    ),
)
