"""``aidopt verify`` is a security boundary: a tamper suite.

For each model family, a result computed here is accepted as it is (S3VM: "not verifiable",
its bound rests on a solver), and every tampered version of it is rejected with exit 1 and a
line naming what is wrong; only an unreadable file exits 2.
"""

from __future__ import annotations

import copy
import json
import math
import subprocess
import sys
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from aidopt import AIDSolver
from aidopt.cli import main
from aidopt.core.registry import model as registered
from aidopt.data.lad import make_lad
from aidopt.data.svm import make_svm
from aidopt.verify import verify_result

INSTANCES = Path(__file__).resolve().parents[1] / "instances"
Tamper = Callable[[dict], None]


def _frame(X, y=None, target="y"):
    frame = pd.DataFrame(X, columns=[f"x{j + 1}" for j in range(X.shape[1])])
    if y is not None:
        frame[target] = y
    return frame


def _blobs(n, seed):
    rng = np.random.default_rng(seed)
    centres = np.array([[3.0, 3.0], [-2.0, 4.0]])
    return centres[rng.integers(0, 2, n)] + rng.normal(scale=0.6, size=(n, 2))


def _families():
    X, y, _, _ = make_lad(500, 3, seed=11)
    yield "lad", "lad", {}, _frame(X, y), "y"
    X, y = make_svm(600, 2, seed=12)
    yield "svm", "svm", {}, _frame(X, y), "y"
    yield "svm-rbf", "svm", {"kernel": "rbf", "gamma": 0.5}, _frame(X[:300], y[:300]), "y"
    pu = pd.read_csv(INSTANCES / "pu_small.csv")
    yield "pu", "pu", {"prior": 0.35}, pu, "s"
    yield "pu-rbf", "pu", {"prior": 0.35, "kernel": "rbf"}, pu, "s"
    yield "ocsvm", "ocsvm", {}, _frame(_blobs(500, 13)), None
    yield "ocsvm-rbf", "ocsvm", {"kernel": "rbf"}, _frame(_blobs(300, 14)), None
    aid = {"kernel": "rbf", "solver": "boxqp"}  # AID on the centroid Gram (default: full dual)
    yield "ocsvm-rbf-aid", "ocsvm", aid, _frame(_blobs(300, 14)), None
    yield "svdd", "svdd", {"C": 0.05}, _frame(_blobs(300, 15)), None
    yield "s3vm", "s3vm", {}, pd.read_csv(INSTANCES / "s3vm_small.csv"), "label"


FAMILIES = {name: rest for name, *rest in _families()}


def _solve(model_name, options, frame, target, **run):
    """The JSON result of a run; ``options`` are the model's, and ``solver`` if named."""
    cls = registered(model_name)
    options = dict(options)
    if "solver" in options:
        run["solver"] = options.pop("solver")
    model = cls.from_options(**options)
    data = model.data_from_frame(frame, target)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = AIDSolver(model, tol=run.pop("tol", 1e-6), **run).solve(data)
    return json.loads(json.dumps(result.to_dict()))


@pytest.fixture(scope="module", params=list(FAMILIES))
def family(request):
    model_name, options, frame, target = FAMILIES[request.param]
    return request.param, _solve(model_name, options, frame, target), frame, target


# ---------------------------------------------------------------------- the tampers
def _set(path: str, value) -> Tamper:
    """Set the field at a dotted path (``certificate.dual.values``)."""

    def tamper(payload: dict) -> None:
        *parents, last = path.split(".")
        node = payload
        for key in parents:
            node = node[key]
        node[last] = value(node[last]) if callable(value) else value

    tamper.__name__ = f"{path}={value if not callable(value) else value.__name__}"
    return tamper


def _both(*tampers: Tamper) -> Tamper:
    def tamper(payload: dict) -> None:
        for t in tampers:
            t(payload)

    tamper.__name__ = " & ".join(t.__name__ for t in tampers)
    return tamper


def _halved(v):
    return v / 2


def _raised(v):
    return v + 1e-3 * max(1.0, abs(v))


def _lowered(v):
    return v - 1e-3 * max(1.0, abs(v))


def _first_solution_number(payload: dict) -> str:
    """The dotted path of the solution's first number (a coefficient, b, a radius)."""
    solution = payload["solution"]
    for key in ("coef", "w"):
        if isinstance(solution.get(key), dict):
            return f"solution.{key}.{next(iter(solution[key]))}"
    for key in ("b", "radius_sq", "share_inside"):
        if key in solution:
            return f"solution.{key}"
    raise AssertionError(f"no number in {sorted(solution)}")


