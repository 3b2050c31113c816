"""Pictures of a run: convergence of the bounds and the aggregation rate per iteration."""

from __future__ import annotations

from pathlib import Path

from aidopt.data.io import check_output_path
from aidopt.result import AIDResult

__all__ = ["PLOT_SUFFIXES", "check_plot_path", "plot_history"]

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
