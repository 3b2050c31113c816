"""The generic benchmark harness (`aidopt bench MODEL`): a tiny LAD spec end to end, the ratios
and the summary on a hand-made runs table, the library baselines, and `--part` hand-over."""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from aidopt.bench import harness, libraries
from aidopt.bench.common import parse_row_sizes
from aidopt.bench.lad import instance as lad_instance
from aidopt.bench.spec import BenchSpec, Column, Method, Outcome, Workload
from aidopt.cli import main
from aidopt.core.driver import AIDSolver
from aidopt.models.lad import LADModel


def slow(model, data, time_limit):
    """A baseline that ignores its time limit (the harness kills it)."""
    time.sleep(120)


TINY = BenchSpec(
    workloads=(Workload(make=lad_instance, sizes=((2000, 3),)),),
    methods=(
        Method("aid-fn", "aid", solver="fn", pair="full-fn"),
        Method("full-fn", "full", solver="fn", label="full FN"),
        Method("slow", "baseline", run=slow),
    ),
    references=("full-fn",),
    aid_options={"tol": 1e-6},
    time_limit=60.0,
    grace=0.5,
)


def _run(spec: BenchSpec, argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    harness.add_spec_arguments(parser, spec, LADModel)
    return harness.run_spec(spec, "lad", parser.parse_args(argv), model=LADModel)


def test_tiny_lad_spec_end_to_end(tmp_path, monkeypatch, capsys):
    """Two methods and their pair, a third killed at its limit; then --append re-runs one
    (instance, method), which replaces the old row."""
    tests = str(Path(__file__).resolve().parent)  # the worker imports `slow` from here
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [tests, os.environ.get("PYTHONPATH")]))
    )
    out = tmp_path / "out"
    assert _run(TINY, ["--method-time-limit", "slow=0.5", "--out", str(out)]) == 0
    runs = pd.read_csv(out / "lad_runs.csv").set_index("method")
    assert list(runs.index) == ["aid-fn", "full-fn", "slow"]
    assert runs.loc["slow", "status"] == "timeout" and runs.loc["slow", "time_limit"] == 0.5
    assert runs.loc["slow", "wall_seconds"] < 30  # killed, not waited for
    for method in ("aid-fn", "full-fn"):
        assert runs.loc[method, "status"] == "optimal" and runs.loc[method, "peak_mb"] > 0
    aid, full = runs.loc["aid-fn"], runs.loc["full-fn"]
    assert aid["reference"] == "full-fn" and abs(aid["delta"]) < 1e-8
    assert aid["rho"] == pytest.approx(aid["seconds"] / full["seconds"], rel=1e-12)
    assert aid["rho_full-fn"] == pytest.approx(aid["rho"], rel=1e-12)
    assert 0 < aid["initial_rate"] <= aid["final_rate"] < 1.0 and aid["iterations"] >= 1
    summary = pd.read_csv(out / "lad_summary.csv")
    assert summary["method"].tolist() == ["aid-fn", "slow"]  # full-fn shares aid-fn's row
    row = summary.iloc[0]
    assert row["pair"] == "full-fn" and row["instances"] == 1
    assert row["t_pair"] == pytest.approx(full["seconds"])
    table = (out / "lad_summary.md").read_text()
    assert "| aid-fn vs full-fn | certified / optimal |" in table
    assert "| slow | timeout | > 0.5 |" in table
    assert (out / "lad_times.png").stat().st_size > 0
    assert table in capsys.readouterr().out

    assert _run(TINY, ["--methods", "aid-fn", "--append", "--out", str(out)]) == 0
    again = pd.read_csv(out / "lad_runs.csv")
    assert again["method"].tolist() == ["full-fn", "slow", "aid-fn"]  # one row per (instance,
    assert again.loc[2, "seconds"] != aid["seconds"]  # method): the new aid-fn run replaced it


