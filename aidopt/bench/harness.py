"""``aidopt bench MODEL``: the workloads × methods of the model's :class:`BenchSpec`, every run
isolated.

For each workload, size and repeat the harness builds the instance (``Workload.make(n, m,
seed)``), stores it once in a temporary folder, and runs every method on it in a fresh process
(:func:`aidopt.bench.common.run_isolated` with :func:`run_job`): a hard time limit (the
method's limit plus the spec's grace, after which the process is killed: status ``timeout``) and
the peak resident memory of that process. AID and the full problem run through
:class:`~aidopt.core.driver.AIDSolver`; a baseline returns a solution of the model's type, which the
model evaluates, so that every method is compared on the same objective E.

Outputs in ``--out`` (``<model>`` is the model's name; ``--append`` adds the new runs to those
already there, a re-run of the same (instance, method) replacing the old row, so that a grid can
be run one cell per invocation):

* ``<model>_runs.csv``: one row per run — status, certified, seconds (of the fit), wall seconds
  (of the process), peak MB, objective E, lower bound, gap, iterations, r^0, r^T, the spec's
  metrics and a baseline's extra numbers; per instance ``reference`` (what Δ is taken against:
  the method's pair, else the first of the spec's references that finished), ``delta`` =
  (E − E_reference)/|E_reference|, ``rho`` = T / T_pair, and ``rho_<reference>`` for every
  reference of the spec;
* ``<model>_summary.csv`` and ``.md``: per (workload, n, m, method) the means (σ for times and
  ρ) over the repeats; a method and its pair share one row ("aid-libsvm vs libsvm": T, T_pair,
  ρ, Δ and the spec's differences such as Γ);
* ``<model>_<plot>.png``: seconds against n per method (and the pair's, dashed), and ρ against n.

``--part NAME`` hands the command line over to a specific part of the spec (a module with
``add_arguments``/``run``, e.g. a paper's tables), with that part's own options.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib
import math
import pickle
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from aidopt.bench.common import (
    BenchOptionError,
    parse_choice_list,
    parse_row_sizes,
    parse_sizes,
    run_isolated,
    write_outputs,
)
from aidopt.bench.spec import BenchSpec, Method, Outcome, Workload
from aidopt.common.options import Option, add_to_parser, from_args, parse_seed

__all__ = [
    "Bench",
    "add_arguments",
    "add_ratios",
    "add_spec_arguments",
    "find",
    "parser_class",
    "run",
    "run_job",
    "run_spec",
    "summarize",
    "summary_markdown",
]

#: statuses after which a scaling study stops running the method (``skip_after_limit``)
LIMITS = ("timeout", "time_limit", "solver_limit")
#: the columns of every run, in this order (the spec's metrics and a baseline's info follow)
RUN_COLUMNS = (
    "workload",
    "n",
    "m",
    "seed",
    "method",
    "status",
    "certified",
    "seconds",
    "objective",
    "lower_bound",
    "gap",
    "iterations",
    "initial_rate",
    "final_rate",
    "peak_mb",
    "wall_seconds",
    "time_limit",
    "message",
)
_INSTANCE = ["workload", "n", "m", "seed"]
_UNSET = object()  # a model option not given on the command line


# ---------------------------------------------------------------------- where benchmarks live
@dataclass(frozen=True)
class Bench:
    """A benchmark by name: the model's spec (``model.bench``, else the ``SPEC`` of
    ``aidopt/bench/<name>.py``), or a module that is the whole benchmark (add_arguments/run)."""

    name: str
    spec: BenchSpec | None
    module: str | None = None
    model: Any = None


def find(name: str, registered: dict[str, Any] | None = None) -> Bench:
    """The benchmark called ``name`` (a model's, or one of :data:`aidopt.bench.MODULES`)."""
    from aidopt.bench import MODULES

    if registered is None:
        from aidopt.core.registry import models

        entry = models().get(name)
        cls = entry.load() if entry is not None else None
    else:
        cls = registered.get(name)
    spec = getattr(cls, "bench", None)
    module = MODULES.get(name)
    if spec is None and module is not None:
        spec = getattr(importlib.import_module(module), "SPEC", None)
    if spec is None and module is None:
        raise BenchOptionError(f"no benchmark for {name!r}")
    return Bench(name, spec, None if spec is not None else module, cls)


def names(registered: dict[str, Any]) -> list[str]:
    """Every benchmark name: the models with a spec, then the benchmark modules."""
    from aidopt.bench import MODULES

    found = [n for n, cls in registered.items() if getattr(cls, "bench", None) is not None]
    return list(dict.fromkeys([*found, *MODULES]))


def _resolve(target: Any) -> Any:
    """A callable, or the object a "module:attribute" string names."""
    if not isinstance(target, str):
        return target
    module, _, attr = target.partition(":")
    value: Any = importlib.import_module(module)
    for part in attr.split("."):
        value = getattr(value, part)
    return value


# ---------------------------------------------------------------------- command line
def parser_class(base: type[argparse.ArgumentParser]) -> type[argparse.ArgumentParser]:
    """The parser class of ``aidopt bench MODEL``: ``--part NAME`` hands the rest of the command
    line to that part's own parser (its options, defaults, help and errors)."""

    class BenchParser(base):  # type: ignore[misc, valid-type]
        bench_parts: ClassVar[dict[str, str]] = {}  # set per instance by add_arguments
        bench_default: str | None = None  # the part run without --part (else the spec)
        bench_name: str = "spec"  # --part NAME that runs the spec itself

        def parse_known_args(self, args=None, namespace=None):  # type: ignore[override]
            argv = list(sys.argv[1:] if args is None else args)
            name, rest = _pop_part(argv)
            if name == self.bench_name:
                return super().parse_known_args(rest, namespace)
            default = name is None and self.bench_default is not None
            if default:
                name, rest = self.bench_default, argv
            if name not in self.bench_parts:  # no part, or an unknown one argparse reports
                return super().parse_known_args(argv, namespace)
            prog = self.prog if default else f"{self.prog} --part {name}"
            text = f"{prog}: a part of the benchmark"
            if default:
                text += (
                    f" (the default; '{self.prog} --part {self.bench_name} --help': the "
                    "generated workloads)"
                )
            sub = base(prog=prog, description=text)
            module = self.bench_parts[name]
            importlib.import_module(module).add_arguments(sub)
            sub.set_defaults(part=name, bench_part=module)
            return sub.parse_known_args(rest, namespace)

    return BenchParser


def _pop_part(argv: list[str]) -> tuple[str | None, list[str]]:
    """('NAME', the other arguments) for ``--part NAME`` / ``--part=NAME`` in argv."""
    for i, arg in enumerate(argv):
        if arg == "--":
            break
        if arg.startswith("--part="):
            return arg.partition("=")[2], argv[:i] + argv[i + 1 :]
        if arg == "--part" and i + 1 < len(argv):
            return argv[i + 1], argv[:i] + argv[i + 2 :]
    return None, argv


def add_arguments(
    parser: argparse.ArgumentParser, name: str | None = None, registered: dict | None = None
) -> None:
    """The options of ``aidopt bench NAME`` (NAME defaults to the parser's last word)."""
    name = name or parser.prog.split()[-1]
    bench = find(name, registered)
    if bench.spec is None:  # a benchmark of its own: its module's options
        assert bench.module is not None, "a benchmark without a spec has a module"
        importlib.import_module(bench.module).add_arguments(parser)
        parser.set_defaults(bench_part=bench.module)
        return
    add_spec_arguments(parser, bench.spec, bench.model)


def add_spec_arguments(parser: argparse.ArgumentParser, spec: BenchSpec, model: Any) -> None:
    """The generic options of a spec, the generator options of its workloads, the model's own
    options (defaults: the spec's ``model_options``, else the model's) and ``--part``."""
    parser.set_defaults(bench_part=None)
    parser.bench_parts = dict(spec.parts)  # type: ignore[attr-defined]
    parser.bench_default = spec.default_part  # type: ignore[attr-defined]
    parser.bench_name = spec.name  # type: ignore[attr-defined]
    shown = ",".join(f"{n}x{m}" for n, m in spec.workloads[0].sizes)
    if len(spec.workloads) > 1:
        shown = "each workload's, see --sizes-NAME"
    parser.add_argument(
        "--sizes",
        type=parse_sizes,
        default=None,
        help=f"comma-separated NxM list for every workload (default: {shown})",
    )
    if len(spec.workloads) > 1:
        parser.add_argument(
            "--workloads",
            default=None,
            help=f"comma-separated subset of {', '.join(w.name for w in spec.workloads)}",
        )
        for w in spec.workloads:
            sizes = ",".join(f"{n}x{m}" for n, m in w.sizes)
            parser.add_argument(
                f"--sizes-{w.name}",
                dest=_sizes_dest(w),
                type=parse_row_sizes(w.sizes[0][1]),
                default=None,
                help=f"sizes of workload {w.name}: N or NxM list (default: {sizes})",
            )
    parser.add_argument(
        "--repeats",
        type=_positive_int,
        default=spec.repeats,
        help=f"instances per size, seeds SEED, SEED+1, ... (default {spec.repeats})",
    )
    parser.add_argument("--seed", type=parse_seed, default=0, help="first seed (0)")
    default = ",".join(spec.default_methods) if spec.default_methods else "all that can run here"
    parser.add_argument(
        "--methods",
        default=None,
        help=f"comma-separated subset of {', '.join(m.name for m in spec.methods)} "
        f"(default: {default})",
    )
    parser.add_argument(
        "--time-limit",
        type=float,
        default=spec.time_limit,
        help=f"seconds per run (default {spec.time_limit:g}); a run is killed {spec.grace:g} s "
        "after it",
    )
    parser.add_argument(
        "--method-time-limit",
        default="",
        help="per-method limits overriding --time-limit, e.g. NAME=400,OTHER=120",
    )
    tol = spec.aid_options.get("tol", 1e-4)
    parser.add_argument(
        "--tol", type=float, default=tol, help=f"AID relative gap tolerance (default {tol:g})"
    )
    parser.add_argument("--out", type=Path, default=Path("bench-out"), help="output folder")
    parser.add_argument(
        "--append",
        action="store_true",
        help="keep the runs already in --out and summarise them with the new ones",
    )
    if spec.parts:
        parser.add_argument(
            "--part",
            choices=[*sorted(spec.parts), spec.name],
            default=None,
            help="run a specific part instead, with its own options (see --part NAME --help)",
        )
    taken = set(parser._option_string_actions)
    group = parser.add_argument_group("instances")
    for option in _unique(o for w in spec.workloads for o in w.options):
        if option.cli_flag not in taken:
            add_to_parser(group, (option,))
            taken.add(option.cli_flag)
    if model is not None:
        _add_model_options(parser, spec, model, taken)
    for old, new in spec.aliases.items():  # old spellings of the spec's flags
        action = parser._option_string_actions.get(new)
        if action is not None and old not in parser._option_string_actions:
            action.option_strings = [*action.option_strings, old]
            parser._option_string_actions[old] = action


def _add_model_options(
    parser: argparse.ArgumentParser, spec: BenchSpec, model: Any, taken: set[str]
) -> None:
    group = parser.add_argument_group(
        "model options",
        "the model's options (bench defaults: "
        + (", ".join(f"{k}={v!r}" for k, v in spec.model_options.items()) or "the model's")
        + "; a workload's or method's own options take precedence)",
    )
    for option in (*model.options, *model.cli_extras):
        flags = {option.cli_flag, option.negate} - {None}
        if option.cli and not flags & taken:
            add_to_parser(group, (option,))
            for action in parser._actions:
                if action.dest == option.dest:  # the spec or an instance may give it
                    action.required = False
            parser.set_defaults(**{option.dest: _UNSET})
            taken |= flags


def _unique(options) -> list[Option]:
    return list({o.name: o for o in options}.values())


def _sizes_dest(workload: Workload) -> str:
    return "sizes_" + workload.name.replace("-", "_")


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"invalid count {text!r}: expected an integer ≥ 1")
    return value


