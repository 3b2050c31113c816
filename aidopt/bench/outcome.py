"""What a baseline returns to the benchmark harness (the harness times the call and evaluates
the solution with the model)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Outcome"]


@dataclass(frozen=True)
class Outcome:
    """What a baseline may return instead of a bare solution: the solution (None when it has
    none), its status, the fit's seconds when the baseline measures them itself (e.g. inside R),
    and extra numbers for the runs table (``info``, e.g. the share of support vectors)."""

    solution: Any
    status: str = "optimal"
    seconds: float | None = None
    info: dict[str, Any] = field(default_factory=dict)
    message: str = ""
