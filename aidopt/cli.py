"""The ``aidopt`` command line: solve, show, generate, bench, verify, models, solvers, demo.

    aidopt solve MODEL --data FILE.csv|FILE.parquet|DIR [--target COLUMN] [options] [--json]
    aidopt generate MODEL ... --seed S --out FILE.csv
    aidopt bench MODEL [options]
    aidopt show MODEL --data FILE.csv [--target COLUMN] --iteration T [--export F.lp] [--plot F]
    aidopt verify RESULT.json --data FILE.csv [--target COLUMN] [--max-gap G] [--json]
    aidopt cluster --data FILE.csv [--target LABELS] --method M --gamma G --C C [--json]
    aidopt models [--markdown]
    aidopt solvers
    aidopt demo

Everything is generated from the registry (:mod:`aidopt.core.registry`): every model's options are
its declared :class:`~aidopt.common.options.Option` tuple, its generator and benchmark its declared
ones; a method that is not AID (CutS3VM) adds its own arguments (``add_arguments``) and solves
by itself (``solve_from_cli``), with the same conventions.

Streams: standard output carries aidopt's results and nothing else (with ``--json`` exactly one
JSON object on one line). While a command runs, file descriptor 1 is pointed at standard error,
so that whatever a solver library prints (HiGHS's banner, Gurobi's licence line, libsvm) and
every Python ``print`` lands there, with the log; the results are written to a duplicate of the
original descriptor. Every error is one line ``aidopt: error: ...`` on standard error with exit
status 2 (a rejected ``aidopt verify`` exits 1).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import logging
import math
import os
import sys
import threading
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, NoReturn, TextIO

from aidopt._version import __version__
from aidopt.common.jsonable import json_line
from aidopt.common.memory import keep_freed_memory
from aidopt.common.native import flush_c_stdio
from aidopt.common.options import add_to_parser, from_args, parse_seed
from aidopt.core.driver import RUN_OPTIONS, AIDSolver, Hook
from aidopt.core.registry import methods, models
from aidopt.core.result import AIDResult
from aidopt.data.io import DATA_HELP, check_output_path, read_table
from aidopt.exceptions import AidoptError, ConvergenceWarning, DataError, TimeLimitError
from aidopt.numerics import compiled


class _Parser(argparse.ArgumentParser):
    """argparse's usage errors like every other error: one line ``aidopt: error: ...`` with a
    pointer to the help, exit status 2 (subcommand parsers inherit this class)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"aidopt: error: {_one_line(message)} (see '{self.prog} --help')\n")


def _data_and_target(p: argparse.ArgumentParser, target: str) -> None:
    """``--data``, and ``--target`` (required, or optional for a model that takes none)."""
    p.add_argument("--data", required=True, help=DATA_HELP)
    if target == "none":
        p.add_argument("--target", default=None, help="a label column to leave out (none)")
    else:
        p.add_argument("--target", required=True, help="name of the target column")


