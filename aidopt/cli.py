"""The ``aidopt`` command line: solve, generate, bench, demo, solvers.

    aidopt solve MODEL --data FILE.csv --target COLUMN [options] [--json]
    aidopt generate MODEL ... --seed S --out FILE.csv
    aidopt bench MODEL [options]
    aidopt demo
    aidopt solvers

Models, generators and benchmarks are looked up in the tables below; each module provides the
argparse hooks (``add_cli_arguments``/``model_from_cli``, ``add_generate_arguments``/
``generate_from_arguments``, ``add_arguments``/``run``).
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import os
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path

from aidopt import __version__
from aidopt.data.io import read_table
from aidopt.driver import AIDSolver
from aidopt.exceptions import AidoptError, ConvergenceWarning
from aidopt.models import MODEL_MODULES
from aidopt.result import AIDResult

GENERATOR_MODULES: dict[str, str] = {
    "lad": "aidopt.data.lad",
    "pu": "aidopt.data.pu",
    "svm": "aidopt.data.svm",
}
BENCH_MODULES: dict[str, str] = {
    "lad": "aidopt.bench.lad",
    "pu": "aidopt.bench.pu",
    "cuts3vm": "aidopt.bench.cuts3vm",
    "s3vm": "aidopt.bench.s3vm",
    "svm": "aidopt.bench.svm",
}


def _common_solve_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data", required=True, help="CSV file with a header line")
    p.add_argument("--target", required=True, help="name of the target column")
    p.add_argument(
        "--solver",
        default=None,
        help="highs, gurobi, a Pyomo solver name, or a model-specific solver "
        "(default: the model's, e.g. fn for lad, usmo for pu, highs otherwise)",
    )
    p.add_argument("--tol", type=float, default=1e-4, help="relative gap tolerance (1e-4)")
    p.add_argument("--max-iter", type=int, default=None, help="iteration limit")
    p.add_argument("--time-limit", type=float, default=None, help="wall-clock limit (s)")
    p.add_argument("--rate", type=float, default=None, help="initial aggregation rate r^0")
    p.add_argument("--seed", type=int, default=0, help="seed of the initial clustering")
    p.add_argument(
        "--interface",
        choices=("auto", "matrix", "pyomo"),
        default="auto",
        help="direct matrix path or the Pyomo model (auto: matrix when available)",
    )
    p.add_argument(
        "--full",
        action="store_true",
        help="solve the original (non-aggregated) model instead, as a reference",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object to stdout")
    p.add_argument("--plot", type=Path, default=None, help="save a convergence plot (PNG)")
    p.add_argument("--quiet", action="store_true", help="no iteration log")
    p.add_argument("--solver-log", action="store_true", help="show the solver's own log")


def _data_arguments(p: argparse.ArgumentParser) -> None:
    """Options of a ``solve`` command whose module solves by itself (``solve_from_cli``)."""
    p.add_argument("--data", required=True, help="CSV file with a header line")
    p.add_argument("--target", required=True, help="name of the target column")
    p.add_argument("--json", action="store_true", help="print one JSON object to stdout")
    p.add_argument("--quiet", action="store_true", help="no iteration log")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="aidopt",
        description="Aggregate-and-iterative-disaggregate optimization of ML models.",
    )
    parser.add_argument("--version", action="version", version=f"aidopt {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    solve = commands.add_parser("solve", help="solve a model on a CSV file")
    solve_models = solve.add_subparsers(dest="model", required=True, metavar="MODEL")
    for name, module in MODEL_MODULES.items():
        mod = importlib.import_module(module)
        p = solve_models.add_parser(name, help=(mod.__doc__ or "").strip().splitlines()[0])
        if hasattr(mod, "solve_from_cli"):  # a method outside AID: only its own options
            _data_arguments(p)
        else:
            _common_solve_arguments(p)
        mod.add_cli_arguments(p)

    generate = commands.add_parser("generate", help="write a synthetic instance as CSV")
    gen_models = generate.add_subparsers(dest="model", required=True, metavar="MODEL")
    for name, module in GENERATOR_MODULES.items():
        mod = importlib.import_module(module)
        p = gen_models.add_parser(name, help=(mod.__doc__ or "").strip().splitlines()[0])
        mod.add_generate_arguments(p)
        p.add_argument("--seed", type=int, default=0, help="random seed")
        p.add_argument("--out", type=Path, required=True, help="output CSV file")

    bench = commands.add_parser("bench", help="benchmark AID against the baselines")
    bench_models = bench.add_subparsers(dest="model", required=True, metavar="MODEL")
    for name, module in BENCH_MODULES.items():
        mod = importlib.import_module(module)
        p = bench_models.add_parser(name, help=(mod.__doc__ or "").strip().splitlines()[0])
        mod.add_arguments(p)

    commands.add_parser("demo", help="a small end-to-end LAD run on HiGHS (no input needed)")
    commands.add_parser("solvers", help="list the solvers aidopt can reach here")
    return parser


def _configure_logging(quiet: bool) -> None:
    logger = logging.getLogger("aidopt")
    logger.setLevel(logging.WARNING if quiet else logging.INFO)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger.addHandler(handler)
    logging.captureWarnings(True)
    warnings.simplefilter("always", ConvergenceWarning)


def _print_result(result: AIDResult) -> None:
    lines = [
        f"model       {result.model}",
        f"solver      {result.solver}",
        f"status      {result.status.value}  ({result.message})",
        f"objective   {result.objective:.12g}",
        "lower bound " + ("-" if result.lower_bound is None else f"{result.lower_bound:.12g}"),
        "gap         " + ("-" if result.gap is None else f"{result.gap:.3e}"),
        f"iterations  {result.iterations}   final rate {100 * result.final_rate:.3f}%",
        f"n, m        {result.n}, {result.m}",
        f"seconds     {result.seconds:.3f}",
        "solution:",
    ]
    for key, value in result.solution_dict.items():
        if isinstance(value, dict):
            lines.append(f"  {key}:")
            lines.extend(
                f"    {k:<20} {v:.10g}" if isinstance(v, float) else f"    {k:<20} {v}"
                for k, v in value.items()
            )
        elif isinstance(value, list) and len(value) > 20:
            lines.append(f"  {key}: [{len(value)} values; use --json to see them]")
        else:
            lines.append(f"  {key}: {value}")
    print("\n".join(lines))


def _plain_text(out: dict) -> str:
    """A result dict of ``solve_from_cli`` as lines (long lists and dicts summarised)."""

    def short(value) -> str:
        if isinstance(value, list | dict) and len(value) > 20:
            return f"[{len(value)} values; use --json to see them]"
        return f"{value:.10g}" if isinstance(value, float) else str(value)

    lines = []
    for key, value in out.items():
        if isinstance(value, dict) and len(value) <= 20:
            lines.append(f"{key}:")
            lines.extend(f"  {k:<20} {short(v)}" for k, v in value.items())
        else:
            lines.append(f"{key:<16} {short(value)}")
    return "\n".join(lines)


def _solve(args: argparse.Namespace) -> int:
    mod = importlib.import_module(MODEL_MODULES[args.model])
    if hasattr(mod, "solve_from_cli"):  # not an AID model (e.g. CutS3VM): it solves by itself
        out = mod.solve_from_cli(args, read_table(args.data))
        print(json.dumps(out) if args.json else _plain_text(out))
        return 0
    model = mod.model_from_cli(args)
    data = model.data_from_frame(read_table(args.data), args.target)
    solver = AIDSolver(
        model,
        solver=args.solver,
        tol=args.tol,
        max_iter=args.max_iter,
        time_limit=args.time_limit,
        rate=args.rate,
        random_state=args.seed,
        interface=args.interface,
        verbose=2 if args.solver_log else 0,
    )
    result = solver.solve_full(data) if args.full else solver.solve(data)
    if args.plot is not None:
        from aidopt.plots import plot_history

        plot_history(result, args.plot)
    if args.json:
        print(json.dumps(result.to_dict()))
    else:
        _print_result(result)
    return 0


def _generate(args: argparse.Namespace) -> int:
    mod = importlib.import_module(GENERATOR_MODULES[args.model])
    frame = mod.generate_from_arguments(args)
    frame.to_csv(args.out, index=False)
    print(f"wrote {args.out} ({frame.shape[0]} rows, {frame.shape[1]} columns)", file=sys.stderr)
    return 0


def _demo() -> int:
    from aidopt.data.lad import make_lad
    from aidopt.models.lad import LADData, LADModel

    n, m = 50_000, 10
    print(f"aidopt demo: LAD regression, n={n}, m={m}, Laplace noise, HiGHS", file=sys.stderr)
    X, y, _, _ = make_lad(n, m, seed=0)
    data = LADData.from_arrays(X, y)
    aid = AIDSolver(LADModel(), solver="highs", tol=0.0).solve(data)  # run to the certificate
    _print_result(aid)
    full = AIDSolver(LADModel(), solver="highs").solve_full(data)
    rel = abs(aid.objective - full.objective) / full.objective
    print(
        f"\nfull LP on HiGHS: objective {full.objective:.12g} in {full.seconds:.3f} s; "
        f"AID: {aid.objective:.12g} in {aid.seconds:.3f} s; relative difference {rel:.2e}"
    )
    return 0 if aid.certified and rel <= 1e-7 else 1


def _solvers() -> int:
    from aidopt.solvers import GENERIC_SOLVERS

    for name, cls in GENERIC_SOLVERS.items():
        adapter = cls()
        state = "available" if adapter.is_available() else f"missing ({adapter.INSTALL_HINT})"
        caps = ", ".join(sorted(p.value for p in adapter.capabilities))
        print(f"{name:<8} {state:<12} handles {caps}")
    for name, module in MODEL_MODULES.items():
        cls = importlib.import_module(module).MODEL_CLASS
        also = f"also {', '.join(cls.special_solvers)}; " if cls.special_solvers else ""
        print(f"model {name}: {also}default {cls.default_solver}")
    print("any other name is passed to Pyomo's SolverFactory (e.g. glpk, cbc, cplex_direct)")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    _configure_logging(quiet=getattr(args, "quiet", False) or getattr(args, "json", False))
    try:
        if args.command == "solve":
            return _solve(args)
        if args.command == "generate":
            return _generate(args)
        if args.command == "bench":
            return importlib.import_module(BENCH_MODULES[args.model]).run(args)
        if args.command == "demo":
            return _demo()
        return _solvers()
    except AidoptError as exc:
        print(f"aidopt: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # output piped into e.g. `head`, which stopped reading
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    sys.exit(main())
