"""AID on rows in blocks: the numpy engine (chunks in memory) and the Dask engine.

The answer is checked against an independent full solve of the original problem (not against
AID in memory alone): the same certified optimum whatever the block size (1, 7, n rows), the
engine, or where the rows come from (Parquet directory, CSV, arrays); a worker lost mid-pass
leaves the answer unchanged; bad parts and unsupported settings are named errors.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from aidopt.data.containers import RegressionData
from aidopt.data.lad import make_lad
from aidopt.driver import AIDSolver
from aidopt.engine.blocks import MemoryBlocks
from aidopt.exceptions import DataError, InvalidParameterError
from aidopt.models.lad import LADModel, QuantileModel

AIDOPT = Path(sys.executable).parent / "aidopt"
TOL = 1e-12


def _instance(n=400, m=3, seed=3, scale=1.0, weighted=False):
    X, y, _, _ = make_lad(n, m, seed=seed)
    X = X * np.array([scale, 1.0, 1.0 / scale])[:m]
    weight = np.random.default_rng(seed).uniform(0.5, 2.0, n) if weighted else None
    return RegressionData.from_arrays(X, y, weight=weight)


CASES = {
    "lad-band": (LADModel(), {}),
    "lad-bins-sign": (LADModel(init="bins", split="sign"), {}),
    "quantile-0.2": (QuantileModel(0.2, init="bins"), {}),
    "weighted-no-intercept": (LADModel(fit_intercept=False, init="bins"), {"weighted": True}),
    "scaled-1e9": (LADModel(init="bins"), {"scale": 1e9}),
    "scaled-1e-9": (LADModel(), {"scale": 1e-9}),
}


@pytest.fixture(scope="module", params=list(CASES))
def case(request):
    model, options = CASES[request.param]
    data = _instance(**options)
    full = AIDSolver(model, tol=TOL).solve_full(data)
    assert full.status.value == "optimal"
    return model, data, full


def _same_optimum(result, full):
    assert result.status.value == "optimal", result.message
    assert result.certificate.certified
    assert result.certificate.lower_bound <= full.objective * (1 + 1e-12) + 1e-300
    assert abs(result.objective - full.objective) <= 1e-9 * abs(full.objective)
    scale = np.abs(full.solution.coef).max()
    np.testing.assert_allclose(result.solution.coef, full.solution.coef, atol=1e-7 * scale)


@pytest.mark.parametrize("chunk", [1, 7, None])
def test_block_sizes_do_not_change_the_certified_optimum(case, chunk):
    model, data, full = case
    blocks = MemoryBlocks(data, chunk or data.n)
    _same_optimum(AIDSolver(model, tol=TOL).solve(blocks), full)


def test_split_is_the_in_memory_split():
    """The block partition splits exactly as Partition.split: same labels, sizes, parents."""
    from aidopt.engine.partition import BlockPartition, StateRef
    from aidopt.partition import Partition

    rng = np.random.default_rng(0)
    n = 300
    labels = rng.integers(0, 12, n)
    regime = rng.integers(0, 2, n)
    regime[labels == 3] = 1  # a pure cluster
    finer = regime.copy()
    near = rng.random(n) < 0.1
    finer[near] = 2 + np.flatnonzero(near)
    reference = Partition.from_labels(labels)
    data = _instance(n=n)
    for given in (None, finer):
        expected, n_impure = reference.split(regime, given)
        blocks = MemoryBlocks(data, 7)

        def store(_b, offset, arrays, _size=7):
            return tuple(a[offset : offset + _size] for a in arrays), None

        blocks.run(store, (labels, regime, finer), writes=("l", "r", "f"), data=False)
        part = BlockPartition.from_block_labels(blocks, "l")
        child, impure = part.split(StateRef("r"), None if given is None else StateRef("f"))
        got = np.concatenate(blocks._state[child.slot])
        assert impure == n_impure
        np.testing.assert_array_equal(got, expected.labels)
        np.testing.assert_array_equal(child.sizes, expected.sizes)
        np.testing.assert_array_equal(child.parent, expected.parent)
        np.testing.assert_array_equal(child.cluster_regime, expected.cluster_regime)


class _SlowLAD(LADModel):
    """LAD whose evaluation takes 50 ms per block."""

    def evaluate_rows(self, rows, solution, offset, whole):
        import time

        time.sleep(0.05)
        return super().evaluate_rows(rows, solution, offset, whole)


def _time_limit_holds_within_a_pass(blocks):
    import time

    from aidopt.exceptions import TimeLimitError

    start = time.perf_counter()
    with pytest.raises(TimeLimitError, match="during a data pass"):
        AIDSolver(_SlowLAD(init="bins"), time_limit=0.5).solve(blocks)
    return time.perf_counter() - start


def test_the_time_limit_holds_within_a_pass_in_memory():
    # 40 blocks of 50 ms: the first evaluation alone would take 2 s
    assert _time_limit_holds_within_a_pass(MemoryBlocks(_instance(n=400), 10)) < 1.5


def test_settings_that_need_all_rows_are_refused():
    data = MemoryBlocks(_instance(), 50)
    for model in (LADModel(init="kmeans"), LADModel(split="minority")):
        with pytest.raises(InvalidParameterError, match="with rows in blocks"):
            AIDSolver(model).solve(data)
    with pytest.raises(InvalidParameterError, match="every row in memory"):
        AIDSolver(LADModel()).solve_full(data)
    from aidopt.models.svm_kernel import KernelSVMModel

    with pytest.raises(InvalidParameterError, match="has no chunked data pass"):
        AIDSolver(KernelSVMModel()).solve(data)


# ---------------------------------------------------------------------- the Dask engine
distributed = pytest.importorskip("distributed")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")


@pytest.fixture(scope="module")
def client():
    from aidopt.engine.dask import local_client

    with local_client(processes=False, workers=2) as made:
        yield made
    made.cluster.close()


@pytest.mark.parametrize("name", ["lad-bins-sign", "quantile-0.2", "weighted-no-intercept"])
def test_dask_engine_gives_the_certified_optimum(client, name):
    from aidopt.engine.dask import DaskBlocks

    model, options = CASES[name]
    data = _instance(**options)
    full = AIDSolver(model, tol=TOL).solve_full(data)
    on_numpy = AIDSolver(model, tol=TOL).solve(MemoryBlocks(data, 64))
    on_dask = AIDSolver(model, tol=TOL).solve(DaskBlocks.from_data(client, data, 64))
    _same_optimum(on_dask, full)
    assert on_dask.objective == on_numpy.objective
    np.testing.assert_array_equal(on_dask.solution.coef, on_numpy.solution.coef)
    assert "dask engine" in on_dask.certificate.source


def test_the_time_limit_holds_within_a_pass_on_dask(client):
    from aidopt.engine.dask import DaskBlocks

    blocks = DaskBlocks.from_data(client, _instance(n=400), 10)
    assert _time_limit_holds_within_a_pass(blocks) < 1.5


def _frame(data: RegressionData) -> pd.DataFrame:
    frame = pd.DataFrame(data.X, columns=list(data.feature_names))
    frame["y"] = data.y
    return frame


def _write_parts(frame, folder: Path, rows=(150, 100, 150), row_group=64) -> list[Path]:
    folder.mkdir()
    paths, start = [], 0
    for i, size in enumerate(rows):
        path = folder / f"part-{i}.parquet"
        table = pa.Table.from_pandas(frame.iloc[start : start + size], preserve_index=False)
        pq.write_table(table, path, row_group_size=row_group)
        paths.append(path)
        start += size
    return paths


def test_parquet_blocks_are_row_groups_and_give_the_same_answer(client, tmp_path):
    from aidopt.engine.dask import DaskBlocks

    data = _instance()
    _write_parts(_frame(data), tmp_path / "parts")
    blocks = DaskBlocks.from_parquet(client, tmp_path / "parts", RegressionData, "y")
    assert list(blocks.sizes) == [64, 64, 22, 64, 36, 64, 64, 22]
    model = LADModel(init="bins", split="sign")
    full = AIDSolver(model, tol=TOL).solve_full(data)
    _same_optimum(AIDSolver(model, tol=TOL).solve(blocks), full)


def test_unreadable_parts_are_named(client, tmp_path):
    from aidopt.engine.dask import DaskBlocks

    data = _instance()
    parts = _write_parts(_frame(data), tmp_path / "parts")
    parts[2].write_bytes(b"PAR1 not really")
    with pytest.raises(DataError, match=r"part-2\.parquet is not a readable Parquet file"):
        DaskBlocks.from_parquet(client, tmp_path / "parts", RegressionData, "y")
    # a part that goes bad after the run has started is named by the worker that reads it
    parts = _write_parts(_frame(data), tmp_path / "later")
    blocks = DaskBlocks.from_parquet(client, tmp_path / "later", RegressionData, "y")
    parts[1].unlink()
    with pytest.raises(DataError, match=r"part-1\.parquet vanished"):
        AIDSolver(LADModel(), tol=TOL).solve(blocks)


@pytest.mark.skipif(not AIDOPT.is_file(), reason=f"console script not installed at {AIDOPT}")
def test_console_script_parquet_equals_csv_equals_memory(tmp_path):
    data = _instance()
    frame = _frame(data)
    frame.to_csv(tmp_path / "data.csv", index=False)
    _write_parts(frame, tmp_path / "parts")
    base = ["solve", "lad", "--target", "y", "--init", "bins", "--tol", "1e-12", "--json"]
    runs = {
        "memory": ["--data", str(tmp_path / "data.csv")],
        "numpy-7": ["--data", str(tmp_path / "data.csv"), "--engine", "numpy", "--chunk-rows", "7"],
        "dask-parquet": ["--data", str(tmp_path / "parts"), "--engine", "dask", "--workers", "2"],
        "dask-csv": [
            *("--data", str(tmp_path / "data.csv"), "--engine", "dask", "--chunk-rows", "90"),
        ],
    }
    results = {}
    for name, extra in runs.items():
        done = subprocess.run(
            [str(AIDOPT), *base, *extra], capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, (name, done.stderr)
        results[name] = json.loads(done.stdout)
    reference = results.pop("memory")
    for name, result in results.items():
        assert result["status"] == "optimal", name
        assert result["objective"] == pytest.approx(reference["objective"], rel=1e-12), name
        for key, value in reference["solution"]["coef"].items():
            assert result["solution"]["coef"][key] == pytest.approx(value, rel=1e-7, abs=1e-9)
    svm = ["solve", "svm", "--data", str(tmp_path / "data.csv"), "--target", "y"]
    bad = subprocess.run(
        [str(AIDOPT), *svm, "--engine", "dask"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bad.returncode == 2 and bad.stderr.startswith("aidopt: error: ")
    assert "Traceback" not in bad.stderr


class _KillsItsWorkerOnce(LADModel):
    """LAD whose evaluation kills the worker process it runs in, the first time only."""

    marker: str = ""

    def evaluate_rows(self, rows, solution, offset, whole):
        if offset > 0 and not os.path.exists(self.marker):
            Path(self.marker).write_text("killed")
            os._exit(1)
        return super().evaluate_rows(rows, solution, offset, whole)


@pytest.mark.slow
def test_a_worker_lost_mid_pass_leaves_the_answer_unchanged(tmp_path):
    import cloudpickle

    from aidopt.engine.dask import DaskBlocks, local_client

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    data = _instance(n=600)
    _write_parts(_frame(data), tmp_path / "parts", rows=(200, 200, 200), row_group=50)
    model = _KillsItsWorkerOnce(init="bins", split="sign")
    model.marker = str(tmp_path / "killed")
    reference = AIDSolver(LADModel(init="bins", split="sign"), tol=TOL).solve(
        MemoryBlocks(data, 50)
    )
    with local_client(processes=True, workers=2) as made:
        blocks = DaskBlocks.from_parquet(made, tmp_path / "parts", RegressionData, "y")
        result = AIDSolver(model, tol=TOL).solve(blocks)
        made.cluster.close()
    assert Path(model.marker).exists()  # a worker was lost during a pass
    assert result.status.value == "optimal"
    assert result.objective == reference.objective
    np.testing.assert_array_equal(result.solution.coef, reference.solution.coef)


@pytest.mark.skipif(not AIDOPT.is_file(), reason=f"console script not installed at {AIDOPT}")
def test_bench_scale_end_to_end(tmp_path):
    """`aidopt bench scale` on a tiny instance: parts written once, every engine certifies the
    same optimum, the table, CSV and plot are written."""
    command = [
        str(AIDOPT),
        *("bench", "scale", "--sizes", "3000", "--m", "3", "--rows-per-part", "1000"),
        *("--row-group", "400", "--methods", "numpy,numpy-blocks,dask,xb", "--workers", "1"),
        *("--data-dir", str(tmp_path / "data"), "--out", str(tmp_path / "out")),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    parts = sorted((tmp_path / "data").glob("*/part-*.parquet"))
    assert len(parts) == 3
    runs = pd.read_csv(tmp_path / "out" / "scale_runs.csv").set_index("method")
    for method in ("numpy", "numpy-blocks", "dask"):
        assert runs.loc[method, "status"] == "optimal", method
        assert abs(runs.loc[method, "delta"]) <= 1e-12
    assert runs.loc["numpy-blocks", "passes"] >= 4  # sample, initial labels, aggregate, evaluate
    assert runs.loc["dask", "workers_peak_mb"] > 0
    assert runs.loc["xb", "xb_seconds"] > 0
    assert runs.loc["dask", "pass_vs_xb"] > 0
    assert (tmp_path / "out" / "scale_seconds.png").stat().st_size > 0
    assert "| 3,000 | dask | optimal |" in done.stdout
