"""``aidopt show``: the teacher's view of one iteration. The exported aggregated problem, solved
by HiGHS from the file alone, has that iteration's aggregated objective F^t; the picture is
drawn for 2-D data; what cannot be shown is a one-line error."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from aidopt.data.svm import make_svm
from aidopt.models.lad import LADData, LADModel
from aidopt.show import show_iteration

AIDOPT = str(Path(sys.executable).parent / "aidopt")


def _highs_objective(path: Path) -> float:
    import highspy

    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    assert h.readModel(str(path)) == highspy.HighsStatus.kOk
    h.run()
    assert h.getModelStatus() == highspy.HighsModelStatus.kOptimal
    return h.getInfo().objective_function_value


def _lad_file(path: Path) -> None:
    rng = np.random.default_rng(0)
    x = rng.uniform(-3, 3, 400)
    pd.DataFrame({"x": x, "y": 1.5 * x + 0.5 + rng.laplace(scale=0.8, size=400)}).to_csv(
        path, index=False
    )


@pytest.mark.parametrize("suffix", [".lp", ".mps"])
def test_an_exported_lad_iteration_solved_from_the_file_gives_its_objective(tmp_path, suffix):
    data_file = tmp_path / "lad.csv"
    _lad_file(data_file)
    frame = pd.read_csv(data_file)
    data = LADData.from_arrays(frame[["x"]].to_numpy(), frame["y"].to_numpy())
    view = show_iteration(LADModel(), data, iteration=2, rate=0.01)
    assert view.record.iteration == 2 and view.record.impure_clusters > 0
    exported = view.export(tmp_path / f"iteration2{suffix}")
    objective = _highs_objective(exported)
    assert objective == pytest.approx(view.record.aggregated_objective, rel=1e-9)
    text = view.algebra()
    assert "iteration 2" in text and "minimize" in text and "subject to" in text
    assert text.count("\n") > view.record.clusters  # a line per constraint


def test_the_command_line_prints_exports_and_draws_an_svm_iteration(tmp_path):
    X, y = make_svm(600, 2, seed=1)
    data_file = tmp_path / "svm.csv"
    pd.DataFrame(X, columns=["x1", "x2"]).assign(y=y).to_csv(data_file, index=False)
    mps, png = tmp_path / "it2.mps", tmp_path / "it2.png"
    out = subprocess.run(
        [AIDOPT, "show", "svm", "--data", str(data_file), "--target", "y", "--iteration", "2",
         "--rate", "0.01", "--export", str(mps), "--plot", str(png), "--quiet"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("Aggregated svm problem of iteration 2")
    F = float(out.stdout.split("F^t = ")[1].split(";")[0])
    assert _highs_objective(mps) == pytest.approx(F, rel=1e-7)  # a QP: HiGHS's tolerance
    assert png.stat().st_size > 10_000


def test_what_cannot_be_shown_is_one_error_line(tmp_path):
    rng = np.random.default_rng(1)
    three = tmp_path / "three.csv"
    pd.DataFrame(rng.normal(size=(200, 3)), columns=["a", "b", "c"]).assign(
        y=rng.normal(size=200)
    ).to_csv(three, index=False)
    base = [AIDOPT, "show", "lad", "--data", str(three), "--target", "y", "--quiet"]
    picture = subprocess.run([*base, "--plot", str(tmp_path / "p.png")], capture_output=True,
                             text=True, timeout=120)  # fmt: skip
    assert picture.returncode == 2 and "needs two features" in picture.stderr
    late = subprocess.run([*base, "--iteration", "50"], capture_output=True, text=True, timeout=120)
    assert late.returncode == 2 and "there is no iteration 50" in late.stderr
