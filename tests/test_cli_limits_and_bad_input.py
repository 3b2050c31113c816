"""The installed console script at its edges: time limits on every path, and extreme data.

``--time-limit 3`` returns within 6 s (status ``time_limit`` or one ``aidopt: error:`` line),
also where a step cannot be interrupted (a dense factorisation, a full LP of 10^6 rows, an
S3VM search); data with 1e300 cells, all features ×1e300, a NaN or a constant column give one
error line with exit 2, or an answer whose proof ``aidopt verify`` re-checks.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from aidopt.data.lad import make_lad
from aidopt.data.svm import make_svm

AIDOPT = str(Path(sys.executable).parent / "aidopt")


def _run(*argv: str, timeout: float = 120) -> tuple[subprocess.CompletedProcess, float]:
    start = time.perf_counter()
    out = subprocess.run([AIDOPT, *argv], capture_output=True, text=True, timeout=timeout)
    return out, time.perf_counter() - start


def _limited(out: subprocess.CompletedProcess) -> None:
    """Stopped by the limit: a time_limit result, or exactly one error line naming it."""
    if out.returncode == 0:
        assert json.loads(out.stdout)["status"] == "time_limit", out.stdout[:300]
    else:
        assert out.returncode == 2 and out.stdout == ""
        errors = [line for line in out.stderr.splitlines() if line.startswith("aidopt: error:")]
        assert len(errors) == 1 and "time limit" in errors[0], out.stderr[-500:]


# ---------------------------------------------------------------------- time limits
def test_kernel_svm_full_solve_holds_the_time_limit(tmp_path):
    """The HiGHS route factorises the 5,000 × 5,000 Gram (~15 s) and HiGHS overruns its own
    limit; the default route (libsvm) certifies the same problem within the limit."""
    X, y = make_svm(5000, 10, seed=3)
    path = tmp_path / "svm.csv"
    pd.DataFrame(X).add_prefix("x").assign(y=y).to_csv(path, index=False)
    argv = ["solve", "svm", "--kernel", "rbf", "--full", "--data", str(path), "--target", "y"]
    out, seconds = _run(*argv, "--solver", "highs", "--time-limit", "3", "--json")
    assert seconds < 6.0, out.stderr[-500:]
    _limited(out)
    out, _ = _run(*argv, "--time-limit", "60", "--json")
    assert out.returncode == 0 and json.loads(out.stdout)["status"] == "optimal", out.stderr


def test_lad_full_lp_on_a_million_rows_holds_the_time_limit(tmp_path):
    X, y, _, _ = make_lad(1_000_000, 5, seed=1)
    path = tmp_path / "lad.parquet"
    pd.DataFrame(X).add_prefix("x").assign(y=y).to_parquet(path)
    out, seconds = _run(
        "solve", "lad", "--solver", "highs", "--full", "--data", str(path), "--target", "y",
        "--time-limit", "3", "--json",
    )  # fmt: skip
    assert seconds < 6.0, out.stderr[-500:]
    _limited(out)


def _long_s3vm(path: Path) -> None:
    """100 rows, 20 labeled: the default search needs ~20-30 s without a limit."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(100, 3))
    y = np.where(X[:, 0] + X[:, 1] + 0.8 * rng.normal(size=100) > 0, "pos", "neg")
    label = np.full(100, "", dtype=object)
    chosen = rng.choice(100, 20, replace=False)
    label[chosen] = y[chosen]
    pd.DataFrame(X).add_prefix("x").assign(label=label).to_csv(path, index=False)


def test_default_s3vm_holds_the_time_limit_and_warns_before_a_long_search(tmp_path):
    path = tmp_path / "s3vm.csv"
    _long_s3vm(path)
    out, seconds = _run(
        "solve", "s3vm", "--data", str(path), "--target", "label", "--time-limit", "3", "--json"
    )
    assert seconds < 6.0, out.stderr[-500:]
    _limited(out)
    quiet_about_it = _run("solve", "s3vm", "--data", str(path), "--target", "label",
                          "--time-limit", "1")[0]  # fmt: skip
    assert "no time limit is set" not in quiet_about_it.stderr


