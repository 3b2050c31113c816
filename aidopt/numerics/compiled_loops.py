"""The numba loops behind :mod:`aidopt.numerics.compiled` (imported only when the kernels load:
numba is optional). Module-level functions, so that numba's disk cache serves them in every process
(a loop that calls a helper held in a closure is compiled again in each)."""

import numba
import numpy as np
from numba import prange

_parallel = numba.njit(parallel=True, cache=True)


@_parallel
def label_sums(labels, a, v, k, parts, rows):
    # Σ_{labels_i = c} a_i, and Σ v_i in a last column when v has one entry per row (else
    # empty), over the rows ``rows`` of a and v when given (labels_i: the label of rows[i]),
    # else over all; with the number of labels outside [0, k) (their rows skipped)
    n, p = a.shape
    m = rows.size if rows.size else n
    q = p + min(v.size, 1)
    tables = np.zeros((parts, k, q))
    outside = 0
    for t in prange(parts):
        table = tables[t]
        for i in range(t * m // parts, (t + 1) * m // parts):
            c = labels[i]
            if c < 0 or c >= k:
                outside += 1
                continue
            r = rows[i] if rows.size else i
            for j in range(p):
                table[c, j] += a[r, j]
            if q > p:
                table[c, p] += v[r]
    total = tables[0]
    for t in range(1, parts):
        total += tables[t]
    return total, outside


@numba.njit(cache=True)
def kept_rows(labels, keep):
    # the rows i whose label has keep[labels_i] (in order), and the number of labels outside
    # keep's table (then no rows)
    n = labels.size
    out = np.empty(n, dtype=np.int64)
    found = 0
    outside = 0
    for i in range(n):
        c = labels[i]
        if c < 0 or c >= keep.size:
            outside += 1
        elif keep[c]:
            out[found] = i
            found += 1
    if outside:
        return np.empty(0, dtype=np.int64), outside
    return out[:found].copy(), 0


@_parallel
def chunk_tdot(a, v, chunk):
    n, p = a.shape
    out = np.zeros(((n + chunk - 1) // chunk, p))
    for c in prange(out.shape[0]):
        row = out[c]
        for i in range(c * chunk, min(n, (c + 1) * chunk)):
            vi = v[i]
            for j in range(p):
                row[j] += vi * a[i, j]
    return out


@numba.njit(inline="always", cache=True)
def dual_scalars(sums, ui, yi):
    # (Σ u y, Σ |fl(u y)|, Σ u, Σ |u|, max |u|) with the row's u_i and y_i added
    uy_sum, uy_abs, u_sum, u_abs, u_max = sums
    uy = ui * yi
    return uy_sum + uy, uy_abs + abs(uy), u_sum + ui, u_abs + abs(ui), max(u_max, abs(ui))


@numba.njit(inline="always", cache=True)
def dual_rows4(a, y, labels, duals, i, products, scalars):
    # rows i … i + 3 into each dual d (u_i = duals[d, labels_i], each looked up once):
    # products[d] += Σ u_i a_i, four rows per store (the order rounding.GAMMA_FOURS counts), and
    # scalars[d] = Σ u y, Σ |fl(u y)|, Σ u, Σ |u|, max |u| in row order
    p = a.shape[1]
    for d in range(duals.shape[0]):
        u0 = duals[d, labels[i]]
        u1 = duals[d, labels[i + 1]]
        u2 = duals[d, labels[i + 2]]
        u3 = duals[d, labels[i + 3]]
        sums = (scalars[d, 0], scalars[d, 1], scalars[d, 2], scalars[d, 3], scalars[d, 4])
        sums = dual_scalars(sums, u0, y[i])
        sums = dual_scalars(sums, u1, y[i + 1])
        sums = dual_scalars(sums, u2, y[i + 2])
        sums = dual_scalars(sums, u3, y[i + 3])
        for k in range(5):
            scalars[d, k] = sums[k]
        row = products[d]
        for j in range(p):
            row[j] += (u0 * a[i, j] + u1 * a[i + 1, j]) + (u2 * a[i + 2, j] + u3 * a[i + 3, j])


@numba.njit(inline="always", cache=True)
def dual_row(a, y, labels, duals, i, products, scalars):
    # row i alone into each dual (a chunk's last rows, fewer than four)
    p = a.shape[1]
    for d in range(duals.shape[0]):
        ui = duals[d, labels[i]]
        sums = (scalars[d, 0], scalars[d, 1], scalars[d, 2], scalars[d, 3], scalars[d, 4])
        sums = dual_scalars(sums, ui, y[i])
        for k in range(5):
            scalars[d, k] = sums[k]
        row = products[d]
        for j in range(p):
            row[j] += ui * a[i, j]


@numba.njit(inline="always", cache=True)
def outside(labels, start, stop, k):
    # #{i in start … stop − 1: labels_i ∉ [0, k)} (such a chunk is not summed: the loops do
    # not check their indices)
    count = 0
    for i in range(start, stop):
        count += (labels[i] < 0) | (labels[i] >= k)
    return count


@_parallel
def cluster_dual_sums(a, y, labels, duals, chunk):
    # with the number of rows whose label lies outside the duals' columns
    n, p = a.shape
    q = duals.shape[0]
    chunks = (n + chunk - 1) // chunk
    products = np.zeros((chunks, q, p))
    scalars = np.zeros((chunks, q, 5))
    bad = 0
    for c in prange(chunks):
        start, stop = c * chunk, min(n, (c + 1) * chunk)
        found = outside(labels, start, stop, duals.shape[1])
        bad += found
        if found == 0:
            i = start
            while i + 4 <= stop:
                dual_rows4(a, y, labels, duals, i, products[c], scalars[c])
                i += 4
            for r in range(i, stop):
                dual_row(a, y, labels, duals, r, products[c], scalars[c])
    return products, scalars, bad


@numba.njit(inline="always", cache=True)
def residual(a, y, coef, intercept, i):
    # r_i = (y_i − a_i·coef) − intercept, the products added in column order
    fit = 0.0
    for j in range(a.shape[1]):
        fit += a[i, j] * coef[j]
    return (y[i] - fit) - intercept


@numba.njit(inline="always", cache=True)
def residuals4(a, y, coef, intercept, i):
    # residual() of rows i … i + 3, to the bit: four independent chains of additions instead
    # of one (the one-row loop waits on each addition; 1.3–1.5× faster measured)
    f0, f1, f2, f3 = 0.0, 0.0, 0.0, 0.0
    for j in range(a.shape[1]):
        cj = coef[j]
        f0 += a[i, j] * cj
        f1 += a[i + 1, j] * cj
        f2 += a[i + 2, j] * cj
        f3 += a[i + 3, j] * cj
    return (
        (y[i] - f0) - intercept,
        (y[i + 1] - f1) - intercept,
        (y[i + 2] - f2) - intercept,
        (y[i + 3] - f3) - intercept,
    )


@_parallel
def residual_loss(a, y, coef, intercept, c_plus, c_minus, chunk, labels, duals, with_abs):
    # per chunk: |r_i| and [r_i > 0], Σ ρ(r) in row order, Σ|a_ij| when with_abs (four rows
    # per addition to the column's sum), and the sums of cluster_dual_sums (the same bits),
    # each four rows' share added while they are in cache (one read of a; adding each dual's
    # share after the chunk's residuals read the chunk again: 1.15–1.2× slower measured); with
    # the number of rows whose label lies outside the duals' columns (such a chunk: no duals)
    n, p = a.shape
    q = duals.shape[0]
    chunks = (n + chunk - 1) // chunk
    size = np.empty(n)
    positive = np.empty(n, dtype=np.int8)
    loss = np.zeros(chunks)
    abs_sums = np.zeros((chunks if with_abs else 0, p))
    products = np.zeros((chunks, q, p))
    scalars = np.zeros((chunks, q, 5))
    bad = 0
    for c in prange(chunks):
        start, stop = c * chunk, min(n, (c + 1) * chunk)
        with_duals = False
        if q:
            found = outside(labels, start, stop, duals.shape[1])
            bad += found
            with_duals = found == 0
        total = 0.0
        i = start
        while i < stop:
            if i + 4 <= stop:
                rows = 4
                r4 = residuals4(a, y, coef, intercept, i)
                if with_abs:
                    for j in range(p):
                        abs_sums[c, j] += (abs(a[i, j]) + abs(a[i + 1, j])) + (
                            abs(a[i + 2, j]) + abs(a[i + 3, j])
                        )
                if with_duals:
                    dual_rows4(a, y, labels, duals, i, products[c], scalars[c])
            else:
                rows = 1
                r4 = (residual(a, y, coef, intercept, i), 0.0, 0.0, 0.0)
                if with_abs:
                    for j in range(p):
                        abs_sums[c, j] += abs(a[i, j])
                if with_duals:
                    dual_row(a, y, labels, duals, i, products[c], scalars[c])
            for k in range(rows):
                r = r4[k]
                size[i + k] = abs(r)
                positive[i + k] = r > 0
                total += c_plus * r if r > 0 else -c_minus * r
            i += rows
        loss[c] = total
    return size, positive, loss, abs_sums, products, scalars, bad


@numba.njit(inline="always", cache=True)
def count_below(edges, guide, origin, scale, value):
    # #{e: edges[e] < value} (= np.searchsorted(edges, value), side 'left') for sorted edges:
    # the guide's count at value's cell of a uniform grid, corrected by a comparison or two
    # (exact whatever the guide's rounding; value NaN: cell 0, then the walk)
    t = (value - origin) * scale
    cell = 0
    if t >= guide.size - 1:
        cell = guide.size - 1
    elif t > 0:
        cell = int(t)
    count = guide[cell]
    while count > 0 and edges[count - 1] >= value:
        count -= 1
    while count < edges.size and edges[count] < value:
        count += 1
    return count


@_parallel
def residual_bins(
    a,
    y,
    coef,
    intercept,
    edges,
    guide,
    origin,
    scale,
    low,
    high,
    above,
    guide_a,
    origin_a,
    scale_a,
    offset,
):
    # (guide, origin, scale): count_below's grid for edges, (guide_a, origin_a, scale_a) for
    # above; rows in fours (residuals4)
    n = a.shape[0]
    bins = edges.size + 1
    labels = np.empty(n, dtype=np.int64)
    for g in prange((n + 3) // 4):
        i = 4 * g
        if i + 4 <= n:
            rows = 4
            r4 = residuals4(a, y, coef, intercept, i)
        else:
            rows = n - i
            r4 = (0.0, 0.0, 0.0, 0.0)
        for k in range(rows):
            r = r4[k] if rows == 4 else residual(a, y, coef, intercept, i + k)
            if r < low:
                labels[i + k] = count_below(edges, guide, origin, scale, r)
            elif r > high:
                labels[i + k] = bins + count_below(above, guide_a, origin_a, scale_a, r)
            else:
                labels[i + k] = 2 * bins + offset + i + k
    return labels


@_parallel
def abs_column_sums(a, parts):
    n, q = a.shape
    tables = np.zeros((parts, q))
    for t in prange(parts):
        table = tables[t]
        for i in range(t * n // parts, (t + 1) * n // parts):
            for j in range(q):
                table[j] += abs(a[i, j])
    return tables.sum(axis=0)


@numba.njit(cache=True)
def compensated_column_sums(rows):
    n, q = rows.shape
    high, low, size = np.zeros(q), np.zeros(q), np.zeros(q)
    for i in range(n):
        for j in range(q):
            p = rows[i, j]
            x = high[j] + p  # TwoSum: x + t = high + p exactly
            z = x - high[j]
            low[j] += (high[j] - (x - z)) + (p - z)
            high[j] = x
            size[j] += abs(p)
    return high + low, size


@numba.njit(cache=True)
def renumbered(labels, top):
    # the labels present (sorted; all in [0, top)), their counts, each row's rank among them
    # (int32), and the number of rows whose label lies outside [0, top) (then nothing else)
    n = labels.size
    count = np.zeros(top, dtype=np.int32)
    outside = 0
    for i in range(n):
        c = labels[i]
        if c < 0 or c >= top:
            outside += 1
        else:
            count[c] += 1
    if outside:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, np.zeros(0, dtype=np.int32), outside
    k = 0
    for c in range(top):
        if count[c]:
            k += 1
    present = np.empty(k, dtype=np.int64)
    counts = np.empty(k, dtype=np.int64)
    rank = count  # overwritten in place: rank[c] for the labels present
    k = 0
    for c in range(top):
        if count[c]:
            present[k] = c
            counts[k] = count[c]
            rank[c] = k
            k += 1
    inverse = np.empty(n, dtype=np.int32)
    for i in range(n):
        inverse[i] = rank[labels[i]]
    return present, counts, inverse, 0
