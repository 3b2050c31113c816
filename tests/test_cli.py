"""The command line: JSON output, generation, demo, and named errors with a non-zero exit."""

import json
import shutil
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from aidopt.cli import main

FIELDS = (
    "model",
    "solver",
    "status",
    "objective",
    "lower_bound",
    "gap",
    "iterations",
    "n",
    "m",
    "final_rate",
    "seconds",
    "solution",
    "history",
)
HISTORY_KEYS = {
    "iteration",
    "clusters",
    "rate",
    "lower_bound",
    "upper_bound",
    "best_upper_bound",
    "gap",
    "impure_clusters",
    "solve_seconds",
    "pass_seconds",
}


@pytest.fixture
def lad_csv(tmp_path):
    path = tmp_path / "lad.csv"
    assert (
        main(["generate", "lad", "--n", "3000", "--m", "4", "--seed", "1", "--out", str(path)]) == 0
    )
    return path


def run_json(capsys, argv):
    code = main(argv)
    out = capsys.readouterr().out
    assert code == 0
    return json.loads(out)


def test_solve_lad_json_has_every_field(lad_csv, capsys):
    payload = run_json(
        capsys, ["solve", "lad", "--data", str(lad_csv), "--target", "y", "--tol", "0", "--json"]
    )
    for key in FIELDS:
        assert key in payload, key
    assert payload["status"] == "optimal"
    assert payload["n"] == 3000 and payload["m"] == 4
    assert set(payload["solution"]["coef"]) == {"x1", "x2", "x3", "x4"}
    assert isinstance(payload["solution"]["intercept"], float)
    assert payload["history"] and set(payload["history"][0]) == HISTORY_KEYS
    assert payload["lower_bound"] == pytest.approx(payload["objective"], rel=1e-9)
    full = run_json(
        capsys, ["solve", "lad", "--data", str(lad_csv), "--target", "y", "--full", "--json"]
    )
    assert full["objective"] == pytest.approx(payload["objective"], rel=1e-7)
    no_b = run_json(
        capsys,
        ["solve", "lad", "--data", str(lad_csv), "--target", "y", "--no-intercept", "--json"],
    )
    assert no_b["solution"]["intercept"] == 0.0


def test_readable_output_and_plot(lad_csv, tmp_path, capsys):
    plot = tmp_path / "conv.png"
    assert main(["solve", "lad", "--data", str(lad_csv), "--target", "y", "--plot", str(plot)]) == 0
    out = capsys.readouterr()
    assert "status      " in out.out and "coef:" in out.out
    assert "Lower bound" in out.err  # the live iteration table
    assert plot.stat().st_size > 0


@pytest.mark.parametrize(
    ("frame", "target", "match"),
    [
        (pd.DataFrame({"a": [1.0, np.nan, 3.0], "y": [1.0, 2.0, 3.0]}), "y", "NaN"),
        (pd.DataFrame({"a": [1.0, np.inf, 3.0], "y": [1.0, 2.0, 3.0]}), "y", "inf"),
        (pd.DataFrame({"a": ["u", "v", "w"], "y": [1.0, 2.0, 3.0]}), "y", "Non-numeric"),
        (pd.DataFrame({"a": [1.0, 2.0, 3.0], "y": [1.0, 2.0, 3.0]}), "z", "'z' not found"),
        (pd.DataFrame({"a": [1.0], "b": [2.0], "y": [1.0]}), "y", "Fewer rows"),
        (pd.DataFrame({"a": [], "y": []}), "y", "no rows"),
    ],
)
def test_bad_input_exits_nonzero_with_a_named_error(tmp_path, capsys, frame, target, match):
    path = tmp_path / "bad.csv"
    frame.to_csv(path, index=False)
    code = main(["solve", "lad", "--data", str(path), "--target", target, "--json"])
    err = capsys.readouterr().err
    assert code != 0
    assert "aidopt: error:" in err and match in err
    assert "Traceback" not in err


def test_missing_file_and_unknown_solver(tmp_path, lad_csv, capsys):
    assert main(["solve", "lad", "--data", str(tmp_path / "none.csv"), "--target", "y"]) != 0
    assert "not found" in capsys.readouterr().err
    assert (
        main(["solve", "lad", "--data", str(lad_csv), "--target", "y", "--solver", "nosuchsolver"])
        != 0
    )
    assert "nosuchsolver" in capsys.readouterr().err


def test_demo_certifies_and_matches_the_full_lp(capsys):
    assert main(["demo"]) == 0
    assert "relative difference" in capsys.readouterr().out


@pytest.mark.skipif(shutil.which("aidopt") is None, reason="console script not installed")
def test_console_script_entry_point(lad_csv, tmp_path):
    out = subprocess.run(
        ["aidopt", "solve", "lad", "--data", str(lad_csv), "--target", "y", "--json"],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    )
    assert json.loads(out.stdout)["model"] == "lad"
    version = subprocess.run(
        [sys.executable, "-m", "aidopt.cli", "--version"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert "aidopt" in version.stdout


def test_solvers_lists_every_model_with_its_default(capsys):
    from aidopt.cli import MODEL_MODULES

    assert main(["solvers"]) == 0
    out = capsys.readouterr().out
    assert "highs    available" in out
    for name in MODEL_MODULES:
        (line,) = [row for row in out.splitlines() if row.startswith(f"model {name}:")]
        assert "default " in line and "built in" not in line
    assert "model cuts3vm: also active-set; default active-set" in out