@pytest.mark.slow
def test_default_s3vm_without_a_limit_says_so_and_shows_progress(tmp_path):
    path = tmp_path / "s3vm.csv"
    _long_s3vm(path)
    out, _ = _run("solve", "s3vm", "--data", str(path), "--target", "label", timeout=600)
    assert out.returncode == 0
    assert "no time limit is set" in out.stderr
    assert "  bnb " in out.stderr and "nodes" in out.stderr  # the search's progress lines


# ---------------------------------------------------------------------- extreme data
def _frames(kind: str) -> dict[str, pd.DataFrame]:
    rng = np.random.default_rng(0)
    n = 240
    X = rng.normal(size=(n, 3))
    if kind == "cell 1e300":
        X[5, 1] = 1e300
    elif kind == "all x1e300":
        X = X * 1e300
    elif kind == "NaN":
        X[5, 1] = np.nan
    elif kind == "constant column":
        X[:, 2] = 4.0
    features = pd.DataFrame(X, columns=["x1", "x2", "x3"])
    clean = rng.normal(size=(n, 3))
    y_class = np.where(clean[:, 0] + 0.5 * rng.normal(size=n) > 0, 1, -1)
    label = np.where(rng.random(n) < 0.2, np.where(y_class > 0, "pos", "neg"), "")
    return {
        "regression": features.assign(y=clean @ [1.0, 2.0, 3.0] + rng.laplace(size=n)),
        "classes": features.assign(y=y_class),
        "pu": features.assign(s=((y_class > 0) & (rng.random(n) < 0.3)).astype(int)),
        "semi": features.assign(label=label),
        "one": features,
    }


MODELS = {
    "lad": ("regression", ["lad", "--target", "y"]),
    "svm": ("classes", ["svm", "--target", "y"]),
    "svm-rbf": ("classes", ["svm", "--kernel", "rbf", "--target", "y"]),
    "ocsvm": ("one", ["ocsvm"]),
    "ocsvm-rbf": ("one", ["ocsvm", "--kernel", "rbf"]),
    "svdd": ("one", ["svdd", "--C", "0.05"]),
    "pu": ("pu", ["pu", "--target", "s", "--prior", "0.4"]),
    "pu-rbf": ("pu", ["pu", "--kernel", "rbf", "--target", "s", "--prior", "0.4"]),
    "s3vm": ("semi", ["s3vm", "--target", "label"]),
}
KINDS = ("cell 1e300", "all x1e300", "NaN", "constant column")


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", list(MODELS))
def test_extreme_data_give_one_error_line_or_a_checked_answer(name, kind, tmp_path):
    which, argv = MODELS[name]
    path = tmp_path / "data.csv"
    _frames(kind)[which].to_csv(path, index=False)
    model, *flags = argv
    out, _ = _run("solve", model, "--data", str(path), *flags, "--time-limit", "20", "--json")
    assert "unexpected" not in out.stderr and "Traceback" not in out.stderr, out.stderr[-800:]
    if out.returncode != 0:
        assert out.returncode == 2 and out.stdout == ""
        errors = [line for line in out.stderr.splitlines() if line.startswith("aidopt: error:")]
        assert len(errors) == 1, out.stderr[-800:]
        assert kind != "constant column", errors[0]  # a constant column is legal data
        return
    result = json.loads(out.stdout)
    assert kind == "constant column", result["status"]  # the others are refused
    assert all(np.isfinite(v) for v in (result["objective"],) if v is not None)
    if result["status"] in ("optimal", "gap") and name != "s3vm":
        saved = tmp_path / "result.json"
        saved.write_text(out.stdout)
        check, _ = _run("verify", str(saved), "--data", str(path))
        assert check.returncode == 0, check.stdout
