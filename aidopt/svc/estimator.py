"""``SupportVectorClustering``: the scikit-learn estimator of support-vector clustering.

``fit`` finds the domain of novelty f ≥ 0 (:func:`aidopt.svc.fit.fit_domain`, ``method``) and
labels the rows (:mod:`aidopt.svc.labelling`: Algorithm 3 by default, Ben-Hur's complete graph
with ``labelling="complete-graph"``). Training and clustering times are kept apart.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

from aidopt.common.options import keyword_init, validate
from aidopt.common.validation import check_predict_input
from aidopt.svc.fit import fit_domain
from aidopt.svc.labelling import complete_graph_labels, label_by_equilibria
from aidopt.svc.options import CLUSTER_OPTIONS

__all__ = ["SupportVectorClustering"]


class SupportVectorClustering(ClusterMixin, BaseEstimator):
    """Support-vector clustering (Pham, Le & Dang; Ben-Hur et al. 2001), RBF kernel.

    Parameters: :data:`CLUSTER_OPTIONS` (also the flags of ``aidopt cluster``). ``method``:
    the exact LM-OCSVM by AID (certified), BSGD with removal / projection onto the k nearest /
    k random support vectors, unbudgeted SGD, or libsvm's one-class ν-SVM (SVDD).

    Fitted: ``labels_``, ``n_clusters_``, ``domain_`` (f, ≥ 0 inside), ``support_vectors_``,
    ``dual_coef_``, ``equilibria_``, ``eps_``, ``training_time_``, ``clustering_time_``,
    ``fit_info_``, and for AID ``certificate_``, ``history_``, ``status_``, ``n_iter_``.
    """

    __init__ = keyword_init(CLUSTER_OPTIONS)

    def _check_params(self) -> None:
        validate(CLUSTER_OPTIONS, self.get_params(), type(self).__name__)

    def fit(
        self, X: ArrayLike, y: Any = None, sample_weight: ArrayLike | None = None
    ) -> SupportVectorClustering:
        """Phase 1 (the domain) and phase 2 (the labels) on X; ``y`` is ignored.
        ``sample_weight`` ω_i ≥ 0 makes row i's loss in phase 1 count ω_i times (rows of weight
        0 take no part in it; every row is labelled)."""
        self._check_params()
        rows: NDArray[np.float64] = validate_data(self, X, dtype=np.float64, ensure_min_samples=2)
        train, weight = rows, None
        if sample_weight is not None:
            weight = _check_sample_weight(sample_weight, rows, ensure_non_negative=True)
            train, weight = rows[weight > 0], weight[weight > 0]
        fit = fit_domain(
            train,
            self.method,
            C=self.C,
            gamma=self.gamma,
            budget=self.budget,
            k=self.k,
            theta=self.theta,
            min_epochs=self.min_epochs,
            random_state=self.random_state,
            solver=self.solver,
            tol=self.tol,
            time_limit=self.time_limit,
            sample_weight=weight,
        )
        start = time.perf_counter()
        if self.labelling == "equilibria":
            labelled = label_by_equilibria(
                fit.domain, rows, eps=self.eps, strip_fraction=self.strip_fraction, m=self.m
            )
        else:
            labelled = complete_graph_labels(fit.domain, rows, m=self.m)
        self.clustering_time_ = time.perf_counter() - start
        self.training_time_ = fit.seconds
        self.domain_ = fit.domain
        self.labels_ = labelled.labels
        self.n_clusters_ = labelled.n_clusters
        self.equilibria_ = labelled.equilibria
        self.eps_ = labelled.eps
        self.support_vectors_ = fit.domain.support_vectors
        self.dual_coef_ = fit.domain.coef
        self.fit_info_ = fit.info
        result = fit.result
        self.result_ = result
        self.certificate_ = None if result is None else result.certificate
        self.history_ = None if result is None else result.history
        self.status_ = result.status.value if result is not None else "not certified"
        self.n_iter_ = result.iterations if result is not None else fit.info.get("steps", 1)
        return self

    def decision_function(self, X: ArrayLike) -> NDArray[np.float64]:
        """f(x) of the domain (≥ 0 inside)."""
        check_is_fitted(self)
        rows = check_predict_input(X, self.n_features_in_, type(self).__name__)
        validate_data(self, X, reset=False, skip_check_array=True)
        return self.domain_.decision_function(rows)
