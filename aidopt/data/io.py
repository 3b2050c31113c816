"""Reading tables: CSV files into a feature matrix and a target column, with named errors."""

from __future__ import annotations

import os
from collections.abc import Collection
from pathlib import Path

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from aidopt.exceptions import DataError, InvalidParameterError

__all__ = ["check_output_path", "feature_matrix", "read_table", "target_column"]


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


def read_table(path: str | Path) -> pd.DataFrame:
    """A CSV file as a DataFrame (first line = column names)."""
    p = Path(path)
    if not p.is_file():
        raise DataError(f"Data file not found: {p}")
    try:
        frame = pd.read_csv(p)
    except pd.errors.EmptyDataError:
        raise DataError(f"Data file {p} is empty.") from None
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise DataError(f"Data file {p} is not a readable CSV file: {exc}") from None
    if frame.shape[0] == 0:
        raise DataError(f"Data file {p} has a header but no rows.")
    return frame


def target_column(frame: pd.DataFrame, target: str) -> pd.Series:
    """The target column, or a DataError listing the columns that exist."""
    if target not in frame.columns:
        shown = ", ".join(map(str, frame.columns[:20]))
        more = ", ..." if frame.shape[1] > 20 else ""
        raise DataError(f"Target column {target!r} not found; the columns are: {shown}{more}.")
    return frame[target]


def feature_matrix(frame: pd.DataFrame, target: str) -> tuple[NDArray[np.float64], list[str]]:
    """Every column but the target as a float matrix; non-numeric columns are an error."""
    features = frame.drop(columns=[target])
    if features.shape[1] == 0:
        raise DataError(f"No feature columns: the table has only the target column {target!r}.")
    bad = [str(c) for c in features.columns if not pd.api.types.is_numeric_dtype(features[c])]
    if bad:
        raise DataError(
            f"Non-numeric feature columns: {', '.join(bad)}. Encode or drop them first."
        )
    return np.ascontiguousarray(features.to_numpy(dtype=np.float64)), [
        str(c) for c in features.columns
    ]
