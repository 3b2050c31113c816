"""Pictures of a run: convergence of the bounds and the aggregation rate per iteration; the
clusters of a 2-D support-vector clustering."""

from __future__ import annotations

from pathlib import Path

from aidopt.core.result import AIDResult
from aidopt.data.io import check_output_path

__all__ = ["PLOT_SUFFIXES", "check_plot_path", "plot_clusters", "plot_history"]

#: the file types a plot can be saved as (written by matplotlib's Agg backend, no extra package)
PLOT_SUFFIXES = (".png", ".pdf", ".svg")


def check_plot_path(path: str | Path, option: str = "--plot") -> Path:
    """The plot's path, checked before any work: a .png, .pdf or .svg file in an existing,
    writable directory (an :class:`aidopt.exceptions.AidoptError` otherwise)."""
    return check_output_path(path, option, PLOT_SUFFIXES)


def plot_history(result: AIDResult, path: str | Path) -> Path:
    """Save a two-panel figure: bounds (lower F^t, upper E^t, best) and rate r^t per iteration
    as .png, .pdf or .svg (by the suffix of ``path``)."""
    out = check_plot_path(path, "path")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    h = result.history
    fig, (ax_b, ax_r) = plt.subplots(1, 2, figsize=(10, 4), constrained_layout=True)
    ax_b.plot(h["iteration"], h["upper_bound"], "o-", label="upper bound $E^t$")
    ax_b.plot(h["iteration"], h["best_upper_bound"], "--", label="best upper bound")
    if h["lower_bound"].notna().any():
        ax_b.plot(h["iteration"], h["lower_bound"], "s-", label="lower bound $F^t$")
    ax_b.set_xlabel("iteration t")
    ax_b.set_ylabel("objective")
    ax_b.set_title(f"{result.model}: bounds ({result.status.value})")
    ax_b.legend()
    ax_r.plot(h["iteration"], 100 * h["rate"], "o-", color="tab:green")
    ax_r.set_xlabel("iteration t")
    ax_r.set_ylabel("aggregation rate $r^t$ (%)")
    ax_r.set_title("clusters / n")
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out


def plot_clusters(X, fitted, path: str | Path, title: str | None = None) -> Path:
    """Save a 2-D support-vector clustering: the rows coloured by cluster, the contour f = 0 of
    the domain, the equilibria (black crosses) and the support vectors (hollow circles)."""
    import numpy as np

    out = check_plot_path(path, "path")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    X = np.asarray(X, dtype=np.float64)
    pad = 0.1 * (X.max(axis=0) - X.min(axis=0) + 1e-12)
    lo, hi = X.min(axis=0) - pad, X.max(axis=0) + pad
    gx, gy = np.meshgrid(np.linspace(lo[0], hi[0], 200), np.linspace(lo[1], hi[1], 200))
    f = fitted.decision_function(np.column_stack([gx.ravel(), gy.ravel()])).reshape(gx.shape)
    fig, ax = plt.subplots(figsize=(6, 5), constrained_layout=True)
    ax.contourf(gx, gy, f, levels=[0, max(float(f.max()), 1e-12)], colors=["#fde0c5"])
    ax.contour(gx, gy, f, levels=[0], colors="tab:orange", linewidths=1.2)
    ax.scatter(X[:, 0], X[:, 1], c=fitted.labels_, cmap="tab10", s=8)
    sv = fitted.support_vectors_
    if sv.shape[0] <= 2000:
        ax.scatter(
            sv[:, 0],
            sv[:, 1],
            facecolors="none",
            edgecolors="k",
            s=30,
            linewidths=0.6,
            label=f"support vectors ({sv.shape[0]})",
        )
    eq = fitted.equilibria_
    ax.scatter(eq[:, 0], eq[:, 1], marker="x", c="k", s=40, label=f"equilibria ({eq.shape[0]})")
    ax.set_title(title or f"{fitted.method}: {fitted.n_clusters_} clusters (f = 0 in orange)")
    ax.legend(loc="best", fontsize=8)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out
