"""Benchmark plumbing shared by ``aidopt bench MODEL``.

Every method runs in a fresh Python process (``python -m aidopt.bench.worker``) so that runs do
not share caches or heap, a hard time limit can kill a run, and the peak resident memory of that
process (and of any program it starts, such as R) is that run's alone. The worker times only the
fit, not reading the data; the peak memory includes the data.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

import pandas as pd

from aidopt.common.options import Option
from aidopt.exceptions import AidoptError, InvalidParameterError

__all__ = [
    "BenchOptionError",
    "generator_option",
    "parse_choice_list",
    "parse_float_list",
    "parse_int_list",
    "parse_row_sizes",
    "parse_sizes",
    "require_package",
    "run_isolated",
    "sklearn_classification",
    "write_outputs",
]


class BenchOptionError(InvalidParameterError, argparse.ArgumentTypeError):
    """A benchmark option that cannot be parsed. An aidopt error (the command line prints
    ``aidopt: error: ...`` and exits 2) that argparse also reports with its message when a
    parser below is an option's ``type``; a ValueError, as before."""


def generator_option(ours: str, theirs: str) -> Option:
    """A workload's ``--generator``: 'aidopt' (our generator ``ours``) or 'sklearn' (data aidopt
    did not generate: scikit-learn's ``theirs``)."""
    return Option(
        "generator",
        "aidopt",
        f"instances: 'aidopt' ({ours}) or 'sklearn' ({theirs})",
        kind=str,
        choices=("aidopt", "sklearn"),
    )


