"""``aidopt verify``: re-check a saved result's certificate from the data alone, with no solver.

A ``--json`` result carries the solution and a certificate (lower bound, upper bound, gap and the
dual point that proves the lower bound, see :mod:`aidopt.certificate`). Verifying it means, on
the original data and with the model's own formulas only:

1. the objective E of the stated solution is recomputed; the claimed objective and upper bound
   must equal it (a tampered solution or objective is rejected);
2. the dual point is checked for feasibility (its box) and its dual value, less the residual and
   rounding allowances, is recomputed: the claimed lower bound must not exceed it;
3. the gap (E − L)/|E| from the recomputed values must not exceed the claimed gap, and, for a
   certified result, must be within the gap that certified it.

A bound that rests on a solver (S3VM: the optimum of a MIQP relaxation) cannot be re-checked
without one; such a result is reported as not verifiable, never as verified.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from aidopt.certificate import DualPoint, relative_gap
from aidopt.contract import AggregatedModel
from aidopt.data.io import Table
from aidopt.exceptions import DataError

__all__ = ["VerifyReport", "model_from_result", "verify_result"]

_RTOL = 1e-9  # recomputed and claimed numbers must agree to this (relative) precision


@dataclass
class VerifyReport:
    """The outcome: ``accepted`` only when every claim was re-checked and holds."""

    model: str
    checks: list[tuple[str, bool, str]] = field(default_factory=list)
    verifiable: bool = True
    objective: float | None = None
    lower_bound: float | None = None
    gap: float | None = None

    @property
    def accepted(self) -> bool:
        return self.verifiable and all(ok for _, ok, _ in self.checks)

    def add(self, name: str, ok: bool, detail: str) -> None:
        self.checks.append((name, bool(ok), detail))

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "accepted": self.accepted,
            "verifiable": self.verifiable,
            "objective": self.objective,
            "lower_bound": self.lower_bound,
            "gap": self.gap,
            "checks": [{"check": n, "ok": ok, "detail": d} for n, ok, d in self.checks],
        }

    def to_text(self) -> str:
        verdict = (
            "ACCEPTED: the certificate holds on the data"
            if self.accepted
            else (
                "NOT VERIFIABLE from the data alone"
                if not self.verifiable and all(ok for _, ok, _ in self.checks)
                else "REJECTED"
            )
        )
        lines = [f"aidopt verify ({self.model}): {verdict}"]
        lines += [
            f"  [{'ok' if ok else 'FAIL'}] {name}: {detail}" for name, ok, detail in self.checks
        ]
        return "\n".join(lines)


def model_from_result(payload: dict[str, Any]) -> AggregatedModel:
    """The model a result was computed with: the registered model ``payload["model"]`` built
    from the result's ``params`` (its declared options and command-line variants)."""
    from aidopt.registry import model

    cls = model(str(payload.get("model")))
    params = dict(payload.get("params") or {})
    names = {o.name for o in (*cls.options, *cls.cli_extras)}
    return cls.from_options(**{k: v for k, v in params.items() if k in names})


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= _RTOL * max(1.0, abs(a), abs(b))


def verify_result(payload: dict[str, Any], frame: Table, target: str | None = None) -> VerifyReport:
    """Re-check the certificate of a ``--json`` result against the data ``frame``."""
    if not isinstance(payload, dict) or "model" not in payload:
        raise DataError("The result file is not an aidopt --json result (no 'model' key).")
    model = model_from_result(payload)
    report = VerifyReport(model=str(payload["model"]))
    target = target if target is not None else payload.get("target")
    data = model.data_from_frame(frame, target)
    if (payload.get("n"), payload.get("m")) != (data.n, data.m):
        report.add(
            "data",
            False,
            f"the result is for n={payload.get('n')}, m={payload.get('m')}; the data have "
            f"n={data.n}, m={data.m}",
        )
        return report
    cert = payload.get("certificate")
    if not isinstance(cert, dict):
        report.verifiable = False
        report.add("certificate", True, "the result carries no certificate")
        return report
    try:
        dual = None if cert.get("dual") is None else DualPoint.from_dict(cert["dual"])
        solution = model.solution_from_dict(data, payload["solution"], dual)
    except (KeyError, TypeError, ValueError) as exc:
        report.add("solution", False, f"the solution or dual point cannot be read: {exc}")
        return report

    # 1. the upper bound: E of the stated solution, on the data
    evaluation = model.evaluate(data, solution)
    upper = evaluation.objective + evaluation.objective_error
    report.objective = evaluation.objective
    claimed = payload.get("objective")
    report.add(
        "objective",
        isinstance(claimed, int | float) and _close(float(claimed), evaluation.objective),
        f"claimed {claimed!r}, recomputed {evaluation.objective:.15g}",
    )
    claimed_upper = cert.get("upper_bound")
    report.add(
        "upper bound",
        isinstance(claimed_upper, int | float) and _close(float(claimed_upper), upper),
        f"claimed {claimed_upper!r}, recomputed E + rounding bound = {upper:.15g}",
    )

    # 2. the lower bound at the stated dual point
    claimed_lower = cert.get("lower_bound")
    if claimed_lower is None:
        report.add("lower bound", True, "none claimed")
        return report
    if cert.get("solver_attested") or dual is None:
        report.verifiable = False
        report.add(
            "lower bound",
            True,
            f"claimed {claimed_lower!r} rests on a solver ({cert.get('source')}); it cannot be "
            "re-checked from the data alone",
        )
        return report
    try:
        bound = model.lower_bound(data, solution, evaluation, upper, dual=dual)
    except ValueError as exc:
        report.add("lower bound", False, f"the dual point is not feasible: {exc}")
        return report
    if bound is None:
        report.add("lower bound", False, "the model proves no bound at this dual point")
        return report
    report.lower_bound = bound.value
    ok = float(claimed_lower) <= bound.value + _RTOL * max(1.0, abs(bound.value))
    report.add(
        "lower bound",
        ok,
        f"claimed {claimed_lower!r}, proven {bound.value:.15g} (dual value {bound.dual_value:.15g}"
        f" less allowances {bound.allowance:.3g})",
    )

    # 3. the gap
    gap = relative_gap(upper, bound.value, evaluation.objective)
    report.gap = gap
    claimed_gap = cert.get("gap")
    report.add(
        "gap",
        isinstance(claimed_gap, int | float) and gap <= float(claimed_gap) + _RTOL,
        f"claimed {claimed_gap!r}, recomputed {gap:.3g}",
    )
    if cert.get("certified"):
        target_gap = cert.get("target_gap")
        within = isinstance(target_gap, int | float) and gap <= float(target_gap) + _RTOL
        report.add(
            "certified",
            within and math.isfinite(gap),
            f"recomputed gap {gap:.3g} against the certifying gap {target_gap!r}",
        )
    return report
