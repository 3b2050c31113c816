"""Keeping native libraries off stdout.

C libraries write to file descriptor 1 directly (highspy ≥ 1.16 prints a banner whenever a
``Highs`` object is constructed), so ``sys.stdout`` redirection cannot catch them. The command
line isolates fd 1 for its whole run; :func:`silenced_stdout` does it for one call of the
Python API.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator

__all__ = ["flush_c_stdio", "silenced_stdout"]


def flush_c_stdio() -> None:
    """Flush the C library's stdio buffers (what a native library printf'ed but has not yet
    written), so that it reaches the descriptor fd 1 points at now."""
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL(None).fflush(None)


@contextlib.contextmanager
def silenced_stdout(active: bool = True, *, discard: bool = False) -> Iterator[None]:
    """Send what is written to fd 1 during the block to fd 2, or with ``discard`` nowhere (not
    thread-safe: fd 1 is global)."""
    if not active:
        yield
        return
    try:
        sys.stdout.flush()
        saved = os.dup(1)
    except (OSError, ValueError, AttributeError):  # no real stdout (e.g. a captured one)
        yield
        return
    try:
        if discard:
            sink = os.open(os.devnull, os.O_WRONLY)
            os.dup2(sink, 1)
            os.close(sink)
        else:
            os.dup2(2, 1)
        yield
    finally:
        with contextlib.suppress(OSError, ValueError):
            sys.stdout.flush()
        flush_c_stdio()
        os.dup2(saved, 1)
        os.close(saved)
