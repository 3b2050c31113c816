"""``aidopt bench scale``: LAD (or the linear SVM) at n = 10^6 … 10^8 from Parquet parts, in
memory and on Dask.

    aidopt bench scale --sizes 1000000,10000000 --m 20 --data-dir /data/aidopt-scale --out OUT
    aidopt bench scale --model svm --sizes 10000000 --methods numpy,numpy-blocks,dask,xb

Each instance (paper-style LAD, :func:`aidopt.data.lad.make_lad`, one seed per part; for
``--model svm`` two overlapping classes, :func:`aidopt.data.svm.make_svm`, the parts sharing
the class direction) is written once as Parquet parts of ``--rows-per-part`` rows and row
groups of ``--row-group`` rows under ``--data-dir`` (outside the repository; reused by later
runs). Every method runs in a fresh process (peak RSS of that process and its children, a
hard time limit):

* ``numpy`` — the parts read into memory, AID on all rows at once (today's default path);
* ``numpy-blocks`` — the same rows in memory, the data passes on blocks of a row group;
* ``dask`` — the rows never gathered: every pass re-reads the parts on a ``LocalCluster``
  (``--workers``, one thread each), only the labels stay on the workers;
* ``xb`` — the bandwidth reference: a bare ``X @ b`` over the in-memory rows, per row group
  (and, for the Dask engine, reading each part and multiplying: ``read+xb``);
* ``quantreg-pfn``, ``quantreg-fnb`` — R quantreg on the in-memory rows (timed inside R), when
  Rscript and quantreg are installed and the rows fit (LAD only);
* ``liblinear`` — scikit-learn's ``LinearSVC`` (hinge loss, C = M) on the in-memory rows (SVM
  only; it penalises b² too: another problem, its objective (7) is reported, not certified).

``scale_runs.csv``: per (n, method) the status, objective E and Δ against the first exact
method that finished, seconds split into read / passes / solves, passes per run, GB/s per pass
(n·(m+1)·8 bytes per pass) and its ratio to ``xb``'s (``numpy-blocks`` also to a bare ``X @ b``
pass over its own blocks timed in the same process right after the run, best of 3:
``pass_vs_xb_same_run``, less exposed to the machine's drift between processes), peak MB (of
the run's process, the sum of the Dask workers' peaks, and — what a machine must hold — the
peak of the run's process and its workers together, sampled), and for Dask the megabytes the
workers fetched from each other (``transfer_mb``: a pass's arguments; blocks stay on their
workers); ``scale_summary.md`` the same
as a table; ``scale_seconds.png`` seconds against n per method.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from aidopt.bench.common import (
    BenchOptionError,
    frame_markdown,
    parse_choice_list,
    run_isolated,
)

__all__ = ["METHODS", "add_arguments", "run", "run_method", "write_instance"]

METHODS = ("numpy", "numpy-blocks", "dask", "xb", "quantreg-pfn", "quantreg-fnb", "liblinear")
#: the driver's timers (AIDResult.timing) of the work on all rows: the data passes of a run
PASS_TIMERS = ("initial_partition", "aggregate", "evaluate", "bound")
_EXACT = ("numpy", "numpy-blocks", "dask", "quantreg-pfn", "quantreg-fnb")
MODELS = ("lad", "svm")
_BASELINES = {"quantreg-pfn": "lad", "quantreg-fnb": "lad", "liblinear": "svm"}


def _parse_sizes(text: str) -> list[int]:
    try:
        return [int(float(v)) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--sizes takes numbers like 1e6,1e7; got {text!r}"
        ) from None


def instance_folder(
    data_dir: Path, n: int, m: int, seed: int, rows_per_part: int, model: str = "lad"
) -> Path:
    return data_dir / f"{model}_n{n}_m{m}_seed{seed}_part{rows_per_part}"


def _part_rows(model: str, rows: int, m: int, seed: int, p: int) -> tuple[Any, Any]:
    """(X, y) of part p: ``make_lad(rows, m, seed=seed·100003 + p)``, or ``make_svm`` rows of
    part p of one instance (labels ±1)."""
    if model == "svm":
        from aidopt.data.svm import make_svm

        return make_svm(rows, m, seed=seed, part=p)
    from aidopt.data.lad import make_lad

    X, y, _, _ = make_lad(rows, m, seed=seed * 100_003 + p)
    return X, y


def write_instance(
    data_dir: Path,
    n: int,
    m: int,
    seed: int,
    rows_per_part: int,
    row_group: int,
    model: str = "lad",
) -> Path:
    """The instance's Parquet parts (written unless complete already), column names x0 … and
    y (:func:`_part_rows`)."""
    from aidopt.data.parquet import _pyarrow

    folder = instance_folder(data_dir, n, m, seed, rows_per_part, model)
    done = folder / "_COMPLETE"
    if done.exists():
        return folder
    pa, pq = _pyarrow()
    folder.mkdir(parents=True, exist_ok=True)
    names = [f"x{j}" for j in range(m)]
    for p, start in enumerate(range(0, n, rows_per_part)):
        rows = min(rows_per_part, n - start)
        X, y = _part_rows(model, rows, m, seed, p)
        table = pa.table({**{c: X[:, j] for j, c in enumerate(names)}, "y": y})
        pq.write_table(table, folder / f"part-{p:05d}.parquet", row_group_size=row_group)
        print(f"  wrote part {p} ({start + rows:,} of {n:,} rows)", file=sys.stderr, flush=True)
    done.write_text("complete\n")
    return folder


def _read(folder: str, model: Any) -> tuple[Any, float]:
    from aidopt.data.io import read_table

    start = time.perf_counter()
    data = model.data_type.from_frame(read_table(folder), "y")
    return data, time.perf_counter() - start


def run_method(
    method: str,
    folder: str,
    row_group: int,
    time_limit: float,
    workers: int,
    tol: float,
    model_name: str = "lad",
) -> dict[str, Any]:
    """One method on one instance (called in a fresh process)."""
    from aidopt.common.memory import keep_freed_memory
    from aidopt.core.driver import AIDSolver
    from aidopt.core.registry import model as registered
    from aidopt.numerics import compiled

    model = registered(model_name)()
    out: dict[str, Any] = {"status": "ok"}
    if method == "dask":
        import dask

        from aidopt.engine.dask import DaskBlocks, local_client

        start = time.perf_counter()
        with (
            dask.config.set({"distributed.admin.low-level-log-length": 10**6}),  # every fetch
            _TreePeak() as together,
            local_client(workers=workers) as client,
        ):
            blocks = DaskBlocks.from_parquet(client, folder, model.data_type, "y")
            out["read_seconds"] = time.perf_counter() - start  # cluster start + metadata
            result = AIDSolver(model, time_limit=time_limit, tol=tol).solve(blocks)
            out["workers_peak_mb"] = sum(client.run(_peak_mb).values())
            out["transfer_mb"] = sum(client.run(_incoming_mb).values())
            out |= _passes(blocks) | {"xb_read_seconds": _read_and_xb(blocks)}
            client.cluster.close()
        return out | _result(result) | {"together_peak_mb": together.peak_mb}
    keep_freed_memory()  # in memory, as the command line runs it (aidopt/common/memory.py)
    if method in ("numpy", "numpy-blocks"):
        compiled.preload_for_file(folder)  # as the command line: loaded while the rows are read
    data, out["read_seconds"] = _read(folder, model)
    if method == "xb":
        return out | {"xb_seconds": _xb(data, row_group)}
    if method in _BASELINES:
        from aidopt.bench import libraries

        run = {
            "quantreg-pfn": libraries.r_quantreg_pfn,
            "quantreg-fnb": libraries.r_quantreg_fn,
            "liblinear": libraries.liblinear_svc,
        }[method]
        outcome = run(model, data, time_limit)
        if outcome.solution is None:
            return out | {"status": outcome.status, "message": outcome.message}
        evaluation = model.evaluate(data, outcome.solution)
        return out | {"seconds": outcome.seconds, "objective": evaluation.objective}
    if method == "numpy-blocks":
        from aidopt.engine.blocks import MemoryBlocks

        in_memory = MemoryBlocks(data, row_group)
        result = AIDSolver(model, time_limit=time_limit, tol=tol).solve(in_memory)
        passes = _passes(in_memory)  # before the X @ b passes below, which count too
        same_run = min(_read_and_xb(in_memory) for _ in range(3))  # after, in this process
        return out | _result(result) | passes | {"xb_same_run_seconds": same_run}
    result = AIDSolver(model, time_limit=time_limit, tol=tol).solve(data)
    pass_seconds = sum(result.timing.get(name, 0.0) for name in PASS_TIMERS)
    return out | _result(result) | {"pass_seconds": pass_seconds}


class _TreePeak:
    """The peak of the resident memory of this process and all its children together (the
    Dask scheduler in this process, the workers in theirs), sampled every 0.2 s in a thread:
    the separate peaks of the processes need not coincide."""

    def __enter__(self) -> _TreePeak:
        import threading

        self.peak_mb = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self) -> None:
        import psutil  # a dependency of dask.distributed

        me = psutil.Process()
        while not self._stop.wait(0.2):
            total = 0
            for proc in [me, *me.children(recursive=True)]:
                try:
                    total += proc.memory_info().rss
                except psutil.Error:  # a process that ended meanwhile
                    pass
            self.peak_mb = max(self.peak_mb, total / 2**20)

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def _peak_mb() -> float:
    """This process's peak resident memory (run in each Dask worker)."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _incoming_mb(dask_worker: Any) -> float:
    """Megabytes this Dask worker fetched from the others (states of blocks whose task ran
    elsewhere, the arguments of a pass)."""
    return sum(e.get("total", 0) for e in dask_worker.transfer_incoming_log) / 2**20


