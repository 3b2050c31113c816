"""``aidopt verify``: re-check a saved result from the data alone, with no solver.

verify is a checker, not a reader: it trusts nothing in the result file. On the original data
and with the model's own formulas only, it

1. checks the file's form: every field known, of its type and shape, every number finite;
2. rebuilds the model from ``params`` (every option validated) and the solution from
   ``solution`` (and the dual expansion, for kernel models); the solution must be exactly what
   the model writes for the solution it defines (a radius, a kernel, a label that the model
   would not write is rejected);
3. recomputes the objective E and its rounding bound, and, at the certificate's dual point, the
   lower bound L (the point must lie in its box) and the gap (U − L)/|E|;
4. accepts the claims only where the recomputed numbers prove them: objective and upper bound
   equal to what it recomputed, lower bounds not above L, gaps not below its gap, and a status
   ``optimal`` or ``gap`` only when the recomputed gap is within the tolerance the status
   claims — a tolerance that is itself checked against ``params.tol`` and bounded by the
   verifier's ``max_gap`` (default: ``aidopt solve``'s tol), never taken from the file.

A bound that rests on a solver (S3VM: the optimum of a MIQP relaxation) cannot be re-checked
without one; such a result is reported as not verifiable, never as verified. The threat model
is in docs/certificates.md.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from aidopt.core.certificate import GAP_FLOOR, MAX_SOLVER_ACCURACY, DualPoint, relative_gap
from aidopt.core.contract import AggregatedModel
from aidopt.core.result import HISTORY_COLUMNS, START_COLUMNS, AIDStatus
from aidopt.data.io import Table
from aidopt.exceptions import AidoptError, DataError

__all__ = ["DEFAULT_MAX_GAP", "VerifyReport", "load_result", "verify_result"]

_RTOL = 1e-9  # recomputed and claimed numbers must agree to this (relative) precision
DEFAULT_MAX_GAP = 1e-4  # the loosest gap accepted as a proof unless the verifier says otherwise
_PROVEN = (AIDStatus.OPTIMAL, AIDStatus.GAP)
#: what a computation on hostile numbers may raise; each is a rejection naming the stage
_ARITHMETIC = (
    AidoptError,
    ArithmeticError,
    IndexError,
    KeyError,
    TypeError,
    ValueError,
    np.linalg.LinAlgError,
)


@dataclass
class VerifyReport:
    """The outcome: ``accepted`` only when every claim was re-checked and holds."""

    model: str
    checks: list[tuple[str, bool, str]] = field(default_factory=list)
    verifiable: bool = True
    objective: float | None = None
    lower_bound: float | None = None
    gap: float | None = None
    status: str | None = None  # the strongest status the recomputed numbers prove

    @property
    def accepted(self) -> bool:
        """Every claim was re-checked and holds (exit 0)."""
        return self.verifiable and all(ok for _, ok, _ in self.checks)

    @property
    def rejected(self) -> bool:
        """Some claim is false or malformed (a failed check)."""
        return not all(ok for _, ok, _ in self.checks)

    def add(self, name: str, ok: bool, detail: str) -> bool:
        """Record one check (``name``: the field or step) and return ``ok``."""
        self.checks.append((name, bool(ok), detail))
        return bool(ok)

    def to_dict(self) -> dict[str, Any]:
        """The report as the JSON object of ``aidopt verify --json``."""
        return {
            "model": self.model,
            "accepted": self.accepted,
            "verifiable": self.verifiable,
            "objective": self.objective,
            "lower_bound": self.lower_bound,
            "gap": self.gap,
            "proven_status": self.status,
            "checks": [{"check": n, "ok": ok, "detail": d} for n, ok, d in self.checks],
        }

    def to_text(self) -> str:
        """The report as ``aidopt verify`` prints it: the verdict, then a line per check."""
        if self.accepted:
            verdict = "ACCEPTED: every claim holds on the data"
        elif not self.rejected:
            verdict = "NOT VERIFIABLE from the data alone"
        else:
            verdict = "REJECTED"
        lines = [f"aidopt verify ({self.model}): {verdict}"]
        lines += [
            f"  [{'ok' if ok else 'FAIL'}] {name}: {detail}" for name, ok, detail in self.checks
        ]
        return "\n".join(lines)


# ---------------------------------------------------------------------- reading the file
def load_result(text: str) -> tuple[Any, list[str]]:
    """The JSON value of a result file and the keys it repeats (JSON keeps only the last of a
    repeated key, so a repeated key is a rejection). Raises DataError if it is not JSON."""
    repeated: list[str] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        for key, value in items:
            if key in seen:
                repeated.append(key)
            seen[key] = value
        return seen

    try:
        return json.loads(text, object_pairs_hook=pairs), repeated
    except (json.JSONDecodeError, RecursionError) as exc:
        raise DataError(f"not JSON: {exc}") from None


# ---------------------------------------------------------------------- the file's form
Spec = Callable[[str, Any], Iterator[str]]


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _number(nullable: bool = False, integer: bool = False, low: float | None = None) -> Spec:
    def check(path: str, value: Any) -> Iterator[str]:
        if value is None and nullable:
            return
        if integer and not (isinstance(value, int) and not isinstance(value, bool)):
            yield f"{path}: expected an integer, found {_shown(value)}"
        elif not _is_number(value):
            yield f"{path}: expected a number, found {_shown(value)}"
        elif not math.isfinite(value):
            yield f"{path}: {value!r} is not a finite number"
        elif low is not None and value < low:
            yield f"{path}: {value!r} is below {low:g}"

    return check


def _string(nullable: bool = False, choices: tuple[str, ...] | None = None) -> Spec:
    def check(path: str, value: Any) -> Iterator[str]:
        if value is None and nullable:
            return
        if not isinstance(value, str):
            yield f"{path}: expected a string, found {_shown(value)}"
        elif choices is not None and value not in choices:
            yield f"{path}: {value!r} is not one of {', '.join(choices)}"

    return check


def _boolean(path: str, value: Any) -> Iterator[str]:
    if not isinstance(value, bool):
        yield f"{path}: expected true or false, found {_shown(value)}"


def _record(fields: dict[str, Spec], nullable: bool = False) -> Spec:
    """An object with exactly these fields."""

    def check(path: str, value: Any) -> Iterator[str]:
        if value is None and nullable:
            return
        if not isinstance(value, dict):
            yield f"{path or 'the result'}: expected an object, found {_shown(value)}"
            return
        prefix = f"{path}." if path else ""
        for key in value.keys() - fields.keys():
            yield f"{prefix}{key}: not a field of an aidopt result"
        for key, spec in fields.items():
            if key not in value:
                yield f"{prefix}{key}: missing"
            else:
                yield from spec(f"{prefix}{key}", value[key])

    return check


def _list(item: Spec, nullable: bool = False) -> Spec:
    def check(path: str, value: Any) -> Iterator[str]:
        if value is None and nullable:
            return
        if not isinstance(value, list):
            yield f"{path}: expected a list, found {_shown(value)}"
            return
        for i, element in enumerate(value):
            yield from item(f"{path}[{i}]", element)

    return check


def _table(item: Spec) -> Spec:
    """An object with string keys of any name (timing, params), each value an ``item``."""

    def check(path: str, value: Any) -> Iterator[str]:
        if not isinstance(value, dict):
            yield f"{path}: expected an object, found {_shown(value)}"
            return
        for key, element in value.items():
            yield from item(f"{path}.{key}", element)

    return check


def _json(path: str, value: Any) -> Iterator[str]:
    """Any JSON value whose numbers are finite (its meaning is checked by the model)."""
    if isinstance(value, float) and not math.isfinite(value):
        yield f"{path}: {value!r} is not a finite number"
    elif isinstance(value, dict):
        for key, element in value.items():
            yield from _json(f"{path}.{key}", element)
    elif isinstance(value, list):
        for i, element in enumerate(value):
            yield from _json(f"{path}[{i}]", element)


def _shown(value: Any) -> str:
    text = json.dumps(value, allow_nan=True)
    return text if len(text) <= 40 else text[:37] + "..."


_DUAL = _record(
    {
        "by_regime": _list(_number(), nullable=True),
        "index": _list(_number(integer=True, low=0)),
        "values": _list(_number()),
        "extra": _table(_json),
    },
    nullable=True,
)
_CERTIFICATE = _record(
    {
        "certified": _boolean,
        "lower_bound": _number(nullable=True),
        "upper_bound": _number(),
        "gap": _number(nullable=True),
        "tolerance": _number(low=0.0),
        "target_gap": _number(nullable=True, low=0.0),
        "source": _string(),
        "solver_attested": _boolean,
        "dual": _DUAL,
    },
    nullable=True,
)
_HISTORY = _record(
    {
        name: _number(integer=name in ("iteration", "clusters", "impure_clusters"), nullable=True)
        for name in HISTORY_COLUMNS
    }
)
_START = _record(
    {
        name: _string() if name == "status" else _number(nullable=name != "start")
        for name in START_COLUMNS
    }
)
_RESULT = _record(
    {
        "model": _string(),
        "solver": _string(),
        "target": _string(nullable=True),
        "status": _string(choices=tuple(s.value for s in AIDStatus)),
        "message": _string(),
        "objective": _number(),
        "lower_bound": _number(nullable=True),
        "gap": _number(nullable=True),
        "iterations": _number(integer=True, low=0),
        "n": _number(integer=True, low=1),
        "m": _number(integer=True, low=0),
        "final_rate": _number(low=0.0),
        "seconds": _number(low=0.0),
        "params": _table(_json),
        "certificate": _CERTIFICATE,
        "timing": _table(_number(low=0.0)),
        "solution": _table(_json),
        "history": _list(_HISTORY),
        "starts": _list(_START),
    }
)


# ---------------------------------------------------------------------- the model
def _run_options() -> dict[str, Any]:
    from aidopt.core.driver import RUN_OPTIONS

    return {o.name: o for o in RUN_OPTIONS}


def _check_params(report: VerifyReport, payload: dict[str, Any]) -> AggregatedModel | None:
    """The model of ``params``: every key a model or run option, every value valid, and the
    model's own summary equal to what the file says."""
    from aidopt.core.registry import model as registered

    try:
        cls = registered(payload["model"])
    except AidoptError as exc:
        report.add("model", False, str(exc))
        return None
    params = payload["params"]
    names = {o.name for o in (*cls.options, *cls.cli_extras)}
    run = _run_options()
    for key, value in params.items():
        if key in names:
            continue
        if key == "start":  # which start of n_init a result is
            for problem in _number(integer=True, low=0)("params.start", value):
                report.add("params.start", False, problem.partition(": ")[2])
        elif key in run and key not in ("solver", "interface", "solver_options", "verbose"):
            try:
                run[key].check(value, "the result")
            except AidoptError as exc:
                report.add(f"params.{key}", False, str(exc))
        else:
            report.add(f"params.{key}", False, f"not an option of the {cls.name} model")
    if "tol" not in params:
        report.add("params.tol", False, "missing (the tolerance the status claims)")
    if report.rejected:
        return None
    try:
        model = cls.from_options(**{k: v for k, v in params.items() if k in names})
        model.check_params()
        summary = json.loads(json.dumps(model.summary()))
    except _ARITHMETIC as exc:
        report.add("params", False, f"the model cannot be built from them: {exc}")
        return None
    for key, value in summary.items():
        if key in params and not _same(params[key], value):
            report.add(f"params.{key}", False, f"{_shown(params[key])} is read as {_shown(value)}")
    return None if report.rejected else model


