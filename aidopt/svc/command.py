"""``aidopt cluster``: support-vector clustering of a data file (CSV or Parquet).

    aidopt cluster --data F.csv [--target LABELS] --method M --gamma G --C C [--budget 50]
                   [--json] [--plot out.png]

JSON: ``labels`` (one per row, in file order), ``n_clusters``, ``times`` (training = phase 1,
clustering = phase 2, seconds), the method's ``fit`` report (AID: status, bounds, gap), and
``metrics`` when a label column is named (purity both ways, Rand, NMI, Davies–Bouldin,
compactness; :mod:`aidopt.svc.metrics`).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

from aidopt.common.options import add_to_parser, from_args

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from aidopt.data.io import DATA_HELP
    from aidopt.svc.options import CLUSTER_OPTIONS

    parser.add_argument("--data", required=True, help=DATA_HELP)
    parser.add_argument(
        "--target", default=None, help="a column of class labels: left out, and scored against"
    )
    add_to_parser(parser, CLUSTER_OPTIONS)
    parser.add_argument("--json", action="store_true", help="print one JSON object to stdout")
    parser.add_argument(
        "--plot", type=Path, default=None, help="save a picture of a 2-D run (.png, .pdf, .svg)"
    )
    parser.add_argument("--quiet", action="store_true", help="no log")


def run(args: argparse.Namespace) -> tuple[dict[str, Any], str]:
    """Fit, label and score; returns (the JSON payload, its text form)."""
    from aidopt.data.containers import FeatureData
    from aidopt.data.io import read_table, target_column
    from aidopt.exceptions import DataError
    from aidopt.svc.estimator import SupportVectorClustering
    from aidopt.svc.metrics import clustering_scores
    from aidopt.svc.options import CLUSTER_OPTIONS

    if args.plot is not None:
        from aidopt.plots import check_plot_path

        check_plot_path(args.plot)
    frame = read_table(args.data)
    classes = None
    if args.target is not None:
        if args.target not in frame.columns:
            raise DataError(f"Column {args.target!r} not found in {args.data}.")
        classes = target_column(frame, args.target)
    data = FeatureData.from_frame(frame, args.target)
    if args.plot is not None and data.m != 2:
        raise DataError(f"--plot draws 2-D data; this file has {data.m} feature columns.")
    est = SupportVectorClustering(**from_args(CLUSTER_OPTIONS, args)).fit(data.X)
    scores = clustering_scores(data.X, est.labels_, classes)
    payload = {
        "method": est.method,
        "labels": [int(v) for v in est.labels_],
        "n_clusters": int(est.n_clusters_),
        "times": {"training": est.training_time_, "clustering": est.clustering_time_},
        "fit": est.fit_info_,
        "strip_eps": est.eps_,
        "n_equilibria": int(est.equilibria_.shape[0]),
        "metrics": {k: v for k, v in scores.items() if k != "n_clusters"},
    }
    if args.plot is not None:
        from aidopt.plots import plot_clusters

        plot_clusters(data.X, est, args.plot)
    return payload, _text(payload)


def _text(payload: dict[str, Any]) -> str:
    sizes = np.bincount(payload["labels"])
    lines = [
        f"method      {payload['method']}",
        f"clusters    {payload['n_clusters']}  (sizes {', '.join(map(str, sizes[:20]))}"
        + (", ...)" if sizes.size > 20 else ")"),
        f"training    {payload['times']['training']:.3f} s",
        f"clustering  {payload['times']['clustering']:.3f} s",
    ]
    lines += [f"{k:<11} {v}" for k, v in payload["fit"].items()]
    lines += [f"{k:<24} {v:.4g}" for k, v in payload["metrics"].items()]
    return "\n".join(lines)