def _runs(rows):
    base = {"workload": "generated", "m": 2, "certified": False}
    return pd.DataFrame([{**base, **r} for r in rows])


def test_ratios_and_summary_of_a_runs_table():
    """Δ against the pair or the first finished reference, ρ against the pair and every
    reference, differences (Γ) against the pair, a pair folded into its method's row, skipped
    and failed runs left out of the means."""
    spec = BenchSpec(
        workloads=(Workload(make=lad_instance, sizes=((10, 2),)),),
        methods=(
            Method("aid", "aid", solver="highs", pair="base"),
            Method("base", "baseline", run=slow),
            Method("ref", "full", solver="highs", label="R"),
            Method("other", "full", solver="highs"),
        ),
        references=("ref", "other"),
        differences={"gamma": "accuracy"},
        columns=(Column("Γ", "gamma", ".1%"), Column("SV", "pair_share", ".0%")),
    )
    rows = []
    for seed, (t_aid, t_base) in enumerate(((1.0, 4.0), (3.0, 4.0))):
        common = {"n": 100, "seed": seed}
        rows += [
            {**common, "method": "aid", "status": "gap", "seconds": t_aid, "objective": 10.0,
             "accuracy": 0.9, "initial_rate": 0.1, "final_rate": 0.2, "iterations": 3},
            {**common, "method": "base", "status": "optimal", "seconds": t_base,
             "objective": 10.0 - seed, "accuracy": 0.8, "share": 0.5},
            {**common, "method": "ref", "status": "timeout" if seed else "optimal",
             "seconds": None if seed else 2.0, "objective": None if seed else 8.0},
            {**common, "method": "other", "status": "optimal", "seconds": 5.0, "objective": 5.0},
        ]  # fmt: skip
    rows.append({"n": 200, "seed": 0, "method": "aid", "status": "skipped"})
    runs = harness.add_ratios(_runs(rows), spec)
    aid = runs[(runs["method"] == "aid") & (runs["n"] == 100)].set_index("seed")
    assert aid.loc[0, "delta"] == 0.0 and aid.loc[1, "delta"] == pytest.approx(1 / 9)
    assert aid["rho"].tolist()[:2] == [0.25, 0.75]
    assert aid.loc[0, "rho_ref"] == 0.5 and np.isnan(aid.loc[1, "rho_ref"])
    assert aid["rho_other"].tolist()[:2] == [0.2, 0.6]
    assert aid["gamma"].tolist()[:2] == pytest.approx([0.1, 0.1])
    other = runs[runs["method"] == "other"].set_index("seed")
    assert other["reference"].tolist() == ["ref", "other"]  # the first reference that finished
    assert other.loc[0, "delta"] == pytest.approx(-3 / 8)
    summary = harness.summarize(runs, spec)
    assert summary[["n", "method"]].values.tolist() == [
        [100, "aid"], [100, "ref"], [100, "other"], [200, "aid"]
    ]  # fmt: skip
    row = summary.iloc[0]
    assert row["pair"] == "base" and row["instances"] == 2 and row["ok"] == 2
    assert row["rho"] == 0.5 and row["rho_std"] == 0.25
    assert row["seconds"] == 2.0 and row["t_pair"] == 4.0 and row["pair_share"] == 0.5
    assert summary.iloc[1]["status"] == "optimal/timeout" and summary.iloc[1]["ok"] == 1
    assert summary.iloc[3]["status"] == "skipped" and summary.iloc[3]["runs"] == 1
    table = harness.summary_markdown(summary, spec)
    head = "| n | m | method | status | seconds | T_pair | ρ | Δ | ρ vs R | ρ vs other | Γ | SV |"
    assert table.startswith(head)
    assert "| 100 | 2 | aid vs base | gap / optimal | 2.00 (1.00) | 4.00 | 0.500 (0.250) |" in table


