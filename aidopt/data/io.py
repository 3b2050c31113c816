"""Reading tables: CSV files (Parquet: :mod:`aidopt.data.parquet`) into a feature matrix and a
target column, with named errors.

A small file (≤ 1 MB) whose every field is a plain number is parsed by numpy into a
:class:`NumericTable`: pandas' import alone (~0.3 s) costs more than parsing it. Everything else
is read by pandas' C parser into a DataFrame (on two cores as fast as pyarrow's multithreaded
reader, with less memory: docs/lad.md), and pandas names what is wrong with a file.
Both give the same columns and values (integers stay integers); :func:`target_column` and
:func:`feature_matrix` read either.
"""

from __future__ import annotations

import csv
import io
import os
import warnings
from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from aidopt.data.table import NumericTable, Table
from aidopt.exceptions import DataError, InvalidParameterError

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "DATA_HELP",
    "NumericTable",
    "Table",
    "check_output_path",
    "feature_matrix",
    "missing",
    "read_table",
    "target_column",
]

#: what ``--data`` takes (the CLI's help)
DATA_HELP = (
    "the data: a CSV file with a header line, a Parquet file, or a directory or glob of "
    "Parquet parts"
)

#: up to this size numpy parses a file faster than pandas is imported (≈ 5,000 rows × 10)
SMALL_FILE_BYTES = 1 << 20


def check_output_path(
    path: str | Path, option: str, suffixes: Collection[str] | None = None
) -> Path:
    """A file path that can be written, checked *before* any work: its suffix one of
    ``suffixes`` (lower-case, with the dot; None: any), its directory existing and writable,
    and the path itself not a directory nor a read-only file. ``option`` names the option in
    the messages (e.g. "--plot")."""
    p = Path(path)
    if suffixes is not None and p.suffix.lower() not in suffixes:
        names = list(suffixes)
        shown = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"
        got = f"{p.suffix!r}" if p.suffix else "no suffix"
        raise InvalidParameterError(
            f"{option} {p}: unsupported file type ({got}); the file name must end in {shown}."
        )
    if p.is_dir():
        raise DataError(f"{option} {p}: is a directory; give a file name.")
    folder = p.parent
    if not folder.is_dir():
        raise DataError(f"{option} {p}: the directory {folder} does not exist.")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise DataError(f"{option} {p}: the directory {folder} is not writable.")
    if p.exists() and not os.access(p, os.W_OK):
        raise DataError(f"{option} {p}: the file exists and is not writable.")
    return p


def read_table(path: str | Path) -> Table:
    """A CSV file (first line = column names) as a table: a :class:`NumericTable` when the
    file is small and every field a plain number, else a pandas DataFrame. A Parquet file, a
    directory of Parquet parts or a glob pattern goes to :func:`aidopt.data.parquet.read_parquet`.
    """
    from aidopt.data.parquet import is_parquet_source, read_parquet

    if is_parquet_source(path):
        return read_parquet(path)
    p = Path(path)
    if not p.is_file():
        raise DataError(f"Data file not found: {p}")
    table = _parsed_by_numpy(p) if p.stat().st_size <= SMALL_FILE_BYTES else None
    table = table if table is not None else _pandas_table(p)  # pandas names what is wrong
    _check_delimiter(table, p)
    return table


def _check_delimiter(table: Table, path: Path) -> None:
    """A file of one column whose name holds another delimiter was not written with commas."""
    names = [str(c) for c in table.columns]
    for delimiter, label in ((";", "semicolons"), ("\t", "tabs"), ("|", "vertical bars")):
        if len(names) == 1 and delimiter in names[0]:
            raise DataError(
                f"{path} has one column, {names[0]!r}: its fields are separated by {label} "
                f"({delimiter!r}); aidopt reads comma-separated CSV (write the file with commas, "
                "or as Parquet)."
            )


def _parsed_by_numpy(path: Path) -> NumericTable | None:
    """A small file parsed by numpy, or None when it is not a rectangle of plain ASCII numbers
    under unique non-empty names."""
    try:
        text = path.read_text(encoding="utf-8-sig")  # universal newlines: \r\n is \n
    except UnicodeDecodeError:
        return None
    header_end = text.find("\n")
    if header_end < 0 or not text.isascii():
        return None
    names = next(csv.reader([text[:header_end]]), [])
    body = text[header_end + 1 :]
    if not names or "" in names or len(set(names)) < len(names) or "_" in body:
        return None
    if not body.strip():
        return None
    try:
        with warnings.catch_warnings():  # "line ... contained no data": blank lines are skipped
            warnings.simplefilter("ignore", UserWarning)
            fields = np.loadtxt(
                io.StringIO(body), dtype=str, delimiter=",", comments=None, quotechar='"', ndmin=2
            )
    except ValueError:  # ragged rows
        return None
    if fields.shape[0] == 0 or fields.shape[1] != len(names):
        return None
    arrays: dict[str, NDArray] = {}
    for name, column in zip(names, fields.T, strict=True):
        try:
            arrays[name] = column.astype(np.int64)
        except (ValueError, OverflowError):
            try:
                arrays[name] = column.astype(np.float64)
            except ValueError:  # text, an empty field
                return None
    return NumericTable(tuple(names), arrays)


def _pandas_table(path: Path) -> pd.DataFrame:
    import pandas as pd

    try:
        frame = pd.read_csv(path)
    except pd.errors.EmptyDataError:
        raise DataError(f"Data file {path} is empty.") from None
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise DataError(f"Data file {path} is not a readable CSV file: {exc}") from None
    if frame.shape[0] == 0:
        raise DataError(f"Data file {path} has a header but no rows.")
    return frame


def _columns(frame: Table) -> list[str]:
    return [str(c) for c in frame.columns]


def target_column(frame: Table, target: str) -> NDArray:
    """The target column as an array, or a DataError listing the columns that exist."""
    if target not in frame.columns:
        names = _columns(frame)
        shown = ", ".join(names[:20])
        more = ", ..." if len(names) > 20 else ""
        raise DataError(f"Target column {target!r} not found; the columns are: {shown}{more}.")
    if isinstance(frame, NumericTable):
        return frame.arrays[target]
    return frame[target].to_numpy()


def is_numeric(values: NDArray) -> bool:
    """Numbers (bool, integer or floating point), not text."""
    return values.dtype.kind in "biuf"


def missing(values: NDArray) -> NDArray[np.bool_]:
    """Where values are missing (NaN, None, pandas' NA)."""
    if values.dtype.kind == "f":
        return np.isnan(values)
    if values.dtype.kind == "O":
        import pandas as pd

        return np.asarray(pd.isna(values), dtype=bool)
    return np.zeros(values.shape, dtype=bool)


def feature_matrix(frame: Table, target: str | None) -> tuple[NDArray[np.float64], list[str]]:
    """Every column but the target (None: every column) as a float matrix; non-numeric columns
    are an error."""
    names = [c for c in frame.columns if c != target]
    if not names:
        raise DataError(f"No feature columns: the table has only the target column {target!r}.")
    if isinstance(frame, NumericTable):
        X = np.column_stack([frame.arrays[c] for c in names]).astype(np.float64, copy=False)
        return X, list(names)
    features = frame[names]
    bad = [str(c) for c in names if not is_numeric(features[c].to_numpy())]
    if bad:
        raise DataError(
            f"Non-numeric feature columns: {', '.join(bad)}. Encode or drop them first."
        )
    return np.ascontiguousarray(features.to_numpy(dtype=np.float64)), [str(c) for c in names]