# ---------------------------------------------------------------------- the run
def run(args: argparse.Namespace) -> int:
    """``aidopt bench MODEL``: a part (``--part`` or a benchmark of its own), or the spec."""
    if getattr(args, "bench_part", None):
        return importlib.import_module(args.bench_part).run(args)
    bench = find(args.model)
    assert bench.spec is not None, "a benchmark without a spec has a part"
    return run_spec(bench.spec, args.model, args)


@dataclass
class _Plan:
    workloads: list[tuple[Workload, list[tuple[int, int]], dict[str, Any]]]
    methods: list[Method]
    limits: dict[str, float]
    models: dict[tuple[str, str], Any]  # checked before any run (when no instance is needed)
    model_values: dict[tuple[str, str], dict[str, Any]]
    aid_options: dict[str, Any]


def run_spec(spec: BenchSpec, name: str, args: argparse.Namespace, model: Any = None) -> int:
    """Run the spec's workloads × methods for model ``name`` (``model``: its class, default
    the registry's) and write the tables; every option is checked before the first run."""
    if model is None:
        from aidopt.core.registry import model as registered

        model = registered(name)
    plan = _plan(spec, model, args)
    out = Path(args.out)
    previous = out / f"{name}_runs.csv"
    old = pd.read_csv(previous) if args.append and previous.is_file() else None
    rows: list[dict[str, Any]] = []
    total = sum(len(s) for _, s, _ in plan.workloads) * args.repeats * len(plan.methods)
    done = 0
    with tempfile.TemporaryDirectory(prefix=f"aidopt-bench-{name}-") as tmp:
        folder = Path(tmp)
        for workload, sizes, options in plan.workloads:
            stopped: set[str] = set()
            for n, m in sizes:
                for rep in range(args.repeats):
                    seed = args.seed + rep
                    data, own = _instance(workload, n, m, seed, options)
                    instance = _dump(folder / f"data_{workload.name}_{n}_{m}_{seed}.pkl", data)
                    del data
                    jobs = _jobs(spec, plan, model, workload, own, folder)
                    key = {"workload": workload.name, "n": n, "m": m, "seed": seed}
                    for method in plan.methods:
                        done += 1
                        limit = plan.limits[method.name]
                        if method.name in stopped:
                            rows.append({**key, "method": method.name, "status": "skipped"})
                            continue
                        print(
                            f"[{done}/{total}] {workload.name} n={n} m={m} seed={seed} "
                            f"{method.name} ...",
                            end="",
                            file=sys.stderr,
                            flush=True,
                        )
                        res = run_isolated(
                            "aidopt.bench.harness:run_job",
                            {"job": str(jobs[method.name]), "data": str(instance)},
                            timeout=limit + spec.grace,
                        )
                        seconds = res.get("seconds")
                        shown = "" if seconds is None else f" {seconds:.3f} s"
                        print(f" {res.get('status')}{shown}", file=sys.stderr, flush=True)
                        if spec.skip_after_limit and res.get("status") in LIMITS:
                            stopped.add(method.name)  # a larger instance will not fit either
                        rows.append({**key, "method": method.name, **res, "time_limit": limit})
                        _write(spec, name, out, old, rows)  # partial results survive
                    instance.unlink()
                    for job in jobs.values():
                        job.unlink()
    runs = _write(spec, name, out, old, rows)
    if runs is None:
        print("nothing to summarise: no runs", file=sys.stderr)
        return 0
    summary = summarize(runs, spec)
    plot(summary, out / f"{name}_{spec.plot}.png", name)
    print(summary_markdown(summary, spec))
    print(
        f"wrote {out}/{name}_runs.csv, {name}_summary.csv, {name}_summary.md, "
        f"{name}_{spec.plot}.png",
        file=sys.stderr,
    )
    return 0


