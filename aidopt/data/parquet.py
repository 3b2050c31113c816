"""Parquet input: a file, a directory of parts, or a glob of parts, read by pyarrow.

Every part is opened on its own, so a corrupt, truncated or vanished part is a
:class:`~aidopt.exceptions.DataError` naming that file (not an Arrow traceback), and parts whose
columns differ from the first part's are named too. Numeric columns without nulls become a
:class:`~aidopt.data.io.NumericTable` (one contiguous array per column, no pandas); anything
else (text, nulls) a pandas DataFrame, whose checks name the offending columns as for CSV.

pyarrow is the ``scale`` extra. This process reads through the system's allocator
(``pyarrow.set_memory_pool``) unless ``ARROW_DEFAULT_MEMORY_POOL`` names one: with Arrow's
default (mimalloc) the next large numpy allocations of the process were measured 20× slower
(docs/lad.md). The environment is left as it was: processes started from this one choose their
own (the Dask workers Arrow's pool, :data:`aidopt.engine.dask.WORKER_ENV`; a variable set here
used to override theirs, and their kept heap grew by ~0.7 GB each at 10^8 rows).
"""

from __future__ import annotations

import functools
import glob
import os
from pathlib import Path
from typing import Any

import numpy as np

from aidopt.data.table import NumericTable, Table
from aidopt.exceptions import DataError

__all__ = [
    "PARQUET_SUFFIXES",
    "arrow_table",
    "check_columns",
    "is_parquet_source",
    "open_part",
    "parquet_parts",
    "read_parquet",
    "read_part",
]

PARQUET_SUFFIXES = (".parquet", ".pq")
_GLOB_CHARACTERS = frozenset("*?[")


def is_parquet_source(path: str | Path) -> bool:
    """A Parquet file (by suffix), a directory, or a glob pattern (read as Parquet parts)."""
    text = str(path)
    p = Path(text)
    return p.suffix.lower() in PARQUET_SUFFIXES or p.is_dir() or bool(_GLOB_CHARACTERS & set(text))


def parquet_parts(path: str | Path) -> list[Path]:
    """The Parquet files of ``path`` in name order: the file itself, the ``*.parquet`` /
    ``*.pq`` files of a directory (hidden and ``_``-prefixed metadata files left out, as Dask
    and Spark write them), or the files a glob pattern matches."""
    text = str(path)
    p = Path(text)
    if p.is_dir():
        parts = sorted(
            q
            for q in p.iterdir()
            if q.suffix.lower() in PARQUET_SUFFIXES and not q.name.startswith((".", "_"))
        )
        if not parts:
            raise DataError(f"Data directory {p} holds no Parquet files (*.parquet, *.pq).")
        return parts
    if _GLOB_CHARACTERS & set(text):
        parts = sorted(Path(q) for q in glob.glob(text) if Path(q).is_file())
        if not parts:
            raise DataError(f"No data file matches the pattern {text!r}.")
        return parts
    if not p.is_file():
        raise DataError(f"Data file not found: {p}")
    return [p]


@functools.cache
def _pyarrow():
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise DataError(
            "Reading Parquet needs the package 'pyarrow': pip install 'aidopt[scale]' "
            "(or: pip install pyarrow)."
        ) from None
    if "ARROW_DEFAULT_MEMORY_POOL" not in os.environ:  # a pool chosen for this process stands
        pa.set_memory_pool(pa.system_memory_pool())
    return pa, pq


def read_part(part: str | Path, group: int | None = None, columns: list[str] | None = None) -> Any:
    """Part ``part`` (row group ``group`` only, when given; only ``columns``, when given) as an
    Arrow table; a part that vanished or is not readable Parquet is a DataError naming it."""
    pa, _ = _pyarrow()
    try:
        file = open_part(part)
        if group is None:
            return file.read(columns=columns)
        return file.read_row_group(group, columns=columns)
    except FileNotFoundError:
        raise DataError(f"Parquet part {part} vanished while it was being read.") from None
    except (pa.ArrowException, OSError) as exc:
        where = "" if group is None else f" (row group {group})"
        raise DataError(
            f"Parquet part {part}{where} is not a readable Parquet file: {exc}"
        ) from None


def open_part(part: str | Path) -> Any:
    """The ``pyarrow.parquet.ParquetFile`` of a part (its metadata read), with named errors."""
    pa, pq = _pyarrow()
    try:
        return pq.ParquetFile(part)
    except FileNotFoundError:
        raise DataError(f"Parquet part {part} vanished while it was being read.") from None
    except (pa.ArrowException, OSError) as exc:
        raise DataError(f"Parquet part {part} is not a readable Parquet file: {exc}") from None


def check_columns(part: Path, names: list[str], first: Path, first_names: list[str]) -> None:
    """Every part has the first part's columns, in order."""
    if names != first_names:
        raise DataError(
            f"Parquet part {part} has the columns {names}, but {first} has {first_names}: "
            "every part must have the same columns."
        )


def read_parquet(path: str | Path) -> Table:
    """The rows of every part of ``path`` (see :func:`parquet_parts`), in part order."""
    pa, _ = _pyarrow()
    parts = parquet_parts(path)
    tables: list[Any] = []
    for part in parts:
        table = read_part(part)
        if tables:
            check_columns(part, table.schema.names, parts[0], tables[0].schema.names)
        tables.append(table)
    try:
        table = pa.concat_tables(tables, promote_options="permissive")
    except pa.ArrowException as exc:
        raise DataError(f"The Parquet parts of {path} do not share one schema: {exc}") from None
    if table.num_rows == 0:
        raise DataError(f"Data {path} has columns but no rows.")
    return arrow_table(table)


def arrow_table(table: Any) -> Table:
    """An Arrow table as a :class:`~aidopt.data.io.NumericTable` when every column is numeric
    without nulls, else as a pandas DataFrame (whose checks name text and missing values)."""
    pa, _ = _pyarrow()
    names = [str(c) for c in table.column_names]
    if len(set(names)) < len(names) or not names:
        return table.to_pandas()
    arrays = {}
    for name, column in zip(names, table.columns, strict=True):
        kind = column.type
        if column.null_count or not (pa.types.is_integer(kind) or pa.types.is_floating(kind)):
            return table.to_pandas()  # text or nulls: pandas' checks name the columns
        values = column.to_numpy()
        arrays[name] = values.astype(
            np.int64 if pa.types.is_integer(kind) else np.float64, copy=False
        )
    return NumericTable(tuple(names), arrays)