def _result(result: Any) -> dict[str, Any]:
    return {
        "status": result.status.value,
        "seconds": result.seconds,
        "solve_seconds": result.timing.get("solve", 0.0),
        "objective": result.objective,
        "lower_bound": result.certificate.lower_bound if result.certificate else None,
        "iterations": result.iterations,
    }


def _passes(blocks: Any) -> dict[str, Any]:
    return {"passes": blocks.passes, "pass_seconds": blocks.pass_seconds}


def _xb(data: Any, row_group: int) -> float:
    """Seconds of a bare X @ b over the rows, one row group at a time (best of 3)."""
    b = np.ones(data.m)
    best = np.inf
    for _ in range(3):
        start = time.perf_counter()
        for a in range(0, data.n, row_group):
            data.X[a : a + row_group] @ b
        best = min(best, time.perf_counter() - start)
    return best


def _read_and_xb(blocks: Any) -> float:
    """Seconds of one pass of the engine's kind with nothing but ``X @ b`` in it: every block
    (on Dask: every row group read by the workers) multiplied."""

    def kernel(block, _offset):
        block.X @ np.ones(block.m)
        return (), None

    start = time.perf_counter()
    blocks.run(kernel)
    return time.perf_counter() - start


# ---------------------------------------------------------------------- command line
def add_arguments(parser: argparse.ArgumentParser) -> None:
    import tempfile

    parser.add_argument("--model", choices=MODELS, default="lad", help="the model measured")
    parser.add_argument("--sizes", type=_parse_sizes, default=[1_000_000], help="n, e.g. 1e6,1e7")
    parser.add_argument("--m", type=int, default=20, help="features")
    parser.add_argument("--seed", type=int, default=0, help="instance seed")
    parser.add_argument(
        "--methods",
        default=None,
        help="comma-separated (default: numpy,numpy-blocks,dask,xb and quantreg-pfn for LAD, "
        "liblinear for the SVM)",
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=Path(tempfile.gettempdir()) / "aidopt-scale",
        help="where the Parquet instances are written once (outside the repository)",
    )
    parser.add_argument("--rows-per-part", type=int, default=1_000_000, help="rows per part")
    parser.add_argument("--row-group", type=int, default=250_000, help="rows per row group")
    parser.add_argument("--workers", type=int, default=2, help="Dask workers")
    parser.add_argument("--time-limit", type=float, default=900.0, help="seconds per run")
    parser.add_argument("--tol", type=float, default=1e-8, help="AID's target relative gap")
    parser.add_argument(
        "--in-memory-limit",
        type=float,
        default=5e8,
        help="largest n·m run by the in-memory methods (numpy, numpy-blocks, xb, R)",
    )
    parser.add_argument("--out", type=Path, default=Path("bench-out"), help="output folder")