def _common_solve_arguments(p: argparse.ArgumentParser, target: str) -> None:
    _data_and_target(p, target)
    add_to_parser(p, RUN_OPTIONS)
    p.add_argument(
        "--full",
        action="store_true",
        help="solve the original (non-aggregated) model instead, as a reference",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object to stdout")
    p.add_argument(
        "--plot", type=Path, default=None, help="save a convergence plot (.png, .pdf or .svg)"
    )
    p.add_argument("--quiet", action="store_true", help="no iteration log")
    p.add_argument("--solver-log", action="store_true", help="show the solver's own log")
    p.add_argument(
        "--engine",
        choices=("numpy", "dask"),
        default=None,
        help="run the data passes on rows in blocks: 'numpy' (in memory) or 'dask' (Parquet "
        "parts read by Dask workers in every pass); default: all rows in memory at once",
    )
    p.add_argument("--chunk-rows", type=int, default=None, help="rows per block of in-memory data")
    p.add_argument(
        "--scheduler", default=None, help="address of a Dask scheduler to join (--engine dask)"
    )
    p.add_argument(
        "--workers", type=int, default=None, help="workers of the local Dask cluster (cores)"
    )


_SHOW_RUN_OPTIONS = ("solver", "tol", "rate", "random_state", "interface")


def _show_arguments(p: argparse.ArgumentParser, target: str) -> None:
    _data_and_target(p, target)
    p.add_argument("--iteration", type=int, default=1, help="the iteration t to show (default 1)")
    p.add_argument(
        "--export", type=Path, default=None, help="write its aggregated problem (.lp or .mps)"
    )
    p.add_argument(
        "--plot", type=Path, default=None, help="draw it, for 2-D data (.png, .pdf or .svg)"
    )
    add_to_parser(p, [o for o in RUN_OPTIONS if o.name in _SHOW_RUN_OPTIONS])
    p.add_argument("--quiet", action="store_true", help="no iteration log")


def _data_arguments(p: argparse.ArgumentParser) -> None:
    """Options of a ``solve`` command whose method solves by itself (``solve_from_cli``)."""
    p.add_argument("--data", required=True, help=DATA_HELP)
    p.add_argument("--target", required=True, help="name of the target column")
    p.add_argument("--json", action="store_true", help="print one JSON object to stdout")
    p.add_argument("--quiet", action="store_true", help="no iteration log")


def _summary(cls: Any) -> str:
    return (cls.__doc__ or cls.__name__).strip().splitlines()[0]


def _selected(argv: Sequence[str] | None) -> tuple[str | None, str | None]:
    """(command, name) that ``argv`` starts with ("solve", "lad"); None where it names none."""
    words = list(sys.argv[1:] if argv is None else argv)
    command = words[0] if words and not words[0].startswith("-") else None
    name = words[1] if command and len(words) > 1 and not words[1].startswith("-") else None
    return command, name


def _only(entries: dict[str, Any], command: str | None, group: str, name: str | None) -> list:
    """The entries a parser for ``command name ...`` needs in ``group``: none for another
    command, the named one, or (no name, an unknown one: help and errors list them) all."""
    if command != group:
        return []
    if name in entries:
        return [name]
    if group == "solve" and (name in models() or name in methods()):
        return []  # a model or a method of `solve`: the other loop builds its parser
    return list(entries)


def _model_parsers(subparsers: Any, names: list[str], arguments: Any) -> None:
    """A parser per model: ``arguments(parser, target)``, then the model's declared options."""
    for model_name in names:
        cls = models()[model_name].load()
        p = subparsers.add_parser(model_name, help=_summary(cls))
        arguments(p, getattr(cls.data_type, "target", "required"))
        add_to_parser(p, (*cls.options, *cls.cli_extras))


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser for ``argv``: only the subcommand it names is filled in, so that
    ``aidopt solve lad ...`` imports the LAD model and nothing else."""
    command, name = _selected(argv)
    parser = _Parser(
        prog="aidopt",
        description="Aggregate-and-iterative-disaggregate optimization of ML models.",
    )
    parser.add_argument("--version", action="version", version=f"aidopt {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    solve = commands.add_parser("solve", help="solve a model on a data file (CSV or Parquet)")
    solve_models = solve.add_subparsers(dest="model", required=True, metavar="MODEL")
    _model_parsers(solve_models, _only(models(), command, "solve", name), _common_solve_arguments)
    for method_name in _only(methods(), command, "solve", name):
        cls = methods()[method_name].load()
        p = solve_models.add_parser(method_name, help=_summary(cls) + " (not AID)")
        _data_arguments(p)
        cls.add_arguments(p)

    show = commands.add_parser(
        "show", help="one AID iteration for teaching: its aggregated problem, LP/MPS, picture"
    )
    show_models = show.add_subparsers(dest="model", required=True, metavar="MODEL")
    _model_parsers(show_models, _only(models(), command, "show", name), _show_arguments)

    generate = commands.add_parser("generate", help="write a synthetic instance as CSV")
    gen_models = generate.add_subparsers(dest="model", required=True, metavar="MODEL")
    chosen = _only(models(), command, "generate", name)
    if len(chosen) == 1 and models()[chosen[0]].load().generator is None:
        chosen = list(models())  # a model with no generator: the error lists those with one
    for model_name in chosen:
        cls = models()[model_name].load()
        if cls.generator is None:
            continue
        p = gen_models.add_parser(model_name, help=cls.generator.help or _summary(cls))
        add_to_parser(p, cls.generator.options)
        p.add_argument("--seed", type=parse_seed, default=0, help="random seed (≥ 0)")
        p.add_argument("--out", type=Path, required=True, help="output CSV file")

    bench = commands.add_parser("bench", help="benchmark AID against the baselines")
    if command == "bench":
        from aidopt.bench import harness

        registered = {n: entry.load() for n, entry in models().items()}
        bench_models = bench.add_subparsers(
            dest="model", required=True, metavar="MODEL", parser_class=harness.parser_class(_Parser)
        )
        for bench_name, help_text in _bench_entries(registered).items():
            harness.add_arguments(
                bench_models.add_parser(bench_name, help=help_text), bench_name, registered
            )
    else:
        bench.add_subparsers(dest="model", required=True, metavar="MODEL")

    listing = commands.add_parser("models", help="list the models and methods, with options")
    listing.add_argument(
        "--markdown", action="store_true", help="every model's options as Markdown tables"
    )

    verify = commands.add_parser(
        "verify", help="re-check a saved --json result against its data (exit 1: rejected)"
    )
    verify.add_argument("result", type=Path, metavar="RESULT.json", help="a --json result file")
    verify.add_argument(
        "--data", type=Path, required=True, help="the data it was solved on (as --data of solve)"
    )
    verify.add_argument(
        "--target", default=None, help="name of the target column (default: the result's)"
    )
    verify.add_argument(
        "--max-gap",
        type=_max_gap,
        default=None,
        help="the loosest relative gap accepted as the proof of a status optimal or gap "
        "(default: solve's default --tol, 1e-4)",
    )
    verify.add_argument("--json", action="store_true", help="print one JSON object to stdout")
    verify.add_argument("--quiet", action="store_true", help="no log")

    cluster = commands.add_parser("cluster", help="support-vector clustering of a CSV file")
    if command == "cluster":
        from aidopt.svc import command as cluster_command

        cluster_command.add_arguments(cluster)
    commands.add_parser("demo", help="a small end-to-end LAD run on HiGHS (no input needed)")
    commands.add_parser("solvers", help="list the solvers aidopt can reach here")
    return parser


# ---------------------------------------------------------------------- streams
class _Results:
    """Where aidopt's own results go: the caller's standard output, kept apart from fd 1 (which
    points at standard error while a command runs)."""

    def __init__(self, stream: TextIO | None) -> None:
        self.stream = stream

    def write(self, text: str) -> None:
        """One block of results (a newline is added) written through at once."""
        if self.stream is not None:
            self.stream.write(text + "\n")
            self.stream.flush()

    @contextlib.contextmanager
    def as_stdout(self) -> Iterator[None]:
        """``sys.stdout`` is the results stream (argparse's --help/--version, ``aidopt bench``'s
        tables printed by its modules)."""
        before = sys.stdout
        sys.stdout = self.stream
        try:
            yield
        finally:
            sys.stdout = before

    def discard(self) -> None:
        """The reader went away (BrokenPipeError): send what is left, and any later flush, to
        /dev/null so that exiting does not fail a second time."""
        with contextlib.suppress(AttributeError, OSError, ValueError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(devnull, self.stream.fileno())  # type: ignore[union-attr]
            finally:
                os.close(devnull)


def _fileno(stream: object) -> int | None:
    try:
        return stream.fileno()  # type: ignore[attr-defined]
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is an OSError
        return None


@contextlib.contextmanager
def _isolated_stdout() -> Iterator[_Results]:
    """Point fd 1 and ``sys.stdout`` at standard error for the duration, and hand out a stream
    on a duplicate of the original fd 1 for the results.

    When ``sys.stdout`` is not fd 1 at call time (an in-process caller that redirected it, e.g.
    pytest's capsys or ``contextlib.redirect_stdout``), the results go to that object instead.
    """
    target = sys.stdout
    with contextlib.suppress(AttributeError, OSError, ValueError):
        target.flush()
    flush_c_stdio()
    saved: int | None = None
    with contextlib.suppress(OSError):
        saved = os.dup(1)
        try:
            os.dup2(2, 1)
        except OSError:
            os.close(saved)
            saved = None
    own: TextIO | None = None
    if saved is not None and (target is None or _fileno(target) == 1):
        own = open(  # closed below; the descriptor itself is closed after fd 1 is restored
            saved,
            "w",
            encoding=getattr(target, "encoding", None) or "utf-8",
            errors=getattr(target, "errors", None) or "strict",
            closefd=False,
        )
    results = _Results(own if own is not None else target)
    sys.stdout = sys.stderr
    try:
        yield results
    finally:
        if own is not None:
            try:
                own.close()
            except BrokenPipeError:
                results.discard()
                with contextlib.suppress(OSError, ValueError):
                    own.close()
            except (OSError, ValueError):
                pass
        flush_c_stdio()  # native output buffered so far goes to stderr, not to the results
        sys.stdout = target
        if saved is not None:
            os.dup2(saved, 1)
            os.close(saved)


def _configure_logging(quiet: bool) -> logging.Handler:
    """The "aidopt" log on the current standard error (one handler, replaced on every call)."""
    logger = logging.getLogger("aidopt")
    for old in [h for h in logger.handlers if getattr(h, "_aidopt_cli", False)]:
        logger.removeHandler(old)
    logger.setLevel(logging.WARNING if quiet else logging.INFO)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    handler._aidopt_cli = True  # type: ignore[attr-defined]
    logger.addHandler(handler)
    # warnings stay warnings (a caller's warnings.catch_warnings still records them; the
    # logging module's captureWarnings would take them away from it), printed on one line
    warnings.formatwarning = _warning_line
    warnings.simplefilter("always", ConvergenceWarning)
    return handler


def _warning_line(message, category, filename, lineno, line=None) -> str:
    """A warning as the command line prints it: its message, on one line."""
    return f"{_one_line(message)}\n"


def _one_line(text: object) -> str:
    """A message on one line (line breaks of solver messages joined)."""
    return " ".join(str(text).split())


def _error(message: object) -> int:
    print(f"aidopt: error: {_one_line(message)}", file=sys.stderr, flush=True)
    return 2


# ---------------------------------------------------------------------- output
def _number(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def _result_text(result: AIDResult) -> str:
    lines = [
        f"model       {result.model}",
        f"solver      {result.solver}",
        f"status      {result.status.value}  ({result.message})",
        f"objective   {_number(result.objective, '.12g')}",
        f"lower bound {_number(result.lower_bound, '.12g')}",
        f"gap         {_number(result.gap, '.3e')}",
        f"iterations  {result.iterations}   final rate {100 * result.final_rate:.3f}%",
        f"n, m        {result.n}, {result.m}",
        f"seconds     {result.seconds:.3f}",
    ]
    if result.starts:  # n_init > 1: one line per start, the chosen one marked
        lines.append("starts:")
        chosen = result.params.get("start")
        lines.extend(
            f"  {'*' if row['start'] == chosen else ' '} random_state {row['random_state']!s:<6}"
            f" {row['status']:<16} objective {row['objective']:.10g}"
            for row in result.starts
        )
    lines.append("solution:")
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
    return "\n".join(lines)


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


# ---------------------------------------------------------------------- commands
class Watchdog(Hook):
    """The time limit of ``aidopt solve``, held even by a step that cannot be interrupted.

    The run stops itself at the limit wherever it can (inner solvers get the time left); a
    native step that overruns it (a dense factorisation, a QP solver that checks its clock
    rarely) is cut here: a timer thread, ``grace`` seconds after the limit (counted from the
    command's start), writes the best answer so far with status ``time_limit`` — or, when there
    is none yet, the one-line error — and ends the process.
    """

    def __init__(self, limit: float | None, out: _Results, render: Any) -> None:
        self.limit, self.out, self.render = limit, out, render
        self.grace = 0.0 if limit is None else 0.5 + 0.02 * limit
        self._stopped_now: Any = None
        self._lock = threading.Lock()
        self._done = False
        self._timer: threading.Timer | None = None

    def __enter__(self) -> Watchdog:
        if self.limit is not None:
            self._timer = threading.Timer(self.limit + self.grace, self._fire)
            self._timer.daemon = True
            self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.finish()

    def on_progress(self, stopped_now: Any) -> None:
        self._stopped_now = stopped_now

    def finish(self) -> None:
        """The run ended by itself (leaving the ``with`` block): the watchdog stands down."""
        with self._lock:
            self._done = True
        if self._timer is not None:
            self._timer.cancel()

    def _fire(self) -> None:
        with self._lock:
            if self._done:
                return
            self._done = True
            why = (
                f"time limit {self.limit:g} s reached inside a step that cannot be interrupted "
                f"(stopped {self.grace:.3g} s past the limit)"
            )
            code = 0
            try:
                if self._stopped_now is None:
                    raise TimeLimitError(f"{why}, before any aggregated problem was solved")
                self.out.write(self.render(self._stopped_now(why + "; the best answer so far")))
                print(f"aidopt: {why}", file=sys.stderr)
            except Exception as exc:  # the process ends here: report, never hang
                code = _error(exc if isinstance(exc, AidoptError) else f"{why} ({exc})")
            finally:
                with contextlib.suppress(Exception):
                    sys.stderr.flush()
                os._exit(code)


def _solve(args: argparse.Namespace, out: _Results) -> int:
    if args.model in methods():  # not an AID model (e.g. CutS3VM): it solves by itself
        from aidopt.core.registry import method

        with Watchdog(getattr(args, "time_limit", None), out, json_line) as watchdog:
            payload = method(args.model).solve_from_cli(args, read_table(args.data))
        out.write(json_line(payload) if args.json else _plain_text(payload))
        return 0
    if args.plot is not None:  # a plot that cannot be written fails now, not after the solve
        from aidopt.plots import check_plot_path

        check_plot_path(args.plot)
    from aidopt.core.registry import model as registered_model

    model = registered_model(args.model).from_cli(args)
    solver = AIDSolver(model, **from_args(RUN_OPTIONS, args), verbose=2 if args.solver_log else 0)
    render = (lambda r: json_line(r.to_dict())) if args.json else _result_text
    with Watchdog(solver.time_limit, out, render) as watchdog:
        solver.hooks = (*solver.hooks, watchdog)
        if args.engine is not None or args.chunk_rows is not None:
            result = _solve_on_blocks(model, solver, args)
        else:
            compiled.preload_for_file(args.data)  # a large file: the compiled passes load
            data = model.data_from_frame(read_table(args.data), args.target)
            result = solver.solve_full(data) if args.full else solver.solve(data)
    if args.plot is not None:
        from aidopt.plots import plot_history

        plot_history(result, args.plot)
    out.write(render(result))
    return 0


def _solve_on_blocks(model: Any, solver: AIDSolver, args: argparse.Namespace) -> Any:
    """AID with the data passes on rows in blocks (``--engine``, ``--chunk-rows``)."""
    from aidopt.engine.chunked import on_blocks
    from aidopt.engine.open import open_blocks

    if args.full:
        raise AidoptError("--full needs every row in memory; leave out --engine/--chunk-rows.")
    on_blocks(model)  # a model without a chunked data pass is refused before any reading
    with open_blocks(
        model,
        args.data,
        args.target,
        engine=args.engine or "numpy",
        chunk_rows=args.chunk_rows,
        scheduler=args.scheduler,
        workers=args.workers,
    ) as blocks:
        return solver.solve(blocks)


def _bench_entries(registered: dict[str, Any]) -> dict[str, str]:
    """bench name → help: every model with a bench spec (its own ``bench`` or the ``SPEC`` of
    ``aidopt/bench/<model>.py``) runs on the generic harness; a benchmark module without a spec
    is a benchmark of its own (the SSL-book tables)."""
    from aidopt.bench import harness

    summary = {name: f": {_summary(cls)}" for name, cls in registered.items()}
    summary.update({name: f": {_summary(e.load())}" for name, e in methods().items()})
    return {name: f"benchmark {name}{summary.get(name, '')}" for name in harness.names(registered)}


def _show(args: argparse.Namespace, out: _Results) -> int:
    """``aidopt show MODEL``: print iteration t's aggregated problem; export it, draw it."""
    from aidopt.core.registry import model as registered_model
    from aidopt.plots import check_plot_path
    from aidopt.show import EXPORT_SUFFIXES, show_iteration

    if args.plot is not None:
        check_plot_path(args.plot)
    if args.export is not None:
        check_output_path(args.export, "--export", EXPORT_SUFFIXES)
    model = registered_model(args.model).from_cli(args)
    run = {o.name: o.read(args) for o in RUN_OPTIONS if o.name in _SHOW_RUN_OPTIONS}
    data = model.data_from_frame(read_table(args.data), args.target)
    view = show_iteration(model, data, args.iteration, **run)
    out.write(view.algebra())
    if args.export is not None:
        print(f"wrote {view.export(args.export)}", file=sys.stderr)
    if args.plot is not None:
        print(f"wrote {view.plot(args.plot)}", file=sys.stderr)
    return 0


def _generate(args: argparse.Namespace) -> int:
    check_output_path(args.out, "--out")  # before generating
    from aidopt.core.registry import model

    generator = model(args.model).generator
    frame = generator.make(seed=args.seed, **from_args(generator.options, args))
    frame.to_csv(args.out, index=False)
    print(f"wrote {args.out} ({frame.shape[0]} rows, {frame.shape[1]} columns)", file=sys.stderr)
    return 0


def _max_gap(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0.0 <= value < 1.0:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1), got {text!r}")
    return value


def _verify(args: argparse.Namespace, out: _Results) -> int:
    """Exit 0: accepted; 1: rejected or not verifiable; 2: the files cannot be read."""
    try:
        verify = importlib.import_module("aidopt.verify")
    except ModuleNotFoundError as exc:
        if exc.name != "aidopt.verify":
            raise
        raise AidoptError("aidopt verify is not available in this installation.") from None
    path = args.result
    if not path.is_file():
        raise DataError(f"Result file not found: {path}")
    try:
        payload, repeated = verify.load_result(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, DataError) as exc:
        raise DataError(f"Result file {path} cannot be read: {exc}") from None
    loosest = {} if args.max_gap is None else {"max_gap": args.max_gap}
    report = verify.verify_result(
        payload, read_table(args.data), args.target, repeated_keys=repeated, **loosest
    )
    out.write(json_line(report.to_dict()) if args.json else report.to_text())
    return 0 if report.accepted else 1


def _demo(out: _Results) -> int:
    from aidopt.data.lad import make_lad
    from aidopt.models.lad import LADData, LADModel

    n, m = 50_000, 10
    print(f"aidopt demo: LAD regression, n={n}, m={m}, Laplace noise, HiGHS", file=sys.stderr)
    X, y, _, _ = make_lad(n, m, seed=0)
    data = LADData.from_arrays(X, y)
    aid = AIDSolver(LADModel(), solver="highs", tol=0.0).solve(data)  # run to the certificate
    out.write(_result_text(aid))
    full = AIDSolver(LADModel(), solver="highs").solve_full(data)
    rel = abs(aid.objective - full.objective) / full.objective
    out.write(
        f"\nfull LP on HiGHS: objective {full.objective:.12g} in {full.seconds:.3f} s; "
        f"AID: {aid.objective:.12g} in {aid.seconds:.3f} s; relative difference {rel:.2e}"
    )
    return 0 if aid.certified and rel <= 1e-7 else 1


def _solvers(out: _Results) -> int:
    """Every registered solver (availability, what it handles), then every model's solvers."""
    from aidopt.core.registry import get_solver, model, solver_names, solvers_for

    lines = []
    for name in solver_names():
        adapter = get_solver(name)
        state = "available" if adapter.is_available() else f"missing ({adapter.INSTALL_HINT})"
        handles = [p.value for p in sorted(adapter.capabilities)]
        handles += [kind.title for kind in adapter.STRUCTURES]
        lines.append(f"{name:<10} {state:<10} {', '.join(handles):<28} {adapter.DESCRIPTION}")
    lines.append("")
    for name in models():
        for selected, cls in model(name).variants().items():
            usable = ", ".join(solvers_for(cls, available_only=False))
            label = f"{name} {selected}".strip()
            lines.append(f"model {label}: solvers {usable}; default {cls.default_solver}")
    for name, entry in methods().items():
        cls = entry.load()
        usable = ", ".join(getattr(cls, "solvers", ()))
        default = getattr(cls, "default_solver", None)
        lines.append(f"method {name} (not AID): solvers {usable}; default {default}")
    lines.append("any other name is passed to Pyomo's SolverFactory (e.g. glpk, cbc, cplex_direct)")
    out.write("\n".join(lines))
    return 0


def _models(args: argparse.Namespace, out: _Results) -> int:
    """The registered models and methods; with --markdown every model's options as tables."""
    from aidopt.common.options import markdown_table

    blocks = []
    if args.markdown:
        from aidopt.core.driver import RUN_OPTIONS

        blocks.append(
            "# Options\n\nGenerated by `aidopt models --markdown`: the Python API, the estimators "
            "and the command line take these names.\n\n## Every run (`AIDSolver`, "
            f"`aidopt solve MODEL`)\n\n{markdown_table(RUN_OPTIONS)}\n\n## Models\n"
        )
    for name, entry in models().items():
        cls = entry.load()
        if not args.markdown:
            blocks.append(f"{name:<10} {_summary(cls)}")
            continue
        blocks.append(f"### `{name}` — {_summary(cls)}\n\n{markdown_table(cls.options)}\n")
        if cls.cli_extras:
            blocks.append(f"Command line only:\n\n{markdown_table(cls.cli_extras)}\n")
    if args.markdown and methods():
        blocks.append("## Methods that are not AID (`aidopt solve METHOD --help`)\n")
    for name, entry in methods().items():
        if args.markdown:
            blocks.append(f"- `{name}` — {_summary(entry.load())}")
        else:
            blocks.append(f"{name:<10} {_summary(entry.load())} (a method, not AID)")
    out.write("\n".join(blocks))
    return 0


def _dispatch(args: argparse.Namespace, out: _Results) -> int:
    if getattr(args, "engine", None) != "dask":  # with Dask the passes run in the workers
        keep_freed_memory()  # large temporaries reuse freed pages (aidopt/common/memory.py)
    if args.command == "solve":
        return _solve(args, out)
    if args.command == "generate":
        return _generate(args)
    if args.command == "show":
        return _show(args, out)
    if args.command == "bench":
        from aidopt.bench import harness

        with out.as_stdout():  # the harness and the parts print their tables
            return harness.run(args)
    if args.command == "models":
        return _models(args, out)
    if args.command == "verify":
        return _verify(args, out)
    if args.command == "demo":
        return _demo(out)
    if args.command == "cluster":
        from aidopt.svc import command as cluster_command

        payload, text = cluster_command.run(args)
        out.write(json_line(payload) if args.json else text)
        return 0
    return _solvers(out)


def _exit_status(exc: SystemExit) -> int:
    """argparse exits with 0 (--help) or 2 (usage, already reported); a module that ends the
    run with ``raise SystemExit("message")`` gets the one-line error."""
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code
    return _error(exc.code)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the exit status (0 ok, 1 rejected/broken pipe, 2 error)."""
    with _isolated_stdout() as out:
        handler = None
        try:
            parser = build_parser(argv)
            with out.as_stdout():  # --help and --version are results
                args = parser.parse_args(argv)
            quiet = getattr(args, "quiet", False) or getattr(args, "json", False)
            handler = _configure_logging(quiet=quiet)
            return _dispatch(args, out)
        except AidoptError as exc:
            return _error(exc)
        except SystemExit as exc:
            return _exit_status(exc)
        except BrokenPipeError:  # output piped into e.g. `head`, which stopped reading
            out.discard()
            return 1
        except KeyboardInterrupt:
            print("aidopt: interrupted", file=sys.stderr)
            return 130
        except Exception as exc:  # a bug or a case without a named error: still one line
            if os.environ.get("AIDOPT_DEBUG"):
                raise
            return _error(
                f"unexpected {type(exc).__name__}: {exc} (please report this; "
                "AIDOPT_DEBUG=1 shows the traceback)"
            )
        finally:
            if handler is not None:
                logging.getLogger("aidopt").removeHandler(handler)


if __name__ == "__main__":
    sys.exit(main())
