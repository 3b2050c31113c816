"""Cluster labelling of a domain of novelty (Pham, Le & Dang, Algorithm 3; Ben-Hur et al. 2001).

The clusters are the connected pieces of {x : f(x) ≥ 0}. Algorithm 3, vectorised (n_SV support
vectors, d features, M equilibria, m segment points):

1. the strip B_ε = {x_i : |f(x_i)| ≤ ε}. The paper leaves ε open; here ε is a parameter, and by
   default the smallest value that puts ``strip_fraction`` of the rows in the strip (a quantile
   of |f|; at least ``min_strip`` rows) — O(N·n_SV·d) for f;
2. each strip point's equilibrium: the weighted mean shift x ← P(x) = Σ c_j K(s_j, x) s_j /
   Σ c_j K(s_j, x) (RBF; ∇f(x) = 0 ⇔ P(x) = x), all strip points at once until every move is
   below ``tol``/√γ — O(|B_ε|·n_SV·d) per sweep; equilibria within ``merge_tol``/√γ of each other
   are one (single linkage on a k-d tree);
3. the segment test on all pairs of equilibria: e_a ~ e_b iff f(e_a + s(e_b − e_a)) ≥ 0 at m = 20
   points s evenly spaced in [0, 1], endpoints included — O(M²·m·n_SV·d) at most; evaluated
   coarse to fine (middle first, rounds of 1, 2, 4, ... points on the pairs still inside), so a
   pair that leaves the domain costs a few points, not m;
4. clusters = connected components of that graph (scipy.sparse.csgraph); a strip point takes its
   equilibrium's cluster, every other row its nearest strip point's (k-d tree, O(N log |B_ε|)).

:func:`complete_graph_labels` is Ben-Hur's labelling, the baseline: the segment test on all
N(N − 1)/2 pairs of rows (O(N²·m·n_SV·d); small N only), components, and points outside the
domain (f < 0, "bounded support vectors") given their nearest inside row's cluster.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy.sparse.csgraph import connected_components
from scipy.spatial import cKDTree

from aidopt.common.lazy import sparse as sp
from aidopt.exceptions import DataError, InvalidParameterError
from aidopt.numerics.kernel_expansion import Domain

__all__ = ["Labelling", "complete_graph_labels", "equilibria", "label_by_equilibria"]

_SEGMENT_POINTS_PER_BLOCK = 1 << 16  # segment points evaluated per block of the pair test


@dataclass(frozen=True)
class Labelling:
    """Cluster labels 0..n_clusters−1 per row, the equilibria, which rows formed the strip, ε,
    and the mean-shift sweeps."""

    labels: NDArray[np.int64]
    n_clusters: int
    equilibria: NDArray[np.float64]
    strip: NDArray[np.int64]
    eps: float
    sweeps: int


def _require_rbf(domain: Domain) -> None:
    if domain.kernel.kind != "rbf":
        raise InvalidParameterError(
            "The equilibrium labelling needs the RBF kernel (its mean-shift fixed point); "
            f"got the {domain.kernel.kind} kernel."
        )
    if domain.support_vectors.shape[0] == 0:
        raise DataError("The domain has no support vectors: there is nothing to cluster.")


def equilibria(
    domain: Domain, X: NDArray[np.float64], *, tol: float = 1e-6, max_sweeps: int = 5000
) -> tuple[NDArray[np.float64], int]:
    """The limits of x ← P(x) from every row of X (the weighted mean shift; an ascent of f when
    the coefficients are ≥ 0), and the sweeps taken. Rows whose weights cancel (Σ c_j K ≈ 0,
    possible after projection) stay where they are."""
    _require_rbf(domain)
    x = np.array(X, dtype=np.float64, copy=True)
    step_tol = tol / math.sqrt(domain.gamma)
    active = np.arange(x.shape[0])
    sweeps = 0
    while active.size and sweeps < max_sweeps:
        sweeps += 1
        moved, weight = domain.mean_shift(x[active])
        dead = np.abs(weight) <= 1e-300
        moved[dead] = x[active[dead]]
        shift = np.sqrt(((moved - x[active]) ** 2).sum(axis=1))
        x[active] = moved
        active = active[shift > step_tol]
    return x, sweeps


def _merge(points: NDArray[np.float64], radius: float) -> tuple[NDArray[np.float64], NDArray]:
    """Points within ``radius`` of each other (single linkage) as one: representatives, owner.

    Mean shift sends many rows to (almost) the same point, and all pairs among them would not fit
    in memory at N = 10^6; so the points sharing a grid cell of side radius/√d (all within
    ``radius`` of each other, hence linked anyway) become one first, and the linkage runs on the
    first point of each cell."""
    side = radius / math.sqrt(points.shape[1])
    cells = np.floor(points / side)
    _, first_in_cell, cell_of = np.unique(cells, axis=0, return_index=True, return_inverse=True)
    reps = points[first_in_cell]
    pairs = cKDTree(reps).query_pairs(radius, output_type="ndarray")
    n = reps.shape[0]
    graph = sp.coo_matrix((np.ones(len(pairs)), (pairs[:, 0], pairs[:, 1])), shape=(n, n))
    _, owner_of_rep = connected_components(graph, directed=False)
    owner = owner_of_rep[cell_of.ravel()]
    first = np.unique(owner, return_index=True)[1]
    return points[first], owner


def _coarse_to_fine(m: int) -> NDArray[np.int64]:
    """The interior indices 1..m−2 of m evenly spaced points, middle first, then the midpoints
    of the gaps left (breadth-first bisection): a segment that leaves the domain usually
    leaves it near its middle."""
    order: list[int] = []
    gaps = [(0, m - 1)]
    while gaps:
        wider = []
        for lo, hi in gaps:
            if hi - lo > 1:
                mid = (lo + hi) // 2
                order.append(mid)
                wider += [(lo, mid), (mid, hi)]
        gaps = wider
    return np.array(order, dtype=np.int64)


def _segment_graph(domain: Domain, A, B, pairs, m) -> NDArray[np.bool_]:
    """For each pair (a, b): f ≥ 0 at all m points of the segment [A_a, B_b] (endpoints in).

    The same test, evaluated coarse to fine: the endpoints once per point (not per pair), then
    the interior points in rounds of 1, 2, 4, ... (middle first), each round only on the pairs
    still inside — a pair that fails costs the points up to its first failing round, not m."""
    s = np.linspace(0.0, 1.0, m)
    a_inside = domain.decision_function(A) >= 0.0
    b_inside = a_inside if B is A else domain.decision_function(B) >= 0.0  # E–E, rows–rows
    inside = a_inside[pairs[:, 0]] & b_inside[pairs[:, 1]]
    order = _coarse_to_fine(m)
    start, width = 0, 1
    while start < order.size and inside.any():
        t = s[order[start : start + width]]
        alive = np.flatnonzero(inside)
        step = max(1, _SEGMENT_POINTS_PER_BLOCK // t.size)
        for first in range(0, alive.size, step):
            block = pairs[alive[first : first + step]]
            a, b = A[block[:, 0]], B[block[:, 1]]
            points = a[:, None, :] + t[None, :, None] * (b - a)[:, None, :]
            f = domain.decision_function(points.reshape(-1, A.shape[1])).reshape(len(block), -1)
            inside[alive[first : first + step]] = np.all(f >= 0.0, axis=1)
        start, width = start + width, 2 * width
    return inside


def _components(n: int, pairs: NDArray[np.int64], linked: NDArray[np.bool_]) -> NDArray:
    kept = pairs[linked]
    graph = sp.coo_matrix((np.ones(len(kept)), (kept[:, 0], kept[:, 1])), shape=(n, n))
    return connected_components(graph, directed=False)[1].astype(np.int64)


def _all_pairs(n: int) -> NDArray[np.int64]:
    i, j = np.triu_indices(n, k=1)
    return np.column_stack([i, j]).astype(np.int64)


def _strip(f: NDArray[np.float64], eps, strip_fraction, min_strip) -> tuple[NDArray, float]:
    """B_ε's rows and ε (the quantile rule when ``eps`` is None)."""
    a = np.abs(f)
    if eps is None:
        count = min(a.size, max(min_strip, math.ceil(strip_fraction * a.size)))
        eps = float(np.partition(a, count - 1)[count - 1])
    strip = np.flatnonzero(a <= eps)
    if strip.size == 0:  # the digest §5.8: fall back to the rows nearest the boundary
        strip = np.argsort(a, kind="stable")[: min(a.size, min_strip)]
    return strip.astype(np.int64), float(eps)


