"""The in-memory table every reader returns: a pandas DataFrame, or a :class:`NumericTable`
when every column is a number (read without importing pandas)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias

from numpy.typing import NDArray

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["NumericTable", "Table"]


@dataclass(frozen=True)
class NumericTable:
    """A table of numbers: its column names, in order, and one array per column (int64 where
    every field of the column is an integer, as pandas reads it, else float64)."""

    columns: tuple[str, ...]
    arrays: dict[str, NDArray]

    @property
    def shape(self) -> tuple[int, int]:
        return len(self.arrays[self.columns[0]]), len(self.columns)


Table: TypeAlias = "pd.DataFrame | NumericTable"