def _tampers(payload: dict) -> list[Tamper]:
    """Every forgery of the issue, and more: each must be rejected."""
    model_option = next(
        k for k in payload["params"] if k not in ("tol", "max_iter", "time_limit", "rate")
    )
    number = _first_solution_number(payload)
    tampers = [
        _set("objective", math.inf),
        _both(_set("objective", math.inf), _set("certificate.upper_bound", math.inf)),
        _set("objective", math.nan),
        _set("objective", _lowered),
        _set("objective", "1.0"),
        _set("certificate.upper_bound", _lowered),
        _set("status", "proven"),
        _set("status", "time_limit"),  # certified: true no longer goes with the status
        _both(_set("status", "time_limit"), _set("certificate.certified", False))
        if payload["certificate"]["certified"]
        else _set("certificate.certified", True),
        _both(  # a message that claims what the status does not
            _set("status", "time_limit"),
            _set("certificate.certified", False),
            _set("message", "time limit reached, but certified"),
        ),
        _set("params.tol", "abc"),
        _set(f"params.{model_option}", "abc"),
        _set("params.proof", True),
        _set("proof", "trust me"),
        _set("n", lambda n: n + 1),
        _set("m", True),
        _set("solution.extra", 1.0),
        _set(number, lambda v: v + 0.5),
        _set(number, math.nan),
        _set("history", [{"iteration": 1}]),
        _set("timing.solve", -1.0),
    ]
    for key in ("certificate", "solution", "params"):
        tampers.append(_drop(key))
    if payload["certificate"]["lower_bound"] is not None:
        tampers.append(_set("lower_bound", 1e9))
        tampers.append(_set("certificate.lower_bound", lambda v: v + 0.1 * max(1.0, abs(v))))
        tampers.append(_set("certificate.lower_bound", math.inf))
    if payload["certificate"]["dual"] is not None:
        n = payload["n"]
        tampers += [
            _set("certificate.dual", [1, 2]),
            _set("certificate.dual.values", lambda v: [1e300] * len(v)),
            _set("certificate.dual.index", lambda v: [n + 5] * len(v)),
            _set("certificate.dual.index", lambda v: [-1] * len(v)),
            _set("certificate.dual.values", lambda v: [*v, 1.0]),
            _set("certificate.dual.extra", "x"),
            _set("certificate.gap", lambda v: v / 10 - 1e-3),
            _both(  # a tolerance taken on trust: target 1.0, gap 0.5
                _set("certificate.target_gap", 1.0),
                _set("certificate.gap", 0.5),
                _set("gap", 0.5),
                _set("status", "optimal"),
                _set("certificate.certified", True),
            ),
            _both(  # a loose tolerance claimed as optimal
                _set("params.tol", 0.5),
                _set("certificate.tolerance", 0.5),
                _set("certificate.target_gap", 0.5),
                _set("status", "optimal"),
                _set("certificate.certified", True),
            ),
            _set("certificate.tolerance", 0.25),
        ]
    solution = payload["solution"]
    if "kernel" in solution:
        tampers += [
            _set("solution.kernel.gamma", math.nan),
            _set("solution.kernel.gamma", 1e300),
            _set("solution.kernel.gamma", "abc"),
            _set("solution.kernel.kind", "linear"),
        ]
    if "radius_sq" in solution:
        tampers.append(_set("solution.radius_sq", _halved))
    if "labels" in solution and isinstance(solution["labels"], list):
        tampers.append(_set("solution.labels", lambda v: [-x for x in v]))
    return tampers


def _drop(key: str) -> Tamper:
    def tamper(payload: dict) -> None:
        del payload[key]

    tamper.__name__ = f"del {key}"
    return tamper


# ---------------------------------------------------------------------- the tests
def test_the_untampered_result_is_accepted(family):
    name, payload, frame, target = family
    report = verify_result(payload, frame, target)
    if name == "s3vm":  # the bound rests on the MIQP solver
        assert not report.accepted and not report.rejected, report.to_text()
        assert report.objective == pytest.approx(payload["objective"], rel=1e-12)
    else:
        assert payload["status"] in ("optimal", "gap"), payload["message"]
        assert report.accepted, report.to_text()
        assert report.gap is not None and report.gap <= 1e-6


