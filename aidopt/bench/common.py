"""Benchmark plumbing shared by ``aidopt bench MODEL``.

Every method runs in a fresh Python process (``python -m aidopt.bench.worker``) so that runs do
not share caches or heap, a hard time limit can kill a run, and the peak resident memory of that
process (and of any program it starts, such as R) is that run's alone. The worker times only the
fit, not reading the data; the peak memory includes the data.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Collection
from pathlib import Path
from typing import Any

import pandas as pd

__all__ = [
    "parse_choice_list",
    "parse_float_list",
    "parse_int_list",
    "parse_sizes",
    "run_isolated",
    "write_outputs",
]


def parse_sizes(text: str) -> list[tuple[int, int]]:
    """'100000x10,400000x100' → [(100000, 10), (400000, 100)]."""
    sizes = []
    for item in text.split(","):
        try:
            n, m = item.lower().split("x")
            sizes.append((int(float(n)), int(m)))
        except ValueError:
            raise ValueError(f"bad size {item!r}: expected NxM, e.g. 100000x10") from None
    return sizes


def parse_int_list(text: str) -> list[int]:
    """'0-3,7,1e4' → [0, 1, 2, 3, 7, 10000]: integers and inclusive ranges a-b, blanks skipped."""
    out: list[int] = []
    for part in (p.strip() for p in text.split(",")):
        if "-" in part:
            lo, hi = part.split("-")
            out.extend(range(int(lo), int(hi) + 1))
        elif part:
            out.append(int(float(part)))
    return out


def parse_float_list(text: str) -> list[float]:
    """'1,0.1,1e-3' → [1.0, 0.1, 0.001], blanks skipped."""
    return [float(p) for p in text.split(",") if p.strip()]


def parse_choice_list(text: str, known: Collection[str], what: str) -> list[str]:
    """'a, b' → ['a', 'b'] (blanks skipped); any name not in ``known`` ends the run with a
    message naming it, e.g. "unknown method(s): x; known: a, b"."""
    chosen = [t.strip() for t in text.split(",") if t.strip()]
    unknown = [t for t in chosen if t not in known]
    if unknown:
        raise SystemExit(f"unknown {what}(s): {', '.join(unknown)}; known: {', '.join(known)}")
    return chosen


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
