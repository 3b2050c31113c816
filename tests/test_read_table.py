"""CSV reading: small all-number files by numpy (no pandas import), everything else by pandas,
with the same columns, values and dtypes either way."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from aidopt.data.containers import BinaryData, FeatureData, PositiveUnlabeledData, RegressionData
from aidopt.data.io import NumericTable, _pandas_table, read_table, target_column
from aidopt.exceptions import DataError

NUMERIC = {
    "plain": "x1,x2,y\n1,2.5,3\n-4,5e-9,6\n7,1e9,-8\n",
    "crlf and bom": "\ufeffx1,x2,y\r\n1,2.5,3\r\n-4,5e-9,6\r\n",
    "quoted header": '"a b","c,d",y\n1,2,3\n4,5,6\n',
    "nan and inf": "x1,y\nnan,1\ninf,2\n-inf,3\n",
    "blank last lines": "x1,y\n1,2\n3,4\n\n\n",
    "long digits": "x1,y\n0.1000000000000000055511151231257827,1\n3.141592653589793238,2\n",
}

NOT_NUMERIC = {
    "empty field": "x1,y\n1,\n2,3\n",
    "text": "x1,y\n1,a\n2,b\n",
    "duplicate names": "x,x,y\n1,2,3\n",
    "underscore digits": "x1,y\n1_000,2\n3,4\n",
    "non-ascii digits": "x1,y\n\uff11,2\n3,4\n",
    "ragged": "x1,y\n1,2,3\n4,5\n",
    "booleans": "x1,y\n1,True\n2,False\n",
    "index column": "x1,y\n0,1,2\n1,3,4\n",
}


@pytest.mark.parametrize("case", NUMERIC)
def test_a_small_all_number_file_is_read_by_numpy_like_pandas(tmp_path, case):
    path = tmp_path / "t.csv"
    path.write_text(NUMERIC[case], encoding="utf-8", newline="")
    table = read_table(path)
    assert isinstance(table, NumericTable)
    frame = _pandas_table(path)
    assert table.columns == tuple(frame.columns)
    assert table.shape == frame.shape
    for name in table.columns:
        ours, theirs = table.arrays[name], frame[name].to_numpy()
        assert ours.dtype == theirs.dtype, name
        np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("case", NOT_NUMERIC)
def test_anything_else_is_read_by_pandas(tmp_path, case):
    path = tmp_path / "t.csv"
    path.write_text(NOT_NUMERIC[case], encoding="utf-8")
    assert isinstance(read_table(path), pd.DataFrame)


def test_large_files_go_to_pandas(tmp_path, monkeypatch):
    import aidopt.data.io as io_module

    path = tmp_path / "t.csv"
    path.write_text("x1,y\n1,2\n3,4\n")
    monkeypatch.setattr(io_module, "SMALL_FILE_BYTES", 4)
    assert isinstance(read_table(path), pd.DataFrame)


@pytest.mark.parametrize(
    ("text", "message"),
    [("", "is empty"), ("x1,y\n", "has a header but no rows")],
)
def test_empty_files_are_named_errors(tmp_path, text, message):
    path = tmp_path / "t.csv"
    path.write_text(text)
    with pytest.raises(DataError, match=message):
        read_table(path)


def _both(tmp_path, text):
    path = tmp_path / "t.csv"
    path.write_text(text)
    table = read_table(path)
    assert isinstance(table, NumericTable)
    return table, _pandas_table(path)


def test_the_containers_are_equal_from_either_table(tmp_path):
    table, frame = _both(tmp_path, "x1,x2,y\n0.5,1,0\n-1,2,1\n2,-3,1\n0,0.25,0\n")
    for make in (
        lambda t: RegressionData.from_frame(t, "y"),
        lambda t: BinaryData.from_frame(t, "y"),
        lambda t: PositiveUnlabeledData.from_frame(t, "y"),
        lambda t: FeatureData.from_frame(t, "y"),
        lambda t: FeatureData.from_frame(t),
    ):
        ours, theirs = make(table), make(frame)
        np.testing.assert_array_equal(ours.X, theirs.X)
        assert ours.feature_names == theirs.feature_names
        for field in ("y", "labeled", "classes"):
            if hasattr(ours, field):
                assert np.array_equal(getattr(ours, field), getattr(theirs, field))
    # integer labels stay integers: the label mapping a result shows is 0/1, not 0.0/1.0
    assert BinaryData.from_frame(table, "y").label_mapping() == {"-1": 0, "+1": 1}
    assert type(BinaryData.from_frame(table, "y").classes[0]) is int


def test_errors_name_the_problem_from_either_table(tmp_path):
    table, frame = _both(tmp_path, "x1,y\n1,0\n2,0\n")
    for t in (table, frame):
        with pytest.raises(DataError, match="exactly two distinct values"):
            BinaryData.from_frame(t, "y")
        with pytest.raises(DataError, match=r"Target column 'z' not found; the columns are: x1, y"):
            target_column(t, "z")
        with pytest.raises(DataError, match="only the target column"):
            RegressionData.from_frame(t[["y"]] if t is frame else _only_y(t), "y")
    nan_table, nan_frame = _both(tmp_path, "x1,y\n1,nan\n2,1\n")
    for t in (nan_table, nan_frame):
        with pytest.raises(DataError, match="missing"):
            PositiveUnlabeledData.from_frame(t, "y")
        with pytest.raises(DataError, match="missing"):
            BinaryData.from_frame(t, "y")


def _only_y(table: NumericTable) -> NumericTable:
    return NumericTable(("y",), {"y": table.arrays["y"]})


def test_a_small_lad_run_imports_neither_pandas_nor_pyomo_nor_sklearn(tmp_path):
    """`aidopt solve lad` on a small file: lazy imports all the way (the CLI's start-up cost)."""
    path = tmp_path / "t.csv"
    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 2))
    y = X @ [1.0, -2.0] + rng.laplace(size=30)
    pd.DataFrame({"x1": X[:, 0], "x2": X[:, 1], "y": y}).to_csv(path, index=False)
    code = (
        "import sys\nfrom aidopt.cli import main\n"
        f"status = main(['solve', 'lad', '--data', {str(path)!r}, '--target', 'y', '--quiet'])\n"
        "heavy = [m for m in ('pandas', 'pyomo', 'sklearn', 'matplotlib') if m in sys.modules]\n"
        "print(status, heavy)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines()[-1] == "0 []", out.stdout + out.stderr
    assert "status      optimal" in out.stdout