def _instance(
    workload: Workload, n: int, m: int, seed: int, options: dict[str, Any]
) -> tuple[Any, dict[str, Any]]:
    """The workload's data, and the model options the instance fixes (if any)."""
    made = workload.make(n, m, seed, **options)
    if isinstance(made, tuple):
        return made[0], dict(made[1])
    return made, {}


def _jobs(
    spec: BenchSpec, plan: _Plan, model_cls: Any, workload: Workload, own: dict, folder: Path
) -> dict[str, Path]:
    """One pickled task per method: the model (with the instance's own options), the method,
    the metrics, the AID options and the time limit."""
    jobs = {}
    for method in plan.methods:
        model = plan.models.get((workload.name, method.name))
        if model is None or own:
            values = {**plan.model_values[workload.name, method.name], **own}
            model = model_cls.from_options(**values)
            model.check_params()
        task = {
            "model": model,
            "method": dataclasses.replace(method, missing=None),
            "metrics": spec.metrics,
            "aid_options": plan.aid_options,
            "time_limit": plan.limits[method.name],
        }
        jobs[method.name] = _dump(folder / f"job_{workload.name}_{method.name}.pkl", task)
    return jobs


def _plan(spec: BenchSpec, model_cls: Any, args: argparse.Namespace) -> _Plan:
    """Everything the command line asks for, checked (an error before any run)."""
    by_name = {w.name: w for w in spec.workloads}
    chosen = getattr(args, "workloads", None)
    selected = (
        [by_name[w] for w in parse_choice_list(chosen, by_name, "workload")]
        if chosen is not None
        else list(spec.workloads)
    )
    workloads = []
    for w in selected:
        sizes = getattr(args, _sizes_dest(w), None) or args.sizes or list(w.sizes)
        workloads.append((w, sizes, from_args(w.options, args) if w.options else {}))
    methods = _methods(spec, args.methods)
    limits = _limits(spec, args.method_time_limit, args.time_limit)
    given = {}
    for option in (*model_cls.options, *model_cls.cli_extras):
        if getattr(args, option.dest, _UNSET) is not _UNSET:
            given[option.name] = option.read(args)
    required = {o.name for o in model_cls.options if o.required}
    values, models = {}, {}
    for w, _, _ in workloads:
        for method in methods:
            key = w.name, method.name
            values[key] = {**spec.model_options, **given, **w.model_options, **method.model_options}
            if required <= set(values[key]):  # else the instance gives the rest (PU's prior)
                models[key] = model_cls.from_options(**values[key])
                models[key].check_params()
    aid_options = {**spec.aid_options, "tol": args.tol}
    return _Plan(workloads, methods, limits, models, values, aid_options)


