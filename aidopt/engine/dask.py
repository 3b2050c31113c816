"""The Dask engine: blocks of rows on Dask workers, read from Parquet in every pass.

A block is one row group of one Parquet part (or a chunk of in-memory / Dask arrays). Every
kernel of a pass is one task per block, run on the block's home worker (the same in every pass);
its new states are futures that stay on that worker, and only the kernel's small result is
gathered. Blocks read from Parquet are not persisted unless asked (``persist=True``): every pass
re-reads them, so the workers' memory holds the labels and regimes (1–4 bytes per row each, in
their own memory maps) but never the data — what lets n × m exceed the machine's memory.

Fault tolerance is Dask's: every Parquet block and every state is a task with its inputs, so
when a worker is lost mid-pass the scheduler recomputes what it held from the lineage (reading
the parts again) and the pass — and the run's answer — is unchanged. (Blocks of in-memory data,
:meth:`DaskBlocks.from_data`, are scattered, and Dask cannot recompute scattered data.) A part
that cannot be read is a :class:`~aidopt.exceptions.DataError` naming the file.
"""

from __future__ import annotations

import dataclasses
import mmap
import operator
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np

from aidopt.common.deadline import TimeLimitReached, check, remaining
from aidopt.engine.blocks import (
    Blocks,
    block_of_rows,
    block_of_rows_indexed,
    concatenate_rows,
    row_blocks,
)
from aidopt.exceptions import AidoptError, DataError

__all__ = ["DaskBlocks", "ParquetRowGroup", "local_client"]


#: set in the workers before they start: large buffers from the heap, kept when freed — each
#: pass allocates the same block-sized buffers again, and fresh pages cost more than the pass (a
#: read-and-X@b pass over 10^7 × 20 in 40 row groups on 2 workers: 6.2–7.2 s with Dask's
#: defaults, 2.3–3.2 s with these) — and Arrow's buffers from its own pool (mimalloc), not from
#: that heap: reading row group after row group through glibc fragmented the kept heap to
#: ~0.6 GB per worker at 10^7 rows, against ~0.1 GB with the pool, at the same speed
WORKER_ENV = {
    "MALLOC_MMAP_THRESHOLD_": 1 << 32,
    "MALLOC_TRIM_THRESHOLD_": 1 << 32,
    "ARROW_DEFAULT_MEMORY_POOL": "mimalloc",
}
#: states this large (a block's labels or regimes) live outside the heap (:func:`_off_heap`);
#: smaller ones stay in it (a map per tiny block would use up the kernel's memory maps)
_OFF_HEAP_BYTES = 1 << 16


def local_client(
    scheduler: str | None = None, *, processes: bool = True, workers: int | None = None
):
    """A Dask client: of the cluster at ``scheduler`` (an address), or of a new
    ``LocalCluster`` (one single-threaded worker per core: the kernels are numpy calls that
    hold the GIL for short stretches only)."""
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise DataError(
            "The dask engine needs the packages 'dask' and 'distributed': "
            "pip install 'aidopt[scale]'."
        ) from None
    if scheduler is not None:
        try:
            return Client(scheduler, timeout="10s")
        except OSError as exc:
            raise DataError(f"No Dask scheduler answers at {scheduler}: {exc}") from None
    import dask

    n = workers or max(1, os.cpu_count() or 1)
    dask.config.set({f"distributed.nanny.pre-spawn-environ.{k}": v for k, v in WORKER_ENV.items()})
    cluster = LocalCluster(
        n_workers=n, threads_per_worker=1, processes=processes, dashboard_address=":0"
    )
    return Client(cluster)


@dataclass(frozen=True)
class ParquetRowGroup:
    """Row group ``group`` of the Parquet file ``path``, read as the model's data type."""

    path: str
    group: int
    data_type: Any
    target: str | None
    #: what every block must know of all rows (the data type's ``shared_options``)
    options: tuple[tuple[str, Any], ...] = ()

    def load(self) -> Any:
        from aidopt.data.parquet import arrow_table, read_part

        table = arrow_table(read_part(self.path, self.group))
        try:
            return self.data_type.from_frame(table, self.target, **dict(self.options))
        except AidoptError as exc:
            raise DataError(f"Parquet part {self.path} (row group {self.group}): {exc}") from None

    def distinct_targets(self) -> Any:
        """The distinct values of the target column in this row group (that column read)."""
        from aidopt.data.io import target_column
        from aidopt.data.parquet import arrow_table, read_part

        assert self.target is not None, "a target column to read"
        table = arrow_table(read_part(self.path, self.group, columns=[self.target]))
        try:
            values = target_column(table, self.target)
        except AidoptError as exc:
            raise DataError(f"Parquet part {self.path} (row group {self.group}): {exc}") from None
        return np.unique(values) if values.dtype != object else np.array(list(set(values)), object)


def _load(source: Any) -> Any:
    return source.load() if isinstance(source, ParquetRowGroup) else source


def _apply(kernel, source, offset, args, *states):
    new, result = kernel(None if source is None else _load(source), offset, *states, *args)
    return tuple(_off_heap(state) for state in new), result


def _off_heap(state: Any) -> Any:
    """A state array moved to its own anonymous memory map, outside malloc's heap: the workers
    keep freed heap memory for the next pass's block buffers (``WORKER_ENV``), and long-lived
    states scattered through that heap would keep it growing; a state dropped returns its pages
    at once."""
    if not isinstance(state, np.ndarray) or state.nbytes < _OFF_HEAP_BYTES:
        return state
    try:
        pages = mmap.mmap(-1, state.nbytes)
    except OSError:  # out of memory maps (vm.max_map_count): the heap will do
        return state
    out = np.frombuffer(pages, dtype=state.dtype).reshape(state.shape)
    out[...] = state
    return out