def _same(claimed: Any, recomputed: Any) -> bool:
    """Equal JSON values, numbers to the verifier's precision (ints and bools exactly)."""
    if isinstance(recomputed, bool) or isinstance(claimed, bool):
        return claimed is recomputed
    if _is_number(recomputed) and _is_number(claimed):
        if isinstance(recomputed, int) and isinstance(claimed, int):
            return claimed == recomputed
        return _close(float(claimed), float(recomputed))
    if isinstance(recomputed, dict) and isinstance(claimed, dict):
        return claimed.keys() == recomputed.keys() and all(
            _same(claimed[k], recomputed[k]) for k in recomputed
        )
    if isinstance(recomputed, list) and isinstance(claimed, list):
        return len(claimed) == len(recomputed) and all(
            _same(a, b) for a, b in zip(claimed, recomputed, strict=True)
        )
    return type(claimed) is type(recomputed) and claimed == recomputed


def _differences(path: str, claimed: Any, recomputed: Any) -> Iterator[str]:
    """Where ``claimed`` differs from ``recomputed`` (named by path)."""
    if isinstance(recomputed, dict) and isinstance(claimed, dict):
        for key in claimed.keys() - recomputed.keys():
            yield f"{path}.{key}: not a field of this model's solution"
        for key in recomputed.keys() - claimed.keys():
            yield f"{path}.{key}: missing"
        for key in recomputed.keys() & claimed.keys():
            yield from _differences(f"{path}.{key}", claimed[key], recomputed[key])
    elif not _same(claimed, recomputed):
        yield f"{path}: the file says {_shown(claimed)}, the solution gives {_shown(recomputed)}"


