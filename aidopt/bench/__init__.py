"""``aidopt bench MODEL``: the generic harness (:mod:`aidopt.bench.harness`) runs the workloads
× methods of a model's :class:`~aidopt.bench.spec.BenchSpec`; what is specific to a paper's
tables is a part (``--part NAME``).

A model of another package may declare its spec as ``bench = BenchSpec(...)``; the models of
this package have theirs here (a module with ``SPEC``: benchmark specs live with the bench); a
module without ``SPEC`` is a benchmark of its own (``add_arguments``/``run``: the SSL tables).
"""

#: benchmark modules by name: ``SPEC`` and the parts it names, or a benchmark of its own
MODULES: dict[str, str] = {
    "lad": "aidopt.bench.lad",
    "svm": "aidopt.bench.svm",
    "pu": "aidopt.bench.pu",
    "s3vm": "aidopt.bench.s3vm",
    "cuts3vm": "aidopt.bench.cuts3vm",
    "svc": "aidopt.bench.svc",
    "ocsvm": "aidopt.bench.ocsvm",
    "scale": "aidopt.bench.scale",
}
