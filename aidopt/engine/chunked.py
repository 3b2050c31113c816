"""AID on rows in blocks: the generic driver, unchanged, on a model's chunked data pass.

A model whose per-entry work is a sum over rows declares it per block of rows by subclassing
:class:`~aidopt.core.contract.BlockPass` (the samples and labels of C^0, the columns whose
cluster sums are the aggregate, a block's share of E^t and its regimes, the certificate's terms
per block and the bound from their sums).

:func:`on_blocks` turns a model into one whose four data components (``initial_partition``,
``aggregate``, ``evaluate``, ``lower_bound``) run those hooks on a :class:`~aidopt.engine.blocks.
Blocks` — in memory (numpy) or on Dask — and hands it to the same
:class:`~aidopt.core.driver.AIDSolver`. The solves, the routes and the stopping rules are the
driver's; only centroids, weights and per-cluster tables cross from the blocks to the driver. The
certificate is the model's, summed block by block with every rounding allowance (``terms.total``),
on all rows.

Kernel models stay in memory: their aggregated problem and certificate need the Gram matrix of
the data (or of the support vectors with every row), which is not a sum of per-block vectors of
fixed size.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from aidopt.core.contract import AggregatedModel, BlockPass, Evaluation
from aidopt.engine.blocks import Blocks
from aidopt.engine.partition import BlockPartition, StateRef, small_ints
from aidopt.exceptions import DataError, InvalidParameterError
from aidopt.numerics.rounding import EPS

__all__ = ["on_blocks", "runs_on_blocks", "supports_blocks"]

_SERIAL = itertools.count()


def supports_blocks(model: AggregatedModel | type) -> bool:
    """True when the model declares the chunked data pass (a :class:`BlockPass`)."""
    return issubclass(model if isinstance(model, type) else type(model), BlockPass)


@dataclass(frozen=True)
class Shape:
    """n and m of all rows (what a kernel knows of the rows beyond its block)."""

    n: int
    m: int


# ---------------------------------------------------------------------- kernels (one block)
def _initial_labels(block, offset, model, rule):
    return (model.initial_labels(block, offset, rule),), None


def _evaluate(block, offset, labels, model, solution, whole, duals):
    """A block's evaluation, and the certificate's terms at each dual (the same pass)."""
    ev, terms = model.evaluate_and_bound_rows(block, solution, offset, whole, labels, duals)
    finer = None if ev.split_regime is None else small_ints(ev.split_regime)
    has_finer = finer is not None
    return (small_ints(ev.regime), finer), (ev.objective, ev.objective_error, has_finer, terms)


def _bound_terms(block, offset, labels, model, duals):
    return (), model.cluster_bound_terms(block, labels, duals)


def _stacked(candidates: list, n_clusters: int) -> np.ndarray:
    """The candidate cluster duals (K, ...) stacked along a first axis, q × K × ... (once per
    pass, not per block)."""
    if not candidates:
        return np.zeros((0, n_clusters))
    return np.stack([s for s, _ in candidates])


def _solution_row_sums(block, offset, model, solution):
    return (), model.solution_row_sums(block, solution)


@dataclass(frozen=True, eq=False)
class _BlockTerms:
    """What the evaluation's pass summed for the certificate (``Evaluation.bound_terms``): the
    candidate duals at ``solution``, their context and every block's terms at them."""

    solution: Any
    candidates: list
    context: Any
    per_block: list


