"""Wall-clock limits that hold everywhere in a run, including code that cannot be interrupted.

The driver opens one :func:`deadline` per run; anything long-running below it (an inner solver,
a sample fit that places the initial clusters, a data pass) asks :func:`remaining` for the
seconds left and passes them on, or calls :func:`check` between steps. When the time is up,
:class:`TimeLimitReached` unwinds to the driver, which reports status ``time_limit``.

Native code that has no time limit of its own (libsvm/liblinear inside scikit-learn) runs
under :func:`call_with_timeout`: in a forked child process that is killed at the deadline.
"""

from __future__ import annotations

import contextlib
import math
import os
import pickle
import select
import signal
import time
import traceback
import warnings
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Any, TypeVar

from aidopt.exceptions import AidoptError

__all__ = [
    "Deadline",
    "TimeLimitReached",
    "budget",
    "call_with_timeout",
    "check",
    "current",
    "deadline",
    "remaining",
]

T = TypeVar("T")


class TimeLimitReached(AidoptError):
    """The run's time limit was reached inside a step that had no answer yet."""


class Deadline:
    """A point in time (``time.perf_counter`` clock) or none (no limit)."""

    def __init__(self, seconds: float | None) -> None:
        self.seconds = seconds
        self._end = None if seconds is None else time.perf_counter() + float(seconds)

    def remaining(self) -> float | None:
        """Seconds left (≥ 0), or None without a limit."""
        if self._end is None:
            return None
        return max(0.0, self._end - time.perf_counter())

    def expired(self) -> bool:
        return self._end is not None and time.perf_counter() >= self._end

    def check(self, what: str) -> None:
        """Raise :class:`TimeLimitReached` naming ``what`` once the time is up."""
        if self.expired():
            raise TimeLimitReached(f"time limit {self.seconds:g} s reached during {what}")


_NO_LIMIT = Deadline(None)
_current: ContextVar[Deadline] = ContextVar("aidopt_deadline", default=_NO_LIMIT)


def current() -> Deadline:
    """The deadline of the innermost :func:`deadline` block (no limit outside any)."""
    return _current.get()


def remaining() -> float | None:
    """Seconds left before the current deadline, or None."""
    return _current.get().remaining()


def check(what: str) -> None:
    """Raise :class:`TimeLimitReached` if the current deadline has passed."""
    _current.get().check(what)


def budget(limit: float | None = None, share: float = 1.0) -> float | None:
    """Seconds a step may take: the smaller of ``limit`` and ``share`` × the time left before
    the current deadline (None when there is neither)."""
    left = remaining()
    if left is not None:
        left *= share
    if limit is None:
        return left
    return float(limit) if left is None else min(float(limit), left)


@contextlib.contextmanager
def deadline(seconds: float | None) -> Iterator[Deadline]:
    """Set the deadline for the block; an enclosing, earlier deadline stays in force."""
    outer = _current.get()
    inner = Deadline(seconds)
    left = outer.remaining()
    if left is not None and (seconds is None or left < seconds):
        inner = outer
    token = _current.set(inner)
    try:
        yield inner
    finally:
        _current.reset(token)


def _run_child(write_fd: int, func, args, kwargs) -> None:  # pragma: no cover - in the child
    """Run func, send the pickled ("ok", result) or ("error", details) and leave by _exit."""
    code = 1
    try:
        try:
            payload = pickle.dumps(("ok", func(*args, **kwargs)))
        except BaseException as exc:  # everything, an unpicklable result too, is reported
            details = (type(exc).__name__, str(exc), traceback.format_exc())
            payload = pickle.dumps(("error", details))
        with os.fdopen(write_fd, "wb") as pipe:
            pipe.write(payload)
        code = 0
    finally:
        os._exit(code)  # no atexit handlers, no buffers flushed twice, no parent frames resumed


def call_with_timeout(
    func: Callable[..., T], *args: Any, timeout: float | None, what: str, **kwargs: Any
) -> T:
    """``func(*args, **kwargs)``, killed after ``timeout`` seconds (None: called directly).

    With a limit, the call runs in a forked child process (the data are shared copy-on-write;
    only the result travels back, pickled, through a pipe), so native code without a time
    limit of its own is stopped at the deadline. Raises :class:`TimeLimitReached` naming
    ``what`` when killed, and re-raises a failure of ``func`` as an :class:`AidoptError` with
    its message. ``os.fork`` is used directly, not ``multiprocessing``, so that it also works
    inside a daemonic worker (a ``multiprocessing.Pool`` process may not start children).
    """
    if timeout is None:
        return func(*args, **kwargs)
    if timeout <= 0.0:
        raise TimeLimitReached(f"time limit reached before {what}")
    if not hasattr(os, "fork"):  # pragma: no cover - not POSIX: no way to stop native code
        return func(*args, **kwargs)
    end = time.perf_counter() + timeout
    read_fd, write_fd = os.pipe()
    with warnings.catch_warnings():
        # Python ≥ 3.12 warns on fork() with threads alive (BLAS, HiGHS pools): the child only
        # runs func (single-threaded native code: libsvm, liblinear) and leaves by os._exit
        warnings.filterwarnings("ignore", message=".*fork.*", category=DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(read_fd)
        _run_child(write_fd, func, args, kwargs)
    os.close(write_fd)
    chunks: list[bytes] = []
    killed = False
    try:
        with os.fdopen(read_fd, "rb", buffering=0) as pipe:
            # wait for the first byte (the result is ready) at most until the deadline, then
            # read to the end: the child is only writing by then
            left = end - time.perf_counter()
            ready = left > 0.0 and (
                not math.isfinite(left) or bool(select.select([pipe], [], [], left)[0])
            )
            if not ready:
                os.kill(pid, signal.SIGKILL)
                killed = True
            else:
                while chunk := pipe.read(1 << 20):
                    chunks.append(chunk)
    finally:
        if not killed and not chunks:  # interrupted (KeyboardInterrupt) or crashed
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        _, wait_status = os.waitpid(pid, 0)
    if killed:
        raise TimeLimitReached(f"time limit reached during {what} (stopped after {timeout:.3g} s)")
    if not chunks:
        raise AidoptError(
            f"{what} crashed ({_describe_exit(wait_status)}) before returning a result."
        )
    status, value = pickle.loads(b"".join(chunks))
    if status == "error":
        name, message, _ = value
        raise AidoptError(f"{what} failed: {name}: {message}")
    return value


def _describe_exit(wait_status: int) -> str:
    if os.WIFSIGNALED(wait_status):
        return f"killed by signal {os.WTERMSIG(wait_status)}"
    return f"exit code {os.waitstatus_to_exitcode(wait_status)}"
