"""The iteration log: one fixed-width row per AID iteration (after Pyomo's GDPopt)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from aidopt.core.result import IterationRecord

__all__ = ["format_record", "iteration_header", "logger", "verbosity"]

logger = logging.getLogger("aidopt")
logger.addHandler(logging.NullHandler())

_HEADER = (
    f"{'Iter':>4} {'Clusters':>9} {'Rate%':>7} {'Impure':>7} "
    f"{'Lower bound':>16} {'Upper bound':>16}  {'Gap':>9} {'Solve(s)':>9} {'Pass(s)':>8}"
)


def iteration_header() -> str:
    return _HEADER


def _num(value: float | None, width: int, fmt: str) -> str:
    return f"{'-':>{width}}" if value is None else f"{value:>{width}{fmt}}"


def format_record(record: IterationRecord, improved: bool) -> str:
    """A table row; '*' marks an improved best upper bound."""
    mark = "*" if improved else " "
    return (
        f"{record.iteration:>4} {record.clusters:>9d} {100 * record.rate:>7.3f} "
        f"{record.impure_clusters:>7d} {_num(record.lower_bound, 16, '.8g')} "
        f"{record.upper_bound:>16.8g}{mark} {_num(record.gap, 9, '.2e')} "
        f"{record.solve_seconds:>9.3f} {record.pass_seconds:>8.3f}"
    )


@contextmanager
def verbosity(verbose: bool) -> Iterator[None]:
    """While active, send aidopt's INFO log to stderr when ``verbose`` (restored afterwards)."""
    if not verbose or any(not isinstance(h, logging.NullHandler) for h in logger.handlers):
        yield
        return
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(message)s"))
    old_level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)