class _OnBlocks:
    """Placed before a model class by :func:`on_blocks`: the data components on blocks."""

    _plain: Any  # the model itself (an AggregatedModel and a BlockPass), what the kernels get
    _evaluation_slots: tuple[str, ...]  # the slots of the last evaluation's regimes

    def check_data(self, data: Blocks) -> None:
        if not isinstance(data, Blocks):
            raise DataError(f"{type(self).__name__} runs on rows in blocks; got {type(data)}.")
        super().check_data(data)  # type: ignore[misc]

    def check_weights(self, data: Blocks) -> None:
        if data.weighted and not self.supports_weights:  # type: ignore[attr-defined]
            raise DataError(
                f"The {self.name} model does not take row weights; "  # type: ignore[attr-defined]
                "fit it on unweighted data."
            )

    def initial_partition(
        self, data: Blocks, rate: float, rng: np.random.Generator
    ) -> BlockPartition:
        """The model's rule fitted on a random sample, then one pass labelling every block."""
        plain = self._plain
        size = plain.initial_sample_size(data)  # type: ignore[attr-defined]
        sample = data.take(np.sort(rng.choice(data.n, size=size, replace=False)))
        rule = plain.initial_rule(sample, Shape(data.n, data.m), rate)  # type: ignore[attr-defined]
        slot = f"initial{next(_SERIAL)}"
        data.run(_initial_labels, plain, rule, writes=(slot,))
        return BlockPartition.from_block_labels(data, slot)

    def aggregate(self, data: Blocks, partition: BlockPartition, *, previous: Any = None) -> Any:
        """Cluster sums of the model's columns: one pass."""
        plain = self._plain
        sums = partition.cluster_sums(plain.cluster_columns)  # type: ignore[attr-defined]
        return plain.aggregate_from_sums(sums, partition)

    def evaluate(self, data: Blocks, solution: Any, *, aggregate: Any = None) -> Evaluation:
        """E^t summed over the blocks (block sums added exactly, the total rounded once); the
        regimes stay beside the blocks (an evaluation's slots replace the previous one's).
        The same pass sums the certificate's terms at the model's candidate duals, which the
        aggregated data and the solution fix already: :meth:`lower_bound` needs no pass."""
        regime, finer = f"regime{next(_SERIAL)}", f"finer{next(_SERIAL)}"
        data.drop(*self._evaluation_slots)
        self._evaluation_slots = (regime, finer)
        whole = Shape(data.n, data.m)
        candidates, context = self._candidates(data, solution, aggregate)
        duals = _stacked(candidates, solution.partition.n_clusters)
        found = data.run(
            _evaluate,
            self._plain,
            solution,
            whole,
            duals,
            reads=(solution.partition.slot,),
            writes=(regime, finer),
        )
        objective = math.fsum(value for value, *_ in found)
        error = math.fsum(err for _, err, *_ in found) * (1 + 2 * EPS) + EPS * abs(objective)
        has_finer = any(f for _, _, f, _ in found)
        if has_finer and not all(f for _, _, f, _ in found):
            raise ValueError("evaluate_rows gave a split regime for some blocks only")
        return Evaluation(
            objective,
            StateRef(regime),  # type: ignore[arg-type]
            StateRef(finer) if has_finer else None,  # type: ignore[arg-type]
            error,
            _BlockTerms(solution, candidates, context, [terms for *_, terms in found]),
        )

    def lower_bound(self, data, solution, evaluation, upper, dual=None, *, aggregate=None):
        """The model's certificate at each of its candidate dual points, every block's terms
        summed in one pass over the rows; the best bound."""
        if dual is not None:
            raise InvalidParameterError(
                "a bound at a given dual point needs the rows in memory (aidopt verify)"
            )
        part = solution.partition
        read = evaluation.bound_terms
        if isinstance(read, _BlockTerms) and read.solution is solution:
            candidates, context, per_block = read.candidates, read.context, read.per_block
        else:  # not the solution just evaluated: its own pass
            candidates, context = self._candidates(data, solution, aggregate)
            duals = _stacked(candidates, part.n_clusters)
            per_block = data.run(_bound_terms, self._plain, duals, reads=(part.slot,))
        plain = self._plain
        bounds = []
        for j, (_, what) in enumerate(candidates):
            blocks = [terms[j] for terms in per_block]
            total = type(blocks[0]).total(blocks)
            bounds.append(
                plain.bound_from_terms(  # type: ignore[attr-defined]
                    total,
                    context,
                    part.n_clusters,
                    upper,
                    f"{what} spread over the entries, on all data ({data.describe()})",
                    data.feature_names,
                )
            )
        return max((b for b in bounds if b is not None), key=lambda b: b.value, default=None)

    def solution_to_dict(self, data: Blocks, solution: Any) -> dict[str, Any]:
        """The model's description of the solution, on the blocks' header (names, classes);
        a model that describes it by sums over the rows (``solution_row_sums``: an SVM's
        training accuracy) gets them summed over every block (one pass)."""
        plain = self._plain
        if not plain.describes_by_row_sums:
            return plain.solution_to_dict(data.header, solution)
        sums = data.run(_solution_row_sums, plain, solution)
        return plain.solution_to_dict(  # type: ignore[call-arg]
            data.header, solution, row_sums=np.sum(sums, axis=0)
        )

    def _candidates(self, data: Blocks, solution: Any, aggregate: Any) -> tuple[list, Any]:
        """The model's candidate duals (and their context) from the aggregated data of the
        solution's clusters (``aggregate``, when it is theirs; else summed again)."""
        agg = self.aggregate_of(data, solution.partition, aggregate)  # type: ignore[attr-defined]
        return self._plain.bound_candidates(agg, solution)


_CLASSES: dict[type, type] = {}


def runs_on_blocks(model: AggregatedModel) -> bool:
    """True for a model made by :func:`on_blocks`."""
    return isinstance(model, _OnBlocks)


def on_blocks(model: AggregatedModel) -> AggregatedModel:
    """The model, with its data components run on a :class:`Blocks` (see the module
    docstring): an instance of a subclass of the model's class, with the same option values,
    so that the registry's routes and solvers see the same model."""
    cls = type(model)
    if not supports_blocks(cls):
        kind = model.summary().get("kernel")  # the kernel's kind, for a kernel model
        what = f"with the {kind} kernel " if kind not in (None, "linear") else ""
        raise InvalidParameterError(
            f"The {model.name} model {what}has no chunked data pass (only the linear models do: "
            "a BlockPass): rows in blocks (--engine, --chunk-rows) take the linear kernel; give "
            "this model all rows in memory (leave out --engine and --chunk-rows)."
        )
    cast(BlockPass, model).check_blocks()  # a setting that needs every row at once
    made = _CLASSES.get(cls)
    if made is None:
        made = _CLASSES[cls] = type(f"{cls.__name__}OnBlocks", (_OnBlocks, cls), {})
    out: Any = object.__new__(made)
    out.__dict__.update(model.__dict__)
    out._plain = model
    out._evaluation_slots = ()
    return out
