"""Parquet input (a file, a directory of parts, a glob) and Dask collections in the Python API.

The same rows give the same table whichever way they are stored, and so the same certified
answer from the installed console script; a corrupt, foreign or missing part is a named error.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from aidopt.data.io import NumericTable, feature_matrix, read_table, target_column
from aidopt.exceptions import DataError

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

AIDOPT = Path(sys.executable).parent / "aidopt"


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    """A LAD instance with badly scaled columns (1e-9, 1e9) and an integer column."""
    rng = np.random.default_rng(7)
    n = 500
    X = rng.standard_normal((n, 3)) * np.array([1e-9, 1.0, 1e9])
    y = X @ np.array([2e9, -1.0, 3e-9]) + rng.laplace(size=n)
    out = pd.DataFrame({"a": X[:, 0], "b": X[:, 1], "c": X[:, 2], "k": rng.integers(0, 5, n)})
    out["y"] = y
    return out


def _write_parts(frame: pd.DataFrame, folder: Path, rows: list[int]) -> list[Path]:
    folder.mkdir()
    paths, start = [], 0
    for i, size in enumerate(rows):
        path = folder / f"part-{i:03d}.parquet"
        pq.write_table(pa.Table.from_pandas(frame.iloc[start : start + size]), path)
        paths.append(path)
        start += size
    return paths


@pytest.fixture(scope="module")
def sources(frame, tmp_path_factory) -> dict[str, str]:
    """The same rows as CSV, one Parquet file, a directory of 3 parts and a glob of them."""
    root = tmp_path_factory.mktemp("sources")
    frame.to_csv(root / "data.csv", index=False)
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), root / "data.parquet")
    _write_parts(frame, root / "parts", [1, 200, len(frame) - 201])
    (root / "parts" / "_SUCCESS").write_text("")  # written by Spark; not a part
    return {
        "csv": str(root / "data.csv"),
        "file": str(root / "data.parquet"),
        "directory": str(root / "parts"),
        "glob": str(root / "parts" / "part-*.parquet"),
    }


@pytest.mark.parametrize("kind", ["file", "directory", "glob"])
def test_parquet_gives_the_csv_table(sources, kind):
    csv, parquet = read_table(sources["csv"]), read_table(sources[kind])
    assert isinstance(parquet, NumericTable)
    assert list(parquet.columns) == [str(c) for c in csv.columns]
    X_csv, names_csv = feature_matrix(csv, "y")
    X_pq, names_pq = feature_matrix(parquet, "y")
    assert names_pq == names_csv
    np.testing.assert_array_equal(X_pq, X_csv)
    np.testing.assert_array_equal(target_column(parquet, "y"), target_column(csv, "y"))
    assert target_column(parquet, "k").dtype == np.int64  # integers stay integers


def _solve(data: str) -> dict:
    done = subprocess.run(
        [str(AIDOPT), "solve", "lad", "--data", data, "--target", "y", "--json", "--quiet"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.skipif(not AIDOPT.is_file(), reason=f"console script not installed at {AIDOPT}")
def test_the_console_script_certifies_the_same_optimum_from_each_source(sources):
    results = {kind: _solve(path) for kind, path in sources.items()}
    reference = results.pop("csv")
    assert reference["status"] == "optimal"
    for kind, result in results.items():
        assert result["status"] == "optimal", kind
        assert result["objective"] == reference["objective"], kind
        assert result["solution"] == reference["solution"], kind


@pytest.mark.skipif(not AIDOPT.is_file(), reason=f"console script not installed at {AIDOPT}")
def test_a_corrupt_part_is_named_by_the_console_script(frame, tmp_path):
    parts = _write_parts(frame, tmp_path / "parts", [250, 250])
    parts[1].write_bytes(parts[1].read_bytes()[:100])  # truncated
    done = subprocess.run(
        [str(AIDOPT), "solve", "lad", "--data", str(tmp_path / "parts"), "--target", "y"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert done.stderr.startswith("aidopt: error: ")
    assert str(parts[1]) in done.stderr and "Traceback" not in done.stderr


def test_a_part_that_is_not_parquet_is_named(frame, tmp_path):
    parts = _write_parts(frame, tmp_path / "parts", [250, 250])
    parts[0].write_text("a,b\n1,2\n")
    with pytest.raises(DataError, match=r"part-000\.parquet is not a readable Parquet file"):
        read_table(tmp_path / "parts")


def test_parts_with_other_columns_are_named(frame, tmp_path):
    parts = _write_parts(frame, tmp_path / "parts", [250, 250])
    pq.write_table(pa.Table.from_pandas(frame.iloc[250:].drop(columns="c")), parts[1])
    with pytest.raises(DataError, match=r"part-001\.parquet has the columns .* same columns"):
        read_table(tmp_path / "parts")


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda root: root / "empty", "holds no Parquet files"),
        (lambda root: root / "nothing-*.parquet", "No data file matches the pattern"),
        (lambda root: root / "missing.parquet", "Data file not found"),
    ],
)
def test_missing_sources_are_named(tmp_path, make, message):
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match=message):
        read_table(make(tmp_path))


def test_nulls_and_text_reach_the_named_checks(frame, tmp_path):
    with_null = frame.copy()
    with_null.loc[3, "b"] = np.nan
    path = tmp_path / "nulls.parquet"
    pq.write_table(pa.Table.from_pandas(with_null), path)
    from aidopt.data.containers import RegressionData

    with pytest.raises(DataError, match=r"X contains NaN values .* index \(3, 1\)"):
        RegressionData.from_frame(read_table(path), "y")
    with_text = frame.assign(b=frame["b"].astype(str))
    pq.write_table(pa.Table.from_pandas(with_text), path)
    with pytest.raises(DataError, match="Non-numeric feature columns: b"):
        feature_matrix(read_table(path), "y")


def test_dask_arrays_and_frames_fit_like_numpy(frame):
    dd = pytest.importorskip("dask.dataframe")
    da = pytest.importorskip("dask.array")
    from aidopt.estimators import AIDLADRegressor

    X, y = frame[["a", "b", "c"]], frame["y"]
    reference = AIDLADRegressor().fit(X.to_numpy(), y.to_numpy())
    lazy_frame = AIDLADRegressor().fit(dd.from_pandas(X, npartitions=3), dd.from_pandas(y))
    lazy_array = AIDLADRegressor().fit(
        da.from_array(X.to_numpy(), chunks=(128, 3)), da.from_array(y.to_numpy(), chunks=128)
    )
    for fitted in (lazy_frame, lazy_array):
        assert fitted.status_ == reference.status_ == "optimal"
        np.testing.assert_array_equal(fitted.coef_, reference.coef_)
    assert list(lazy_frame.feature_names_in_) == ["a", "b", "c"]
    np.testing.assert_array_equal(
        lazy_frame.predict(dd.from_pandas(X, npartitions=2)), reference.predict(X.to_numpy())
    )