def _close(a: float, b: float) -> bool:
    """a and b agree to the relative precision _RTOL, at any scale (a problem whose objective
    is 1e-18 gets no absolute allowance of 1e-9)."""
    return abs(a - b) <= _RTOL * max(abs(a), abs(b))


def _finite(value: float) -> bool:
    return isinstance(value, float | int) and math.isfinite(value)


# ---------------------------------------------------------------------- the check
def verify_result(
    payload: Any,
    frame: Table,
    target: str | None = None,
    *,
    max_gap: float = DEFAULT_MAX_GAP,
    repeated_keys: tuple[str, ...] | list[str] = (),
) -> VerifyReport:
    """Re-check every claim of a ``--json`` result against the data ``frame``.

    ``max_gap``: the loosest relative gap this check accepts as the proof behind a status
    ``optimal`` or ``gap`` (the result's own tolerance is checked against its ``params.tol``
    and must not exceed it).
    """
    name = payload.get("model") if isinstance(payload, dict) else None
    report = VerifyReport(model=name if isinstance(name, str) else "?")
    for key in repeated_keys:
        report.add(key, False, "the key is repeated in the file (JSON keeps only the last)")
    for problem in _RESULT("", payload):
        where, _, what = problem.partition(": ")
        report.add(where, False, what)
    if report.rejected:
        return report
    model = _check_params(report, payload)
    if model is None:
        return report

    # the data the result is for
    column = target if target is not None else payload["target"]
    try:
        data = model.data_from_frame(frame, column)
        model.check_data(data)
    except AidoptError as exc:
        report.add("data", False, f"the result's model does not fit these data: {exc}")
        return report
    if (payload["n"], payload["m"]) != (data.n, data.m):
        report.add(
            "data",
            False,
            f"the result is for n={payload['n']}, m={payload['m']}; the data have "
            f"n={data.n}, m={data.m}",
        )
        return report

    # the solution (and the dual point), read and written back
    cert = payload["certificate"]
    raw_dual = None if cert is None else cert["dual"]
    try:
        with np.errstate(all="ignore"):
            dual = None if raw_dual is None else DualPoint.from_dict(raw_dual)
            solution = model.solution_from_dict(data, payload["solution"], dual)
            written = json.loads(json.dumps(model.solution_to_dict(data, solution)))
    except NotImplementedError:
        report.verifiable = False
        report.add("solution", True, f"the {model.name} model cannot rebuild its solution")
        return report
    except _ARITHMETIC as exc:
        report.add("solution", False, f"the solution or dual point cannot be read: {exc}")
        return report
    for problem in _differences("solution", payload["solution"], written):
        where, _, what = problem.partition(": ")
        report.add(where, False, what)
    if report.rejected:
        return report

    with np.errstate(all="ignore"):
        _check_claims(report, model, data, solution, dual, payload, max_gap)
    return report


