"""Freed memory kept for reuse in the command-line process (glibc's allocator).

glibc serves a request above its mmap threshold (at most 32 MB) with a fresh mapping and unmaps
it when freed, so every temporary vector of 10^7 rows (80 MB) is new pages whose first touch
faults; on this project's VM that costs 0.01–0.3 s per vector, ~2.3 s of an 11 s LAD fit at
10^7 × 20 (docs/scale.md). :func:`keep_freed_memory` asks glibc to serve large requests from its
heap (``M_MMAP_MAX`` = 0) and to keep freed memory there (``M_TRIM_THRESHOLD`` = 2^31 − 1
bytes): the next vector reuses the pages of the last one. A request the heap cannot serve still
gets a mapping (glibc falls back to mmap), and threads' arenas are unchanged.

It changes the whole process, so only the command line (:func:`aidopt.cli.main`, not with
``--engine dask``, whose driver holds only aggregated data) and the in-memory methods of
``aidopt bench scale`` call it, never the library; ``AIDOPT_KEEP_FREED_MEMORY=0`` turns it
off (freed memory then goes back to the system at once: a lower peak where many temporaries of
different sizes alternate, e.g. +30 % for the linear SVM at 10^7 rows in memory).

It also turns off numpy's advice to back arrays of 4 MB and more with 2 MB transparent huge
pages (``madvise``), unless ``NUMPY_MADVISE_HUGEPAGE`` says otherwise (numpy's own switch, then
left alone): a fresh huge page must be 2 MB of contiguous memory, which this VM's host backs
page by page on first touch, while small pages reuse memory the guest already holds. Measured
on the first LAD fit of a process at 10^7 × 20 in memory (the fit ``aidopt bench scale``
times): 3.44–3.58 s without the advice, 4.15–4.55 s with it; later fits 3.33–3.55 s vs
3.24–4.03 s.
"""

from __future__ import annotations

import os
import sys

__all__ = ["keep_freed_memory"]

_M_TRIM_THRESHOLD = -1  # glibc's malloc.h
_M_MMAP_MAX = -4
_KEPT_BYTES = 2**31 - 1  # mallopt takes an int


def keep_freed_memory() -> bool:
    """Set glibc's allocator and numpy's page advice as the module says; False where the C
    library is not glibc (or refuses), whose allocator it leaves as it is."""
    if not sys.platform.startswith("linux") or os.environ.get("AIDOPT_KEEP_FREED_MEMORY") == "0":
        return False
    _small_pages_for_numpy()
    import ctypes

    try:
        libc = ctypes.CDLL(None)  # the process's own C library
    except OSError:
        return False
    if not hasattr(libc, "gnu_get_libc_version"):  # musl and others: their own allocators
        return False
    mallopt = libc.mallopt
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_MMAP_MAX, 0)) and bool(mallopt(_M_TRIM_THRESHOLD, _KEPT_BYTES))


def _small_pages_for_numpy() -> None:
    """numpy's huge-page advice off (see the module docstring), unless NUMPY_MADVISE_HUGEPAGE
    is set; nothing on a numpy without the switch."""
    if "NUMPY_MADVISE_HUGEPAGE" in os.environ:
        return
    try:
        from numpy._core import multiarray
    except ImportError:  # numpy 1.x
        from numpy.core import multiarray  # type: ignore[no-redef]
    advise = getattr(multiarray, "_set_madvise_hugepage", None)
    if callable(advise):
        advise(False)
