"""The rows of ``--data`` in blocks, on the engine the command line names."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from aidopt.engine.blocks import Blocks, MemoryBlocks
from aidopt.exceptions import InvalidParameterError

__all__ = ["ENGINES", "open_blocks"]

ENGINES = ("numpy", "dask")


@contextmanager
def open_blocks(
    model: Any,
    path: str | Path,
    target: str | None,
    *,
    engine: str,
    chunk_rows: int | None,
    scheduler: str | None = None,
    workers: int | None = None,
) -> Iterator[Blocks]:
    """Blocks of the rows of ``path`` for ``model``: ``numpy`` — the file read into memory and
    cut into blocks of ``chunk_rows``; ``dask`` — Parquet parts read by the workers one row
    group per block in every pass (a CSV file is read here and its blocks scattered), on a new
    ``LocalCluster`` or the cluster at ``scheduler``. The client is closed on exit."""
    from aidopt.data.io import read_table
    from aidopt.data.parquet import is_parquet_source

    if chunk_rows is not None and chunk_rows < 1:
        raise InvalidParameterError(f"--chunk-rows must be a positive integer, got {chunk_rows}.")
    if engine == "numpy":
        data = model.data_from_frame(read_table(path), target)
        yield MemoryBlocks(data, chunk_rows or 1 << 20)
        return
    if engine != "dask":
        raise InvalidParameterError(
            f"--engine must be one of {', '.join(ENGINES)}; got {engine!r}."
        )
    from aidopt.engine.dask import DaskBlocks, local_client

    client = local_client(scheduler, workers=workers)
    try:
        if is_parquet_source(path):
            if chunk_rows is not None:
                raise InvalidParameterError(
                    "--chunk-rows cuts in-memory data; the blocks of Parquet data are its row "
                    "groups (write the parts with the row group size you want)."
                )
            yield DaskBlocks.from_parquet(client, path, model.data_type, target)
        else:
            data = model.data_from_frame(read_table(path), target)
            yield DaskBlocks.from_data(client, data, chunk_rows or 1 << 20)
    finally:
        import logging

        logging.getLogger("distributed").setLevel(logging.CRITICAL)  # closing comms is not news
        cluster = client.cluster
        client.close()
        if cluster is not None and scheduler is None:
            cluster.close()
