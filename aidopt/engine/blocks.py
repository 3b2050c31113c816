"""Rows in blocks, each with named per-row state beside it: where a chunked data pass runs.

A :class:`Blocks` holds n entries as consecutive blocks of rows (block b holds the entries
``offsets[b]`` … ``offsets[b] + sizes[b] − 1``), each a data object of the model's type, and
*state slots*: one array per block under a name (the cluster labels of a partition, the regimes
of an evaluation). Everything the driver does with the rows is :meth:`Blocks.run`: a kernel
applied to every block — ``kernel(block, offset, *states, *args) → (new states, result)`` —
whose new states stay beside the blocks and whose (small) results come back, in block order, to
be reduced. Kernels that need no data (relabelling) are run with ``data=False`` and never read
a block.

Two engines:

* :class:`MemoryBlocks` — blocks are views of in-memory arrays (``numpy`` engine, chunked);
* :class:`aidopt.engine.dask.DaskBlocks` — blocks live on Dask workers, read from Parquet parts
  in every pass (or persisted when they fit), states are futures, so a lost worker's part of a
  pass is recomputed by Dask from the lineage.
"""

from __future__ import annotations

import dataclasses
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
from numpy.typing import NDArray

from aidopt.common.deadline import check

__all__ = ["Blocks", "Kernel", "MemoryBlocks"]

#: kernel(block | None, offset, *states, *args) -> (tuple of new states, result)
Kernel = Callable[..., tuple[tuple[Any, ...], Any]]


class Blocks(ABC):
    """n rows × m features in blocks, with per-block state slots (see the module docstring)."""

    #: rows per block, and the first row of each block
    sizes: NDArray[np.int64]
    offsets: NDArray[np.int64]
    #: a data object of the model's type with no rows: m, the names, the classes of all rows
    header: Any
    #: passes over the data so far (kernels that read the blocks), and their seconds
    passes: int = 0
    pass_seconds: float = 0.0
    #: state slot name → one value per block (an array, or a Dask future of one)
    _state: dict[str, list[Any]]

    @property
    def n(self) -> int:
        return int(self.sizes.sum())

    @property
    def m(self) -> int:
        return int(self.header.m)

    @property
    def feature_names(self) -> list[str]:
        return list(self.header.feature_names)

    @property
    def target_name(self) -> str | None:
        return getattr(self.header, "target_name", None)

    @property
    def weighted(self) -> bool:
        """True when the rows carry weights w_i."""
        return getattr(self.header, "weight", None) is not None

    @property
    def n_blocks(self) -> int:
        return int(self.sizes.size)

    def run(
        self,
        kernel: Kernel,
        *args: Any,
        reads: Sequence[str] = (),
        writes: Sequence[str] = (),
        data: bool = True,
    ) -> list[Any]:
        """Apply ``kernel`` to every block; store its new states under ``writes``; return the
        results in block order. ``args`` are the same for every block; ``data`` False: the
        kernel gets None for the block (it works on the states alone, no data is read)."""
        with self._counted(data):
            return self._run(kernel, args, tuple(reads), tuple(writes), data)

    @abstractmethod
    def _run(self, kernel, args, reads, writes, data) -> list[Any]:
        """:meth:`run` on this engine."""

    def take(self, rows: NDArray[np.int64]) -> Any:
        """The entries ``rows`` (sorted global indices) as one in-memory data object (a pass
        over the blocks that hold them)."""
        with self._counted(True):
            return self._take(rows)

    @abstractmethod
    def _take(self, rows: NDArray[np.int64]) -> Any:
        """:meth:`take` on this engine."""

    def drop(self, *slots: str) -> None:
        """Forget the state slots (their memory is freed)."""
        for name in slots:
            self._state.pop(name, None)

    @contextmanager
    def _counted(self, reads_data: bool) -> Iterator[None]:
        """Count a pass over the data and its seconds (a pass on the states alone is free)."""
        start = time.perf_counter()
        try:
            yield
        finally:
            if reads_data:
                self.passes += 1
                self.pass_seconds += time.perf_counter() - start

    def describe(self) -> str:
        return f"{self.n_blocks} block(s)"


def _with_rows(data: Any, rows: Callable[[str, NDArray], NDArray]) -> Any:
    """A data object of ``data``'s type whose per-row arrays (n along the first axis) are
    ``rows(field name, array)``; its other fields (names, options) unchanged."""
    fields = {}
    for f in dataclasses.fields(data):
        value = getattr(data, f.name)
        if isinstance(value, np.ndarray) and value.ndim >= 1 and value.shape[0] == data.n:
            value = rows(f.name, value)
        fields[f.name] = value
    return type(data)(**fields)


def block_of_rows(data: Any, start: int, stop: int) -> Any:
    """Rows start … stop − 1 of an in-memory data object (views, no copies)."""
    return _with_rows(data, lambda _, a: a[start:stop])


def block_of_rows_indexed(data: Any, rows: NDArray[np.int64]) -> Any:
    """The entries ``rows`` of an in-memory data object (copies)."""
    return _with_rows(data, lambda _, a: a[rows])


def concatenate_rows(parts: list[Any]) -> Any:
    """One data object of the rows of ``parts`` (same type, same columns), in order."""
    return _with_rows(parts[0], lambda name, _: np.concatenate([getattr(p, name) for p in parts]))


def row_blocks(data: Any, chunk_rows: int) -> list[Any]:
    """An in-memory data object cut into blocks of ``chunk_rows`` rows (the last shorter)."""
    n = data.n
    step = max(1, min(int(chunk_rows), n))
    return [block_of_rows(data, a, min(a + step, n)) for a in range(0, n, step)]


class MemoryBlocks(Blocks):
    """Blocks of ``chunk_rows`` rows of an in-memory data object (the last one shorter)."""

    def __init__(self, data: Any, chunk_rows: int) -> None:
        self.rows_in_memory = data  # what aidopt.numerics.compiled.dense_entries looks at
        self._blocks = row_blocks(data, chunk_rows)
        self.sizes = np.array([b.n for b in self._blocks], dtype=np.int64)
        self.offsets = np.cumsum(self.sizes) - self.sizes
        self.header = block_of_rows(data, 0, 0)
        self._state: dict[str, list[Any]] = {}

    def _run(self, kernel, args, reads, writes, data):
        results = []
        new: dict[str, list[Any]] = {name: [] for name in writes}
        for b, block in enumerate(self._blocks):
            check("a data pass")  # the run's time limit holds within a block
            states = [self._state[name][b] for name in reads]
            out, result = kernel(block if data else None, int(self.offsets[b]), *states, *args)
            for name, value in zip(writes, out, strict=True):
                new[name].append(value)
            results.append(result)
        self._state.update(new)
        return results

    def _take(self, rows):
        return block_of_rows_indexed(self.rows_in_memory, rows)

    def describe(self) -> str:
        return f"numpy engine, {self.n_blocks} block(s) of ≤ {int(self.sizes.max())} rows"