def _check_claims(report, model, data, solution, dual, payload, max_gap) -> None:
    """Steps 3 and 4: the numbers, then the status."""
    cert = payload["certificate"]
    try:
        evaluation = model.evaluate(data, solution)
        objective = float(evaluation.objective)
        upper = objective + float(evaluation.objective_error)
    except _ARITHMETIC as exc:
        report.add("objective", False, f"cannot be evaluated at the solution: {exc}")
        return
    if not (_finite(objective) and _finite(upper)):
        report.add("objective", False, f"the solution's objective is {objective!r} on these data")
        return
    report.objective = objective
    claimed = payload["objective"]
    report.add(
        "objective",
        _close(claimed, objective),
        f"claimed {claimed!r}, recomputed {objective:.15g}",
    )
    if cert is None:
        _check_status(report, payload, None, max_gap)
        return
    report.add(
        "certificate.upper_bound",
        _close(cert["upper_bound"], upper),
        f"claimed {cert['upper_bound']!r}, recomputed E + rounding bound = {upper:.15g}",
    )
    for key in ("lower_bound", "gap"):  # the top level repeats the proven certificate
        top, inner = payload[key], cert[key]
        if top is not None and not (inner is not None and _close(top, inner)):
            report.add(key, False, f"{top!r} is not the certificate's {inner!r}")

    claimed_lower = cert["lower_bound"]
    if claimed_lower is not None and claimed_lower > upper + _RTOL * max(1.0, abs(upper)):
        report.add(
            "certificate.lower_bound",
            False,
            f"claimed {claimed_lower!r} is above the objective's upper bound {upper:.15g}",
        )
        return
    if claimed_lower is None:
        report.add("certificate.lower_bound", True, "none claimed")
        _check_status(report, payload, None, max_gap)
        return
    if cert["solver_attested"] or dual is None:
        report.verifiable = False
        report.add(
            "certificate.lower_bound",
            True,
            f"claimed {claimed_lower!r} rests on a solver ({cert['source']}); it cannot be "
            "re-checked from the data alone",
        )
        _check_status(report, payload, None, max_gap)
        return
    try:
        bound = model.lower_bound(data, solution, evaluation, upper, dual=dual)
    except _ARITHMETIC as exc:
        report.add("certificate.dual", False, f"the dual point is not feasible: {exc}")
        return
    if bound is None or not _finite(bound.value):
        report.add("certificate.dual", False, "the model proves no bound at this dual point")
        return
    report.lower_bound = bound.value
    slack = _RTOL * max(abs(bound.value), abs(upper))
    report.add(
        "certificate.lower_bound",
        claimed_lower <= bound.value + slack,
        f"claimed {claimed_lower!r}, proven {bound.value:.15g} (dual value "
        f"{bound.dual_value:.15g} less allowances {bound.allowance:.3g})",
    )
    gap = relative_gap(upper, bound.value, objective)
    report.gap = gap
    claimed_gap = cert["gap"]
    report.add(
        "certificate.gap",
        claimed_gap is not None and gap is not None and gap <= claimed_gap + _RTOL,
        f"claimed {claimed_gap!r}, recomputed {gap:.3g}",
    )
    _check_status(report, payload, gap, max_gap)