def run(args: argparse.Namespace) -> int:
    import pandas as pd

    baseline = "quantreg-pfn" if args.model == "lad" else "liblinear"
    methods = parse_choice_list(
        args.methods or f"numpy,numpy-blocks,dask,xb,{baseline}", METHODS, "method"
    )
    wrong = [m for m in methods if _BASELINES.get(m, args.model) != args.model]
    if wrong:
        raise BenchOptionError(f"method(s) {', '.join(wrong)} are not for --model {args.model}")
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for n in args.sizes:
        folder = write_instance(
            args.data_dir, n, args.m, args.seed, args.rows_per_part, args.row_group, args.model
        )
        for method in methods:
            if method != "dask" and n * args.m > args.in_memory_limit:
                rows.append({"n": n, "m": args.m, "method": method, "status": "skipped"})
                continue
            print(f"n={n:,} m={args.m} {method} ...", end="", file=sys.stderr, flush=True)
            res = run_isolated(
                "aidopt.bench.scale:run_method",
                {"method": method, "folder": str(folder), "row_group": args.row_group}
                | {"time_limit": args.time_limit, "workers": args.workers, "tol": args.tol}
                | {"model_name": args.model},
                timeout=args.time_limit + 600,
            )
            print(f" {res.get('status')} {res.get('wall_seconds', 0):.1f} s", file=sys.stderr)
            rows.append({"n": n, "m": args.m, "method": method} | res)
    frame = _with_ratios(pd.DataFrame(rows), args.m)
    frame.to_csv(args.out / "scale_runs.csv", index=False)
    (args.out / "scale_summary.md").write_text(_markdown(frame))
    _plot(frame, args.out / "scale_seconds.png", args.model, args.m)
    print(_markdown(frame))
    return 0