def test_every_tampered_result_is_rejected(family):
    _name, payload, frame, target = family
    tampers = _tampers(payload)
    assert len(tampers) >= 15
    accepted = []
    for tamper in tampers:
        bad = copy.deepcopy(payload)
        tamper(bad)
        report = verify_result(bad, frame, target)
        if not report.rejected:
            accepted.append(f"{tamper.__name__}: {report.to_text()}")
    assert not accepted, "\n".join(accepted)


def test_a_result_without_a_columns_coefficient_is_rejected_naming_it(family):
    """A solution that lost a column's coefficient (or whose coefficients are not numbers):
    rejected, and the report names the column (not a bare KeyError)."""
    _name, payload, frame, target = family
    solution = payload["solution"]
    key = next((k for k in ("coef", "w") if isinstance(solution.get(k), dict)), None)
    if key is None:
        pytest.skip("a kernel solution: no coefficient per column")
    column = next(iter(solution[key]))
    lost = copy.deepcopy(payload)
    del lost["solution"][key][column]
    report = verify_result(lost, frame, target)
    assert report.rejected and f"['{column}']" in report.to_text(), report.to_text()
    garbled = copy.deepcopy(payload)
    garbled["solution"][key] = [1.0, 2.0]
    report = verify_result(garbled, frame, target)
    assert report.rejected and "mapping from column names" in report.to_text(), report.to_text()


def test_an_uncertified_result_relabelled_optimal_is_rejected(family):
    """A run stopped early, then relabelled: status optimal and certified true."""
    name, _payload, frame, target = family
    if name == "s3vm":
        pytest.skip("the S3VM bound is solver-attested: never accepted")
    model_name, options, frame, target = FAMILIES[name]
    early = _solve(model_name, options, frame, target, tol=0.0, max_iter=1)
    assert verify_result(early, frame, target).accepted  # an honest early stop is accepted
    if early["status"] == "optimal":
        pytest.skip("certified in one iteration")
    early["status"], early["certificate"]["certified"] = "optimal", True
    report = verify_result(early, frame, target)
    assert report.rejected, report.to_text()


def test_the_command_line_exits_1_on_a_forgery_and_names_the_field(family, tmp_path):
    name, payload, frame, _target = family
    data = tmp_path / "data.csv"
    frame.to_csv(data, index=False)
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text(json.dumps(payload))
    forged = copy.deepcopy(payload)
    forged["objective"] = math.inf
    bad.write_text(json.dumps(forged))  # json writes Infinity
    expected = 1 if name == "s3vm" else 0
    assert main(["verify", str(good), "--data", str(data), "--quiet"]) == expected
    assert main(["verify", str(bad), "--data", str(data), "--quiet"]) == 1


def test_verify_through_the_installed_script(tmp_path):
    """The console script: accepted 0, a repeated key 1 (named), not JSON 2."""
    model_name, options, frame, target = FAMILIES["lad"]
    payload = _solve(model_name, options, frame, target)
    data = tmp_path / "lad.csv"
    frame.to_csv(data, index=False)
    good = tmp_path / "good.json"
    good.write_text(json.dumps(payload))
    text = json.dumps(payload)
    repeated = tmp_path / "repeated.json"  # a second "objective" that a reader would not see
    repeated.write_text(text[:-1] + ', "objective": 1.0}')
    broken = tmp_path / "broken.json"
    broken.write_text(text[:100])
    script = [str(Path(sys.executable).parent / "aidopt"), "verify"]

    def run(path):
        return subprocess.run(
            [*script, str(path), "--data", str(data)], capture_output=True, text=True, timeout=120
        )

    ok = run(good)
    assert ok.returncode == 0 and "ACCEPTED" in ok.stdout, ok.stderr
    twice = run(repeated)
    assert twice.returncode == 1 and "objective" in twice.stdout, twice.stdout
    assert "repeated" in twice.stdout
    unreadable = run(broken)
    assert unreadable.returncode == 2
    assert unreadable.stderr.startswith("aidopt: error:") and unreadable.stdout == ""


def test_a_loose_tolerance_needs_the_verifier_to_allow_it(tmp_path):
    """An honest result at tol 1e-2 is a proof at 1e-2: accepted only with --max-gap 1e-2."""
    model_name, options, frame, target = FAMILIES["svm"]
    payload = _solve(model_name, options, frame, target, tol=1e-2)
    assert payload["status"] in ("optimal", "gap")
    strict = verify_result(payload, frame, target)
    assert strict.rejected and "--max-gap" in strict.to_text()
    assert verify_result(payload, frame, target, max_gap=1e-2).accepted