def sklearn_classification(
    n: int, m: int, seed: int, *, weights: tuple[float, ...] | None = None
) -> tuple[Any, Any]:
    """(X, y ∈ {0, 1}): scikit-learn's ``make_classification(n, m, n_informative=max(2, m // 2),
    flip_y=0.05, class_sep=0.8, weights=weights)``, standardised — the independent data of the
    SVM and PU benchmarks."""
    from sklearn.datasets import make_classification

    X, y = make_classification(
        n_samples=n,
        n_features=m,
        n_informative=max(2, m // 2),
        weights=weights,
        flip_y=0.05,
        class_sep=0.8,
        random_state=seed,
    )
    return (X - X.mean(axis=0)) / X.std(axis=0), y


def _count(text: str, what: str, *, low: int = 0) -> int:
    """A whole number ≥ low, written as an integer or in scientific notation ('1e4')."""
    try:
        value = float(text)
    except ValueError:
        raise BenchOptionError(f"bad {what} {text!r}: expected a whole number") from None
    if not value.is_integer() or value < low:
        raise BenchOptionError(f"bad {what} {text!r}: expected a whole number ≥ {low}")
    return int(value)


def parse_sizes(text: str) -> list[tuple[int, int]]:
    """'100000x10,400000x100' → [(100000, 10), (400000, 100)] (n ≥ 2 rows, m ≥ 1 columns)."""
    sizes = []
    for item in text.split(","):
        parts = item.strip().lower().split("x")
        try:
            if len(parts) != 2:
                raise BenchOptionError("")
            sizes.append((_count(parts[0], "n", low=2), _count(parts[1], "m", low=1)))
        except BenchOptionError:
            raise BenchOptionError(
                f"bad size {item!r} in {text!r}: expected NxM with N ≥ 2 rows and M ≥ 1 "
                "columns, e.g. 100000x10"
            ) from None
    return sizes


def parse_row_sizes(m: int) -> Callable[[str], list[tuple[int, int]]]:
    """A parser of '1000,5000x20' → [(1000, m), (5000, 20)]: each item NxM, or N alone with
    ``m`` columns (blanks skipped)."""

    def parse(text: str) -> list[tuple[int, int]]:
        sizes = []
        for item in (t.strip() for t in text.split(",")):
            if not item:
                continue
            try:
                if "x" in item.lower():
                    sizes.extend(parse_sizes(item))
                else:
                    sizes.append((_count(item, "n", low=2), m))
            except BenchOptionError:
                raise BenchOptionError(
                    f"bad item {item!r} in {text!r}: expected N (rows, ≥ 2) or NxM, "
                    f"e.g. 1000,5000x{m}"
                ) from None
        return sizes

    return parse


def parse_int_list(text: str) -> list[int]:
    """'0-3,7,1e4' → [0, 1, 2, 3, 7, 10000]: integers ≥ 0 and inclusive ranges a-b, blanks
    skipped."""
    out: list[int] = []
    for part in (p.strip() for p in text.split(",")):
        try:
            if "-" in part:
                lo, hi = (_count(v.strip(), "bound") for v in part.split("-", 1))
                if hi < lo:
                    raise BenchOptionError("")
                out.extend(range(lo, hi + 1))
            elif part:
                out.append(_count(part, "integer"))
        except BenchOptionError:
            raise BenchOptionError(
                f"bad item {part!r} in {text!r}: expected whole numbers ≥ 0 or ranges a-b "
                "(a ≤ b), e.g. 0-3,7,1e4"
            ) from None
    return out


def parse_float_list(text: str) -> list[float]:
    """'1,0.1,1e-3' → [1.0, 0.1, 0.001], blanks skipped (finite numbers only)."""
    out: list[float] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        try:
            value = float(part)
        except ValueError:
            value = math.nan
        if not math.isfinite(value):
            raise BenchOptionError(
                f"bad number {part!r} in {text!r}: expected finite numbers, e.g. 1,0.1,1e-3"
            )
        out.append(value)
    return out


def parse_choice_list(text: str, known: Collection[str], what: str) -> list[str]:
    """'a, b' → ['a', 'b'] (blanks skipped); any name not in ``known`` ends the run with a
    message naming it, e.g. "unknown method(s): x; known: a, b"."""
    chosen = [t.strip() for t in text.split(",") if t.strip()]
    unknown = [t for t in chosen if t not in known]
    if unknown:
        raise SystemExit(f"unknown {what}(s): {', '.join(unknown)}; known: {', '.join(known)}")
    return chosen


def require_package(module: str, what: str) -> None:
    """Stop before any work when an optional package a benchmark needs is not installed: an
    aidopt error naming it and the install hint (``pip install "aidopt[benchmarks]"``)."""
    if importlib.util.find_spec(module) is None:
        raise AidoptError(
            f"{what} needs the optional package '{module}', which is not installed: "
            'pip install "aidopt[benchmarks]"'
        )


def run_isolated(task: str, args: dict[str, Any], timeout: float) -> dict[str, Any]:
    """Run ``task`` ('module:function') with keyword ``args`` in a fresh process.

    Returns the function's dict plus ``peak_mb`` (peak RSS of that process and its children)
    and ``wall_seconds``; a run over ``timeout`` seconds is killed and reported as status 'timeout',
    a crash as status 'error' with the last lines of its stderr.
    """
    payload = json.dumps({"task": task, "args": args})
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "aidopt.bench.worker", payload],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        cwd=tempfile.gettempdir(),  # import the installed aidopt, not a source tree in the cwd
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return {"status": "timeout", "seconds": None, "wall_seconds": timeout, "peak_mb": None}
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        tail = " | ".join(err.strip().splitlines()[-3:])
        return {"status": "error", "message": tail, "wall_seconds": wall, "peak_mb": None}
    result = json.loads(out.strip().splitlines()[-1])
    result["wall_seconds"] = wall
    return result


def write_outputs(frame: pd.DataFrame, out_dir: Path, stem: str) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{stem}.csv"
    frame.to_csv(path, index=False)
    return path


def frame_markdown(frame: pd.DataFrame, floatfmt: str = ".4g") -> str:
    """A DataFrame as a Markdown table (numbers with ``floatfmt``, missing values as '–'),
    without pandas' optional ``tabulate``."""

    def cell(value: Any) -> str:
        if value is None or (isinstance(value, float) and value != value):
            return "–"
        if isinstance(value, float):
            return format(value, floatfmt)
        return str(value)

    head = "| " + " | ".join(map(str, frame.columns)) + " |"
    rule = "|" + "---|" * len(frame.columns)
    rows = ["| " + " | ".join(cell(v) for v in row) + " |" for row in frame.itertuples(False)]
    return "\n".join([head, rule, *rows])