def _methods(spec: BenchSpec, text: str | None) -> list[Method]:
    if text is not None:
        by_name = {m.name: m for m in spec.methods}
        return [by_name[n] for n in parse_choice_list(text, list(by_name), "method")]
    default = spec.default_methods or tuple(m.name for m in spec.methods)
    chosen = []
    for name in default:
        method = spec.method(name)
        assert method is not None, f"default method {name!r} is declared"
        why = method.missing() if method.missing is not None else None
        if why:
            print(f"skipping {name}: {why}", file=sys.stderr)
            continue
        chosen.append(method)
    return chosen


def _limits(spec: BenchSpec, text: str, default: float) -> dict[str, float]:
    limits = {m.name: default for m in spec.methods}
    for item in filter(None, (t.strip() for t in text.split(","))):
        name, _, value = item.partition("=")
        try:
            seconds = float(value)
        except ValueError:
            seconds = math.nan
        if name.strip() not in limits or not math.isfinite(seconds) or seconds <= 0:
            raise BenchOptionError(
                f"--method-time-limit: expected METHOD=SECONDS with a known method and "
                f"seconds > 0, got {item!r}"
            )
        limits[name.strip()] = seconds
    return limits


def _dump(path: Path, value: Any) -> Path:
    with open(path, "wb") as f:
        pickle.dump(value, f, protocol=pickle.HIGHEST_PROTOCOL)
    return path


