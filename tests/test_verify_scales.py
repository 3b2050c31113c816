"""An honest result is accepted by ``aidopt verify`` at every scale (found by a sweep of every
model over features × 1e-9 … 1e9): the best bound's dual point is written at the reported
solution's regimes (it may come from another iteration), a model's objective is that of the
solution it reports (PU's ‖w‖² is w·w, not the solver's cancelling form), and the checker's
tolerances are relative at every scale."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from aidopt.core.certificate import DualPoint


def test_a_dual_point_rebased_to_other_regimes_is_the_same_point():
    rng = np.random.default_rng(0)
    first, second = rng.integers(0, 3, 50), rng.integers(0, 3, 50)
    table = (0.0, 0.5, 1.0)
    u = np.asarray(table)[first]
    u[:5] = rng.random(5)
    point = DualPoint.compress(u, first, table)
    moved = point.rebased(second)
    np.testing.assert_array_equal(moved.expand(50, second), u)
    assert point.rebased(first) is point
    again = DualPoint.from_dict(json.loads(json.dumps(moved.to_dict())))
    np.testing.assert_array_equal(again.expand(50, second), u)


def _data(kind: str, scale: float) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    n = 2000
    X = rng.normal(size=(n, 3))
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=n) > 0, 1, -1)
    s = ((y > 0) & (rng.random(n) < 0.3)).astype(int)
    frame = pd.DataFrame(X * scale, columns=["x1", "x2", "x3"])
    return frame.assign(s=s) if kind == "pu" else frame


@pytest.mark.parametrize(
    ("argv", "kind", "scale"),
    [
        (["ocsvm"], "one", 1e3),
        (["ocsvm"], "one", 1e9),
        (["pu", "--target", "s", "--prior", "0.4"], "pu", 1e9),
    ],
)
def test_verify_accepts_the_honest_answer(tmp_path, argv, kind, scale):
    _data(kind, scale).to_csv(tmp_path / "d.csv", index=False)
    script = str(Path(sys.executable).parent / "aidopt")
    solve = [script, "solve", argv[0], "--data", "d.csv", *argv[1:], "--time-limit", "30"]
    solved = subprocess.run(
        [*solve, "--json"], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert solved.returncode == 0, solved.stderr
    (tmp_path / "r.json").write_text(solved.stdout)
    checked = subprocess.run(
        [script, "verify", "r.json", "--data", "d.csv"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert checked.returncode == 0, checked.stdout