def _with_ratios(frame: Any, m: int) -> Any:
    """Δ against the first exact method per n, GB/s per pass and its ratio to X @ b."""
    frame = frame.copy()
    for column in (
        "objective",
        "pass_seconds",
        "passes",
        "xb_seconds",
        "xb_read_seconds",
        "xb_same_run_seconds",
        "workers_peak_mb",
        "together_peak_mb",
    ):
        if column not in frame:
            frame[column] = np.nan
    frame["delta"] = np.nan
    frame["gbps_pass"] = np.nan
    frame["pass_vs_xb"] = np.nan
    frame["pass_vs_xb_same_run"] = frame["pass_seconds"] / frame["passes"]
    frame["pass_vs_xb_same_run"] /= frame["xb_same_run_seconds"]
    for n, group in frame.groupby("n"):
        exact = group[group["method"].isin(_EXACT) & group["objective"].notna()]
        if len(exact):
            ref = float(exact["objective"].iloc[0])
            frame.loc[group.index, "delta"] = (group["objective"] - ref) / abs(ref)
        gb = n * (m + 1) * 8 / 1e9
        passes = group["passes"].fillna(np.nan)
        per_pass = group["pass_seconds"] / passes
        frame.loc[group.index, "gbps_pass"] = gb / per_pass
        xb = group.loc[group["method"] == "xb", "xb_seconds"]
        if len(xb):
            mem = group["method"].isin(("numpy-blocks",))
            frame.loc[group.index[mem], "pass_vs_xb"] = (per_pass / float(xb.iloc[0]))[mem]
        dask = group["method"] == "dask"
        frame.loc[group.index[dask], "pass_vs_xb"] = (per_pass / group["xb_read_seconds"])[dask]
    return frame


def _markdown(frame: Any) -> str:
    cols = [
        ("n", "{:,.0f}"),
        ("method", "{}"),
        ("status", "{}"),
        ("wall_seconds", "{:.1f}"),
        ("read_seconds", "{:.1f}"),
        ("pass_seconds", "{:.1f}"),
        ("solve_seconds", "{:.1f}"),
        ("passes", "{:.0f}"),
        ("gbps_pass", "{:.2f}"),
        ("pass_vs_xb", "{:.2f}"),
        ("pass_vs_xb_same_run", "{:.2f}"),
        ("peak_mb", "{:.0f}"),
        ("workers_peak_mb", "{:.0f}"),
        ("together_peak_mb", "{:.0f}"),
        ("delta", "{:.1e}"),
    ]
    import pandas as pd

    shown = pd.DataFrame(
        {
            c: [
                None if v is None or v != v else fmt.format(v)
                for v in frame.get(c, [None] * len(frame))
            ]
            for c, fmt in cols
        }
    )
    return frame_markdown(shown) + "\n"


def _plot(frame: Any, path: Path, model: str, m: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for method, group in frame[frame["method"] != "xb"].groupby("method"):
        finished = ~group["status"].isin(("skipped", "error", "timeout"))
        done = group[group["wall_seconds"].notna() & finished]  # a stopped run is no time
        if len(done):
            ax.plot(done["n"], done["wall_seconds"], marker="o", label=method)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(f"n (rows), m = {m}")
    ax.set_ylabel("wall seconds (process)")
    baseline = "R quantreg" if model == "lad" else "liblinear"
    ax.set_title(f"{model.upper()}: AID in memory and on Dask vs {baseline}")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
