"""``aidopt generate MODEL``: a synthetic instance as a table, from declared options and a seed."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd

from aidopt.options import Option

__all__ = ["Generator"]


@dataclass(frozen=True)
class Generator:
    """``make(seed=..., **options)`` returns the instance as a DataFrame (features and, when the
    model has one, the target column); ``options`` are declared like a model's."""

    make: Callable[..., pd.DataFrame]
    options: tuple[Option, ...]
    help: str = ""