def _check_status(report, payload, gap, max_gap) -> None:
    """The status: ``optimal`` and ``gap`` are proofs, the others claim none."""
    status = AIDStatus(payload["status"])
    cert = payload["certificate"]
    tol = float(payload["params"]["tol"])
    floor = max(tol, GAP_FLOOR)
    report.status = (
        AIDStatus.GAP.value if gap is not None and gap <= min(floor, max_gap) else "not proven"
    )
    certified = cert is not None and cert["certified"]
    if certified != (status is AIDStatus.OPTIMAL):
        report.add(
            "certificate.certified",
            False,
            f"{'true' if certified else 'false'} goes with status {status.value!r} "
            "(certified means status 'optimal')",
        )
    if cert is not None and not _close(cert["tolerance"], tol):
        report.add(
            "certificate.tolerance", False, f"{cert['tolerance']!r} is not params.tol {tol!r}"
        )
    message = payload["message"]
    if status not in _PROVEN and re.search(r"(?<!not )\bcertified\b", message):
        report.add("message", False, f"claims a certificate for status {status.value!r}")
    if status not in _PROVEN:
        report.add("status", True, f"{status.value!r} claims no proof")
        return
    if gap is None:
        if report.verifiable:
            report.add("status", False, f"{status.value!r} claims a proof and no bound proves it")
        return
    target = cert["target_gap"] if status is AIDStatus.OPTIMAL else floor
    highest = max(floor, MAX_SOLVER_ACCURACY)
    if target is None or not floor - _RTOL * floor <= target <= highest:
        report.add(
            "certificate.target_gap",
            False,
            f"{target!r} is not a certifying gap for params.tol {tol:g} "
            f"(max(tol, {GAP_FLOOR:g}) up to max(tol, {MAX_SOLVER_ACCURACY:g}))",
        )
        return
    if target > max_gap:
        report.add(
            "status",
            False,
            f"{status.value!r} at a gap of {target:g} is looser than this check accepts "
            f"({max_gap:g}; `aidopt verify --max-gap` sets it)",
        )
        return
    report.add(
        "status",
        gap <= target,
        f"{status.value!r} needs a gap ≤ {target:.3g}; recomputed {gap:.3g}",
    )
    if gap <= target and status is AIDStatus.OPTIMAL:
        report.status = AIDStatus.OPTIMAL.value
