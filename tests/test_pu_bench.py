"""`aidopt bench pu`: a tiny scaling grid in chunks (--append), and one cell of Table III
(`--part tables`)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pandas as pd
import pytest

from aidopt.cli import main

UCI = Path(__file__).resolve().parents[2] / "shared" / "data" / "pu-uci"
HAS_GUROBI = importlib.util.find_spec("gurobipy") is not None


def test_scaling_chunks_append(tmp_path) -> None:
    """The scaling study is the spec (the generic harness; `--part scaling`, `--kernels`: the
    old spellings of the default and of `--workloads`): pu_runs.csv and pu_summary.md."""
    argv = ["bench", "pu", "--part", "scaling", "--kernels", "linear", "--sizes-linear", "400"]
    argv += ["--time-limit", "60", "--append", "--out", str(tmp_path)]
    assert main([*argv, "--methods", "full-clarabel,usmo,aid-usmo"]) == 0
    methods = "full-gurobi" if HAS_GUROBI else "aid-highs"
    assert main([*argv, "--methods", methods]) == 0
    runs = pd.read_csv(tmp_path / "pu_runs.csv")
    assert runs.method.tolist() == ["full-clarabel", "usmo", "aid-usmo", methods]
    ok = runs[runs.status == "optimal"].set_index("method")
    reference = ok.loc["full-clarabel", "objective"]
    for method in ("usmo", "aid-usmo"):
        assert ok.loc[method, "objective"] == pytest.approx(reference, rel=1e-6)
        assert ok.loc[method, "peak_mb"] > 0
    if HAS_GUROBI:  # 400 rows: the full QP is over the pip licence's 200 variables
        assert runs.status.iloc[-1] == "solver_limit"
    table = (tmp_path / "pu_summary.md").read_text()
    assert table.count("| linear | 400 |") == 4  # the markdown is rebuilt from all chunks
    assert (tmp_path / "pu_scaling.png").stat().st_size > 0


@pytest.mark.skipif(not UCI.is_dir(), reason=f"{UCI} not present")
def test_tables_one_cell(tmp_path) -> None:
    argv = ["bench", "pu", "--part", "tables", "--datasets", "heart", "--kernels", "linear"]
    argv += ["--lambdas", "0.1", "--repeats", "1", "--out", str(tmp_path)]
    assert main(argv) == 0
    runs = pd.read_csv(tmp_path / "pu_tables.csv")
    assert set(runs.method) == {"full-clarabel", "usmo", "aid-usmo"}
    assert (runs.status == "optimal").all()
    # heart, linear, λ = 0.1: the paper's constant classifier, 75.6 for every method
    assert runs.f1_paper.round(1).tolist() == [75.6, 75.6, 75.6]
    assert (
        "| heart | 0.1 | 75.6 | 75.6 | 75.6 | 75.6 | 75.6 |"
        in (tmp_path / "pu_tables.md").read_text()
    )
