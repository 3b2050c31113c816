"""BLAS threads for methods made of many small matrix products.

A step of USMO or of the SVM active set is a handful of products of a few thousand rows: with
BLAS threads each one pays the threads' start-up, and beside another busy process the threads
wait on each other (measured: an AID run of 30,000 × 100 took 252 s with two BLAS threads next
to a benchmark, 16 s with one). Such methods run under :func:`single_thread_blas`.
"""

from __future__ import annotations

import functools
import sys

from threadpoolctl import ThreadpoolController

__all__ = ["blas_controller", "single_thread_blas"]


def blas_controller() -> ThreadpoolController:
    """threadpoolctl's view of the loaded BLAS libraries, scanned again only after an import (a
    BLAS can arrive late: SciPy's own OpenBLAS comes with ``scipy.linalg``, which aidopt imports
    on first use)."""
    return _controller(len(sys.modules))


@functools.lru_cache(maxsize=1)
def _controller(modules_loaded: int) -> ThreadpoolController:
    return ThreadpoolController()


def single_thread_blas():
    """Context manager: BLAS limited to one thread."""
    return blas_controller().limit(limits=1, user_api="blas")
