"""BLAS threads for methods made of many small matrix products.

A step of USMO or of the SVM active set is a handful of products of a few thousand rows: with
BLAS threads each one pays the threads' start-up, and beside another busy process the threads
wait on each other (measured: an AID run of 30,000 × 100 took 252 s with two BLAS threads next
to a benchmark, 16 s with one; LAD on 2·10^6 × 20 beside one busy process 12.4–13.0 s with two,
3.1–3.3 s with one, a (21 × K)(K × 21) product alone taking 1.8–3.2 s). AID runs under
:func:`single_thread_blas`; a method that parallelises on its own (Frisch–Newton's X'QX by row
blocks) asks :func:`blas_threads` how many threads the caller allowed.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import sys
from collections.abc import Iterator

from threadpoolctl import ThreadpoolController

__all__ = ["blas_threads", "single_thread_blas"]

_ALLOWED: contextvars.ContextVar[int | None] = contextvars.ContextVar(
    "aidopt_blas_threads", default=None
)


def _blas_controller() -> ThreadpoolController:
    """threadpoolctl's view of the loaded BLAS libraries, scanned again only after an import (a
    BLAS can arrive late: SciPy's own OpenBLAS comes with ``scipy.linalg``, which aidopt imports
    on first use)."""
    return _controller(len(sys.modules))


@functools.lru_cache(maxsize=1)
def _controller(modules_loaded: int) -> ThreadpoolController:
    return ThreadpoolController()


def blas_threads() -> int:
    """The BLAS threads the caller allows: the libraries' setting outside
    :func:`single_thread_blas`, the setting it replaced inside."""
    allowed = _ALLOWED.get()
    if allowed is not None:
        return allowed
    libraries = _blas_controller().info()
    return max((i["num_threads"] for i in libraries if i["user_api"] == "blas"), default=1)


@contextlib.contextmanager
def single_thread_blas() -> Iterator[None]:
    """BLAS limited to one thread within (nested uses keep the outermost :func:`blas_threads`)."""
    token = _ALLOWED.set(blas_threads())
    try:
        with _blas_controller().limit(limits=1, user_api="blas"):
            yield
    finally:
        _ALLOWED.reset(token)
