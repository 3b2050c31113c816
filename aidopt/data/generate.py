"""``aidopt generate MODEL``: a synthetic instance as a table, from declared options and a seed."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from aidopt.common.options import Option

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Generator"]


@dataclass(frozen=True)
class Generator:
    """``make(seed=..., **options)`` returns the instance as a DataFrame (features and, when the
    model has one, the target column); ``options`` are declared like a model's."""

    make: Callable[..., pd.DataFrame]
    options: tuple[Option, ...]
    help: str = ""