def _write(
    spec: BenchSpec, name: str, out: Path, old: pd.DataFrame | None, rows: list[dict[str, Any]]
) -> pd.DataFrame | None:
    """The runs so far (with the old ones under --append), their ratios, summary and table."""
    frames = [f for f in (old, pd.DataFrame(rows)) if f is not None and len(f)]
    if not frames:
        return None
    runs = add_ratios(_latest(pd.concat(frames, ignore_index=True), spec), spec)
    write_outputs(runs, out, f"{name}_runs")
    summary = summarize(runs, spec)
    write_outputs(summary, out, f"{name}_summary")
    (out / f"{name}_summary.md").write_text(summary_markdown(summary, spec))
    return runs


def _latest(runs: pd.DataFrame, spec: BenchSpec) -> pd.DataFrame:
    """One row per (instance, method): the last measured one (a skipped row only when the
    method was never measured there); runs written before workloads existed get the first."""
    if "workload" not in runs:
        runs.insert(0, "workload", spec.workloads[0].name)
    runs["workload"] = runs["workload"].fillna(spec.workloads[0].name)
    measured = (runs["status"] != "skipped").to_numpy()
    order = np.argsort(measured, kind="stable")  # skipped rows first: a measured one wins
    keep = runs.iloc[order].drop_duplicates([*_INSTANCE, "method"], keep="last").index
    return runs.loc[sorted(keep)].reset_index(drop=True)