def label_by_equilibria(
    domain: Domain,
    X: NDArray[np.float64],
    *,
    eps: float | None = None,
    strip_fraction: float = 0.1,
    min_strip: int = 50,
    m: int = 20,
    tol: float = 1e-6,
    merge_tol: float = 1e-3,
) -> Labelling:
    """Algorithm 3 on the rows of X (see the module)."""
    _require_rbf(domain)
    if eps is not None and not eps >= 0:
        raise InvalidParameterError(f"eps must be ≥ 0; got {eps!r}.")
    if not 0.0 < strip_fraction <= 1.0:
        raise InvalidParameterError(f"strip_fraction must be in (0, 1]; got {strip_fraction!r}.")
    if not (isinstance(m, (int, np.integer)) and m >= 2):
        raise InvalidParameterError(f"m must be an integer ≥ 2; got {m!r}.")
    if not (tol > 0 and merge_tol > 0):
        raise InvalidParameterError(f"tol and merge_tol must be > 0; got {tol!r}, {merge_tol!r}.")
    X = np.asarray(X, dtype=np.float64)
    strip, eps = _strip(domain.decision_function(X), eps, strip_fraction, min_strip)
    ends, sweeps = equilibria(domain, X[strip], tol=tol)
    E, owner = _merge(ends, merge_tol / math.sqrt(domain.gamma))
    pairs = _all_pairs(E.shape[0])
    cluster_of_e = _components(E.shape[0], pairs, _segment_graph(domain, E, E, pairs, m))
    labels = np.empty(X.shape[0], dtype=np.int64)
    labels[strip] = cluster_of_e[owner]
    rest = np.setdiff1d(np.arange(X.shape[0]), strip, assume_unique=True)
    if rest.size:
        labels[rest] = labels[strip][cKDTree(X[strip]).query(X[rest])[1]]
    _, labels = np.unique(labels, return_inverse=True)
    return Labelling(labels.astype(np.int64), int(labels.max()) + 1, E, strip, eps, sweeps)


def complete_graph_labels(domain: Domain, X: NDArray[np.float64], *, m: int = 20) -> Labelling:
    """Ben-Hur's labelling: the segment test on every pair of rows inside the domain, components;
    rows outside it (f < 0) take their nearest inside row's cluster."""
    X = np.asarray(X, dtype=np.float64)
    f = domain.decision_function(X)
    inside = np.flatnonzero(f >= 0.0)
    if inside.size == 0:
        inside = np.array([int(np.argmax(f))])
    pairs = _all_pairs(inside.size)
    Y = X[inside]
    comp = _components(inside.size, pairs, _segment_graph(domain, Y, Y, pairs, m))
    labels = np.empty(X.shape[0], dtype=np.int64)
    labels[inside] = comp
    rest = np.setdiff1d(np.arange(X.shape[0]), inside, assume_unique=True)
    if rest.size:
        labels[rest] = comp[cKDTree(Y).query(X[rest])[1]]
    _, labels = np.unique(labels, return_inverse=True)
    return Labelling(labels.astype(np.int64), int(labels.max()) + 1, Y, inside, 0.0, 0)
