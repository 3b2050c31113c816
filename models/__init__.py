"""Algebraic models under AID, one module per model (installed as ``aidopt.models``).

Each module defines one :class:`aidopt.core.contract.AggregatedModel` subclass and names it
``MODEL``; the registry (:mod:`aidopt.core.registry`) finds every such module here — a new model is
one new file — and any third-party one through the entry point group ``aidopt.models``.
"""