# ---------------------------------------------------------------------- one run (in a worker)
def run_job(job: str, data: str) -> dict[str, Any]:
    """One method on one instance (called in a fresh process by the worker): the pickled task
    (model, method, metrics, AID options, time limit) on the pickled data."""
    with open(job, "rb") as f:
        task = pickle.load(f)
    with open(data, "rb") as f:
        instance = pickle.load(f)
    model, method, limit = task["model"], task["method"], task["time_limit"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if method.kind == "baseline":
            out, solution = _run_baseline(model, method, instance, limit)
        else:
            out, solution = _run_aid(model, method, instance, limit, task["aid_options"])
        if solution is not None:
            if out.get("objective") is None:
                out["objective"] = float(model.evaluate(instance, solution).objective)
            if task["metrics"] is not None:
                out.update(_resolve(task["metrics"])(model, instance, solution))
    return {k: _plain(v) for k, v in out.items()}


def _run_aid(model, method: Method, data, limit, aid_options) -> tuple[dict[str, Any], Any]:
    from aidopt.core.driver import AIDSolver
    from aidopt.exceptions import AidoptError, SolverLicenseError, TimeLimitError

    options = {**aid_options, **method.options}
    solver = AIDSolver(model, solver=method.solver, time_limit=limit, **options)
    start = time.perf_counter()
    try:
        result = solver.solve(data) if method.kind == "aid" else solver.solve_full(data)
    except AidoptError as exc:  # no solution: the first solve hit the limit, a licence, ...
        text = " ".join(str(exc).split())[:300]
        if isinstance(exc, TimeLimitError) or "time_limit" in text:
            status = "timeout"
        else:
            status = "solver_limit" if isinstance(exc, SolverLicenseError) else "error"
        return {"status": status, "seconds": time.perf_counter() - start, "message": text}, None
    out = {
        "status": result.status.value,
        "certified": result.certified,
        "seconds": result.seconds,
        "objective": result.objective,
        "lower_bound": result.lower_bound,
        "gap": result.gap,
        "iterations": result.iterations,
        "initial_rate": result.records[0].rate if result.records else None,
        "final_rate": result.final_rate,
        "message": result.message[:300],
    }
    return out, result.solution


def _run_baseline(model, method: Method, data, limit) -> tuple[dict[str, Any], Any]:
    run = _resolve(method.run)
    for module in getattr(run, "imports", ()):  # loaded before the clock starts
        importlib.import_module(module)
    start = time.perf_counter()
    answer = run(model, data, limit)
    seconds = time.perf_counter() - start
    outcome = answer if isinstance(answer, Outcome) else Outcome(answer)
    out = {
        "status": outcome.status,
        "seconds": seconds if outcome.seconds is None else outcome.seconds,
        **outcome.info,
    }
    if outcome.message:
        out["message"] = outcome.message[:300]
    return out, outcome.solution


def _plain(value: Any) -> Any:
    """numpy scalars as Python values (JSON)."""
    return value.item() if isinstance(value, np.generic) else value


# ---------------------------------------------------------------------- ratios and summary
def _derived(spec: BenchSpec) -> set[str]:
    return {"reference", "delta", "rho", *spec.differences}


def add_ratios(runs: pd.DataFrame, spec: BenchSpec) -> pd.DataFrame:
    """Per instance: ``reference`` (the pair, else the first reference that finished),
    ``delta`` = (E − E_reference)/|E_reference|, ``rho`` = T / T_pair, ``rho_<ref>`` for the
    spec's references, and the spec's differences (metric − the pair's)."""
    derived = _derived(spec)
    runs = runs.drop(columns=[c for c in runs if c in derived or c.startswith("rho_")])
    groups = []
    for _, group in runs.groupby(_INSTANCE, sort=False, dropna=False):
        g = group.copy()
        finished = g[g["status"].isin(spec.finished)].drop_duplicates("method", keep="last")
        ok = finished.set_index("method")
        present = [r for r in spec.references if r in ok.index]
        reference, pair = [], []
        for method, status in zip(g["method"], g["status"], strict=True):
            declared = spec.method(method)
            p = declared.pair if declared is not None else None
            ref = p if p is not None else (present[0] if present else None)
            done = status in spec.finished
            reference.append(ref if done and ref in ok.index else None)
            pair.append(p if done and p in ok.index else None)
        g["reference"] = reference
        g["delta"] = _against(g, ok, reference, "objective", relative=True)
        g["rho"] = _against(g, ok, pair, "seconds", ratio=True)
        for ref in present:
            done = g["status"].isin(spec.finished)
            mine = pd.to_numeric(g["seconds"], errors="coerce").where(done)
            g[f"rho_{ref}"] = mine / ok.loc[ref, "seconds"]
        for column, metric in spec.differences.items():
            g[column] = _against(g, ok, pair, metric) if metric in g else np.nan
        groups.append(g)
    out = pd.concat(groups, ignore_index=True)
    first = [c for c in RUN_COLUMNS if c in out]
    rhos = [f"rho_{r}" for r in spec.references if f"rho_{r}" in out]
    tail = ["reference", "delta", "rho", *rhos, *spec.differences]
    middle = [c for c in out if c not in first and c not in tail]
    return out[first + middle + tail]


def _against(g, ok, targets, column, *, relative=False, ratio=False) -> np.ndarray:
    """column of each row against the same column of its target row (None: NaN)."""
    if column not in g:
        return np.full(len(g), np.nan)
    mine = pd.to_numeric(g[column], errors="coerce").to_numpy(dtype=float)
    theirs = np.array(
        [np.nan if t is None else float(ok.loc[t, column]) for t in targets], dtype=float
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        if ratio:
            return mine / theirs
        if relative:
            return (mine - theirs) / np.abs(theirs)
        return mine - theirs


#: the run columns averaged as they are (objective ... time limit)
_MEANS = RUN_COLUMNS[RUN_COLUMNS.index("objective") : RUN_COLUMNS.index("message")]


def _extras(runs: pd.DataFrame, spec: BenchSpec) -> list[str]:
    """The spec's metrics and the baselines' numbers: numeric columns of no fixed meaning."""
    fixed = {*RUN_COLUMNS, *_derived(spec)}
    return [
        c
        for c in runs
        if c not in fixed and not c.startswith("rho_") and pd.api.types.is_numeric_dtype(runs[c])
    ]


def summarize(runs: pd.DataFrame, spec: BenchSpec) -> pd.DataFrame:
    """Per (workload, n, m, method): counts, statuses and means (σ of seconds and ρ) over the
    repeats; a method's pair is folded into its row (t_pair, pair_status, pair_<extra>)."""
    extras = _extras(runs, spec)
    rhos = [c for c in runs if c.startswith("rho_")]
    order = {m.name: i for i, m in enumerate(spec.methods)}
    rank = {w.name: i for i, w in enumerate(spec.workloads)}
    rows = []
    for (workload, n, m), cell in runs.groupby(["workload", "n", "m"], sort=False):
        present = set(cell["method"])
        folded = {
            x.pair for x in spec.methods if x.name in present and x.pair in present and x.pair
        }
        methods = sorted(present - folded, key=lambda x: order.get(x, len(order)))
        for method in methods:
            g = cell[cell["method"] == method]
            ok = g[g["status"].isin(spec.finished)]
            declared = spec.method(method)
            pair = declared.pair if declared is not None and declared.pair in present else None
            refs = g["reference"].dropna() if "reference" in g else pd.Series(dtype=object)
            row: dict[str, Any] = {
                "workload": workload,
                "n": n,
                "m": m,
                "method": method,
                "pair": pair,
                "reference": refs.mode().iloc[0] if len(refs) else None,
                "status": "/".join(sorted(set(g["status"].astype(str)))),
                "runs": len(g),
                "ok": len(ok),
                "instances": int(ok["reference"].notna().sum()) if len(refs) else len(ok),
                "certified": int((g["certified"] == True).sum()) if "certified" in g else 0,  # noqa: E712
                "seconds": _mean(ok, "seconds"),
                "seconds_std": _std(ok, "seconds"),
            }
            if pair is not None:
                p = cell[cell["method"] == pair]
                p_ok = p[p["status"].isin(spec.finished)]
                row["t_pair"] = _mean(p_ok, "seconds")
                row["t_pair_std"] = _std(p_ok, "seconds")
                row["pair_status"] = "/".join(sorted(set(p["status"].astype(str))))
                row.update({f"pair_{c}": _mean(p, c) for c in extras})
            row["rho"] = _mean(g, "rho")
            row["rho_std"] = _std(g.dropna(subset=["rho"]) if "rho" in g else g, "rho")
            row["delta"] = _mean(g, "delta")
            row.update({c: _mean(g, c) for c in (*rhos, *spec.differences)})
            row.update({c: _mean(g, c) for c in (*_MEANS, *extras)})
            rows.append(row)
    summary = pd.DataFrame(rows)
    if summary.empty:
        return summary
    summary = summary.dropna(axis=1, how="all")
    keys = summary["workload"].map(lambda w: rank.get(w, len(rank)))
    summary = summary.assign(_w=keys).sort_values(["_w", "n", "m"], kind="stable")
    return summary.drop(columns="_w").reset_index(drop=True)


def _mean(frame: pd.DataFrame, column: str) -> float:
    if column not in frame or not len(frame):
        return math.nan
    return float(pd.to_numeric(frame[column], errors="coerce").mean())


def _std(frame: pd.DataFrame, column: str) -> float:
    if column not in frame or not len(frame):
        return math.nan
    values = pd.to_numeric(frame[column], errors="coerce").dropna()
    return float(values.std(ddof=0)) if len(values) else math.nan


def summary_markdown(summary: pd.DataFrame, spec: BenchSpec) -> str:
    """The summary as one Markdown table; columns with no value anywhere are left out.

    status "certified": every cluster pure and the gap proven (AID); seconds "> L": every run
    was killed at its limit L; "A vs B": a method and its pair (T_pair, ρ = T/T_pair; σ over
    the instances in brackets); Δ = (E − E_ref)/|E_ref| against the pair or the first reference
    that finished; r^0, r^T: initial and final aggregation rate; T: AID iterations.
    """
    if summary.empty:
        return "(no runs)\n"
    labels = {m.name: m.label or m.name for m in spec.methods}
    columns: list[tuple[str, Callable[[pd.Series], str]]] = []
    if len(spec.workloads) > 1:
        columns.append(("workload", lambda r: str(r["workload"])))
    columns += [
        ("n", lambda r: f"{int(r['n']):,}"),
        ("m", lambda r: str(int(r["m"]))),
        ("method", lambda r: r["method"] + (f" vs {r['pair']}" if _given(r, "pair") else "")),
        ("status", _status),
        ("seconds", lambda r: _seconds(r, "seconds", "ok")),
        ("T_pair", lambda r: _seconds(r, "t_pair", None) if _given(r, "pair") else ""),
        ("ρ", lambda r: _with_std(r, "rho", ".3f")),
        ("Δ", lambda r: _fmt(r.get("delta"), ".1e")),
    ]
    columns += [(f"ρ vs {labels[ref]}", _cell(f"rho_{ref}", ".3f")) for ref in spec.references]
    columns += [(c.header, _cell(c.key, c.fmt)) for c in spec.columns]
    columns += [
        ("r^0", lambda r: _fmt(r.get("initial_rate"), ".2%")),
        ("r^T", lambda r: _fmt(r.get("final_rate"), ".2%")),
        ("T", lambda r: _count(r.get("iterations"))),
        ("peak MB", lambda r: _fmt(r.get("peak_mb"), ".0f")),
        ("inst.", lambda r: str(int(r["instances"]))),
    ]
    cells = [[f(r) for _, f in columns] for _, r in summary.iterrows()]
    keep = [
        j
        for j, (head, _) in enumerate(columns)
        if head in ("n", "m", "method", "status") or any(row[j] for row in cells)
    ]
    lines = [
        "| " + " | ".join(columns[j][0] for j in keep) + " |",
        "|" + "---|" * len(keep),
    ]
    lines += ["| " + " | ".join(row[j] for j in keep) + " |" for row in cells]
    return "\n".join(lines) + "\n"


def _given(row: pd.Series, key: str) -> bool:
    value = row.get(key)
    return isinstance(value, str) and value != ""


def _status(row: pd.Series) -> str:
    status = str(row["status"])
    if status == "optimal" and row.get("certified", 0) == row["runs"]:
        status = "certified"
    if _given(row, "pair") and _given(row, "pair_status"):
        status += f" / {row['pair_status']}"
    return status


def _seconds(row: pd.Series, column: str, ok: str | None) -> str:
    limit = row.get("time_limit")
    if ok and row[ok] == 0 and "timeout" in str(row["status"]) and not pd.isna(limit):
        return f"> {limit:g}"
    return _with_std(row, column, ".2f")


def _with_std(row: pd.Series, column: str, fmt: str) -> str:
    value, std = row.get(column), row.get(f"{column}_std")
    text = _fmt(value, fmt)
    if text and not pd.isna(std) and std > 0:
        text += f" ({format(std, fmt)})"
    return text


def _cell(key: str, fmt: str) -> Callable[[pd.Series], str]:
    """A Markdown cell: the row's ``key`` formatted with ``fmt``."""
    return lambda r: _fmt(r.get(key), fmt)


def _fmt(value: Any, fmt: str) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    try:
        return format(value, fmt)
    except (TypeError, ValueError):
        return str(value)


def _count(value: Any) -> str:
    if value is None or pd.isna(value):
        return ""
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.1f}"


def plot(summary: pd.DataFrame, path: Path, title: str = "") -> None:
    """(a) seconds against n, one line per method and m (the pair's dashed, same colour);
    (b) ρ = T / T_pair against n for the methods with a pair."""
    if summary.empty or "seconds" not in summary:
        return
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paired = summary[summary["rho"].notna()] if "rho" in summary else summary.iloc[0:0]
    panels = 2 if len(paired) else 1
    fig, axes = plt.subplots(
        1, panels, figsize=(6 * panels, 4.5), squeeze=False, constrained_layout=True
    )
    several = summary["workload"].nunique() > 1
    colours: dict[tuple, str] = {}
    keys = ["workload", "method", "m"]
    for key, g in summary.groupby(keys, sort=False):
        g = g.sort_values("n")
        colour = colours.setdefault(key, f"C{len(colours) % 10}")
        name = f"{key[0]}: " if several else ""
        name += f"{key[1]}, m={key[2]}"
        if g["seconds"].notna().any():
            axes[0][0].plot(g["n"], g["seconds"], "o-", color=colour, label=name)
        if "t_pair" in g and g["t_pair"].notna().any():
            pair = g["pair"].dropna().iloc[0]
            axes[0][0].plot(
                g["n"], g["t_pair"], "s--", color=colour, label=f"{pair} (pair), m={key[2]}"
            )
        if panels == 2 and g["rho"].notna().any():
            axes[0][1].plot(g["n"], g["rho"], "o-", color=colour, label=name)
    axes[0][0].set(xlabel="n", ylabel="seconds (mean of the finished runs)", xscale="log")
    axes[0][0].set_yscale("log")
    axes[0][0].set_title(f"{title}: time against n" if title else "time against n")
    axes[0][0].legend(fontsize=7)
    if panels == 2:
        ax = axes[0][1]
        ax.set(xlabel="n", ylabel="ρ = T / T_pair", xscale="log", yscale="log")
        ax.axhline(1.0, color="grey", lw=0.8)
        ax.set_title("ρ against n")
        ax.legend(fontsize=7)
    path.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(ValueError):  # a log axis with nothing on it
        fig.savefig(path, dpi=110)
    plt.close(fig)
