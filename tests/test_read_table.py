"""CSV reading: small all-number files by numpy (no pandas import), everything else by pandas,
with the same columns, values and dtypes either way."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from aidopt.data.containers import BinaryData, FeatureData, PositiveUnlabeledData, RegressionData
from aidopt.data.io import NumericTable, _pandas_table, feature_matrix, read_table, target_column
from aidopt.exceptions import DataError

NUMERIC = {
    "plain": "x1,x2,y\n1,2.5,3\n-4,5e-9,6\n7,1e9,-8\n",
    "crlf and bom": "\ufeffx1,x2,y\r\n1,2.5,3\r\n-4,5e-9,6\r\n",
    "quoted header": '"a b","c,d",y\n1,2,3\n4,5,6\n',
    "nan and inf": "x1,y\nnan,1\ninf,2\n-inf,3\n",
    "spaces": "x1,y\n 1,2\n3 ,4\n",
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
    "unnamed column": "x1,\n1,2\n",
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

    path = _write(tmp_path, "x1,y\n1,2\n3,4\n")
    monkeypatch.setattr(io_module, "SMALL_FILE_BYTES", 4)
    frame = read_table(path)
    assert isinstance(frame, pd.DataFrame)
    X, names = feature_matrix(frame, "y")
    np.testing.assert_array_equal(X, [[1.0], [3.0]])
    assert names == ["x1"] and X.flags.c_contiguous


@pytest.mark.parametrize(
    ("text", "message"),
    [("", "is empty"), ("x1,y\n", "has a header but no rows")],
)
def test_empty_files_are_named_errors(tmp_path, text, message):
    path = tmp_path / "t.csv"
    path.write_text(text)
    with pytest.raises(DataError, match=message):
        read_table(path)


def _write(tmp_path, text):
    path = tmp_path / "t.csv"
    path.write_text(text)
    return path


def _both(tmp_path, text):
    path = _write(tmp_path, text)
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
    nan_frame = _pandas_table(_write(tmp_path, "x1,y\n1,nan\n2,1\n"))
    nan_table = NumericTable(("x1", "y"), {"x1": np.array([1, 2]), "y": np.array([np.nan, 1.0])})
    for t in (nan_table, nan_frame):
        with pytest.raises(DataError, match="missing"):
            PositiveUnlabeledData.from_frame(t, "y")
        with pytest.raises(DataError, match="missing"):
            BinaryData.from_frame(t, "y")


def _only_y(table: NumericTable) -> NumericTable:
    return NumericTable(("y",), {"y": table.arrays["y"]})


def test_a_lad_run_imports_neither_pandas_nor_pyomo_nor_sklearn(tmp_path):
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


def test_models_are_found_without_importing_them_and_checked_on_load(tmp_path, monkeypatch):
    """The registry reads the source for ``MODEL = ...``; the file's name is the model's name,
    and a class named otherwise is a named error when it loads."""
    from aidopt.core.registry import Entry, models
    from aidopt.exceptions import AidoptError

    found = models()
    assert {"lad", "svm", "pu", "s3vm", "ocsvm", "svdd"} <= set(found)
    assert "svm_kernel" not in found and "ocsvm_kernel" not in found  # no MODEL line
    for name, entry in found.items():
        assert entry.load().name == name
    (tmp_path / "misnamed.py").write_text(
        "class Model:\n    name = 'other'\n\n\nMODEL = Model\n", encoding="utf-8"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(AidoptError, match=r"registered as 'misnamed'.*named 'other'"):
        Entry("misnamed", "misnamed:MODEL", "model").load()