def _state(out, j):
    return out[0][j]


def _wait_within_deadline(futures: list[Any], client: Any) -> None:
    """Wait for a pass until the run's deadline: past it, the pass is cancelled and
    :class:`~aidopt.common.deadline.TimeLimitReached` raised (the run's time limit holds within a
    pass, not only between them)."""
    from dask.distributed import wait

    check("a data pass on Dask")
    left = remaining()
    try:
        wait(futures, timeout=left)
    except TimeoutError:
        client.cancel(futures)
        check("a data pass on Dask")
        raise TimeLimitReached("time limit reached during a data pass on Dask") from None


def _identity(value):
    return value


def _take(block, offset, rows):
    return (), block_of_rows_indexed(block, rows - offset)


class DaskBlocks(Blocks):
    """Blocks on a Dask cluster (see the module docstring)."""

    def __init__(
        self,
        client: Any,
        sources: list[Any],
        sizes: list[int],
        header: Any,
        description: str,
    ) -> None:
        self.client = client
        self.header = header
        self._sources = sources
        self.sizes = np.asarray(sizes, dtype=np.int64)
        self.offsets = np.concatenate([[0], np.cumsum(self.sizes)[:-1]]).astype(np.int64)
        self._description = description
        self._state: dict[str, list[Any]] = {}

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_parquet(
        cls,
        client: Any,
        path: str | Path,
        data_type: Any,
        target: str | None,
        *,
        persist: bool = False,
    ) -> DaskBlocks:
        """One block per row group of every part of ``path`` (a file, a directory, a glob);
        the first row group is read here, to check the columns and name the features. A data
        type whose blocks must agree on something only all rows tell (``shared_options``: an
        SVM's two classes) gets it from a first pass over the target column."""
        from aidopt.data.parquet import check_columns, open_part, parquet_parts

        parts = parquet_parts(path)
        sources, sizes, first_names = [], [], cast(list[str] | None, None)
        for part in parts:
            meta = open_part(part)
            names = meta.schema_arrow.names
            if first_names is None:
                first_names = names
            check_columns(part, names, parts[0], first_names)
            for group in range(meta.num_row_groups):
                rows = meta.metadata.row_group(group).num_rows
                if rows:
                    sources.append(ParquetRowGroup(str(part), group, data_type, target))
                    sizes.append(rows)
        if not sources:
            raise DataError(f"Data {path} has columns but no rows.")
        shared = getattr(data_type, "shared_options", None)
        if shared is not None and target is not None and first_names is not None:
            if target not in first_names:
                import pandas as pd

                from aidopt.data.io import target_column

                target_column(pd.DataFrame(columns=first_names), target)  # the named error
            found = client.gather(client.map(ParquetRowGroup.distinct_targets, sources))
            options = tuple(shared(np.concatenate(found)).items())
            sources = [dataclasses.replace(source, options=options) for source in sources]
        first = sources[0].load()
        if persist:
            sources = client.map(_load, sources, pure=False)
        description = f"dask engine, {len(sizes)} row group(s) of {path}"
        return cls(client, sources, sizes, block_of_rows(first, 0, 0), description)

    @classmethod
    def from_data(cls, client: Any, data: Any, chunk_rows: int) -> DaskBlocks:
        """Blocks of ``chunk_rows`` rows of an in-memory data object, scattered to the workers."""
        blocks = row_blocks(data, chunk_rows)
        sources = client.scatter(blocks)
        return cls(
            client,
            sources,
            [b.n for b in blocks],
            block_of_rows(data, 0, 0),
            f"dask engine, {len(blocks)} block(s) of ≤ {blocks[0].n} rows",
        )

    # ------------------------------------------------------------------ passes
    def _run(self, kernel, args, reads, writes, data):
        client = self.client
        shared = client.submit(_identity, args, pure=False)
        homes = self._homes()
        outs = []
        for b in range(self.n_blocks):
            states = [self._state[name][b] for name in reads]
            source = self._sources[b] if data else None
            home = {"workers": homes[b % len(homes)], "allow_other_workers": True} if homes else {}
            outs.append(
                client.submit(
                    _apply,
                    kernel,
                    source,
                    int(self.offsets[b]),
                    shared,
                    *states,
                    **home,
                    pure=False,
                )
            )
        for j, name in enumerate(writes):
            self._state[name] = [client.submit(_state, out, j, pure=False) for out in outs]
        results = client.map(operator.itemgetter(1), outs, pure=False)
        _wait_within_deadline(results, client)
        return client.gather(results)

    def _homes(self) -> list[str]:
        """The worker of block b is ``homes[b % len(homes)]`` (a worker once per thread; none
        while the cluster has no worker): the same in every pass while the workers stay, so a
        block's states stay where they were made. Left to itself the scheduler sent a pass's
        tasks towards the worker holding the pass's arguments (up to a 64 MB table of ranks)
        while the other fetched them, moving the blocks' states: ~1 GB of transfers in a run at
        10^8 rows. A restriction, not a binding: when a worker is lost, or idle beside a busy
        one, the task runs elsewhere (Dask's stealing)."""
        return [w for w, threads in sorted(self.client.nthreads().items()) for _ in range(threads)]

    def _take(self, rows):
        at = np.searchsorted(self.offsets, rows, side="right") - 1
        parts = []
        for b in np.unique(at):
            picked = rows[at == b]
            parts.append(
                self.client.submit(
                    _apply, _take, self._sources[b], int(self.offsets[b]), (picked,), pure=False
                )
            )
        _wait_within_deadline(parts, self.client)
        blocks = [result for _, result in self.client.gather(parts)]
        return concatenate_rows(blocks)

    def describe(self) -> str:
        return self._description