def test_row_sizes_and_part_hand_over(capsys):
    assert parse_row_sizes(10)("400, 1000x3") == [(400, 10), (1000, 3)]
    with pytest.raises(ValueError, match="bad item 'x'"):
        parse_row_sizes(10)("x")
    assert main(["bench", "pu", "--part", "tables", "--help"]) == 0
    out = capsys.readouterr().out
    assert "--datasets" in out and "--sizes-linear" not in out
    assert main(["bench", "pu", "--part=tables", "--sizes-linear", "400"]) == 2  # not its option
    assert "unrecognized arguments: --sizes-linear 400" in capsys.readouterr().err
    # S3VM: the SSL-book tables are the default part; the generated workloads are --part spec
    assert main(["bench", "s3vm", "--help"]) == 0
    assert "--sets" in capsys.readouterr().out
    assert main(["bench", "s3vm", "--part", "spec", "--help"]) == 0
    out = capsys.readouterr().out
    assert "--sizes" in out and "--Mu" in out and "--sets" not in out


def test_library_baselines_reach_the_optimum():
    """sklearn's QuantileRegressor, libsvm and Clarabel give the model's optimum, evaluated by
    the model (what the harness compares)."""
    data = lad_instance(300, 3, 0)
    model = LADModel()
    best = AIDSolver(model, solver="highs", tol=0.0).solve_full(data).objective
    solution = libraries.sklearn_quantile(model, data, None)
    assert model.evaluate(data, solution).objective == pytest.approx(best, rel=1e-7)

    from aidopt.bench.svm import instance as svm_instance
    from aidopt.models.svm import SVMModel

    data = svm_instance(300, 2, 0)
    model = SVMModel(M=0.1)
    best = AIDSolver(model, solver="highs", tol=0.0).solve_full(data).objective
    for run in (libraries.libsvm_svc, libraries.liblinear_svc):
        outcome = run(model, data, None)
        assert isinstance(outcome, Outcome) and outcome.status == "optimal"
        assert model.evaluate(data, outcome.solution).objective == pytest.approx(best, rel=1e-3)

    pytest.importorskip("cvxpy")
    from aidopt.bench.pu import instance as pu_instance
    from aidopt.models.pu import PUModel

    data, options = pu_instance(300, 3, 0)
    model = PUModel(lam=0.01, **options)
    best = AIDSolver(model, solver="usmo", tol=0.0).solve_full(data).objective
    outcome = libraries.clarabel_pu(model, data, 60.0)
    assert model.evaluate(data, outcome.solution).objective == pytest.approx(best, rel=1e-6)


@pytest.mark.skipif(libraries.quantreg_missing() is not None, reason="R quantreg not installed")
@pytest.mark.parametrize("run", [libraries.r_quantreg_fn, libraries.r_quantreg_pfn])
def test_r_quantreg_reaches_the_optimum(run):
    """R's rq.fit.fnb and rq.fit.pfn give the LP's optimum, evaluated by the model, at the
    median and at another quantile."""
    from aidopt.models.lad import QuantileModel

    data = lad_instance(3000, 4, 1)
    for model in (LADModel(), QuantileModel(0.8)):
        best = AIDSolver(model, solver="highs", tol=0.0).solve_full(data).objective
        outcome = run(model, data, 120.0)
        assert isinstance(outcome, Outcome) and outcome.status == "optimal", outcome
        assert model.evaluate(data, outcome.solution).objective == pytest.approx(best, rel=1e-7)


def test_pu_bench_instances_from_either_generator():
    """--generator sklearn: make_classification with 40 % positives, a fifth of them labeled,
    the model's prior the positive share of the unlabeled rows."""
    from aidopt.bench.pu import instance as pu_instance

    for generator in ("aidopt", "sklearn"):
        data, options = pu_instance(5000, 6, 3, generator=generator)
        assert data.X.shape == (5000, 6)
        share = data.n_labeled / data.n
        assert 0.06 < share < 0.10, (generator, share)  # 20 % of ~40 % positives
        assert 0.3 < options["prior"] < 0.4
