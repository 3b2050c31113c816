"""Support-vector clustering (Pham, Le & Dang, "Scalable Support Vector Clustering Using
Budget"; the seed's digest ``svc-budget-digest.md``): a domain of novelty f(x) ≥ 0 found by the
one-class models (exact under AID, :mod:`aidopt.models.ocsvm_kernel` and
:mod:`aidopt.models.svdd`, or budgeted SGD, :mod:`aidopt.svc.bsgd`), then the clusters as the
connected pieces of the domain (:mod:`aidopt.svc.labelling`), scored by :mod:`aidopt.svc.metrics`.
"""
