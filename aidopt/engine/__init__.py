"""Engines of the data pass: rows in blocks, in memory (numpy) or on Dask (:mod:`.blocks`,
:mod:`.partition`, :mod:`.chunked`, :mod:`.dask`)."""
