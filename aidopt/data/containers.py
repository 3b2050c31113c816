"""The data a model takes, validated once at the boundary, one container per learning setting.

=====================  ======================================================  =================
container              target                                                  models
=====================  ======================================================  =================
RegressionData         a number per row                                        lad, quantile
BinaryData             two classes, mapped to ±1 (sorted order, as sklearn)    svm
PositiveUnlabeledData  1 = labeled positive, 0 = unlabeled                     pu
SemiSupervisedData     two classes on labeled rows, empty (NaN) on the others  s3vm, cuts3vm
FeatureData            none                                                    ocsvm
=====================  ======================================================  =================

Each has ``from_arrays`` (numpy/scipy input, with feature names) and ``from_frame`` (a table and
the name of its target column, as the command line reads CSV files), ``n`` rows, ``m`` features.
Errors name the problem: shapes, NaN/inf, a missing or non-numeric column, a single class.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from aidopt.common.lazy import issparse
from aidopt.common.lazy import sparse as sp
from aidopt.common.validation import (
    check_feature_names,
    check_matrix,
    check_row_weights,
    check_vector,
)
from aidopt.data.io import Table, feature_matrix, is_numeric, missing, target_column
from aidopt.exceptions import DataError
from aidopt.numerics.rounding import sum_relative_error

__all__ = [
    "BinaryData",
    "FeatureData",
    "PositiveUnlabeledData",
    "RegressionData",
    "SemiSupervisedData",
]


class _Rows:
    """n and m of a container holding X, and X with its rows weighted."""

    X: Any

    @cached_property
    def weighted_X(self) -> Any:
        """Rows w_i x_i (X itself when the container has no row weights); one object per
        container, so that :meth:`aidopt.core.partition.Partition.sums` re-sums only split
        clusters."""
        w = getattr(self, "weight", None)
        if w is None:
            return self.X
        return sp.csr_matrix(sp.diags(w) @ self.X) if issparse(self.X) else self.X * w[:, None]

    @cached_property
    def row_weights(self) -> NDArray[np.float64]:
        """w_i of every row (1 when the container has no row weights)."""
        w = getattr(self, "weight", None)
        return np.ones(self.n) if w is None else w

    @cached_property
    def unit_weight(self) -> NDArray[np.float64]:
        """[w_i = 1] per row, as floats: its cluster sums tell whether a cluster's total weight
        is an exact integer (one object per container, re-summed for split clusters only)."""
        return (self.row_weights == 1.0).astype(np.float64)

    @property
    def weight_sums_error(self) -> float:
        """A bound on the relative rounding error of a float sum of any of the rows' weights, in
        any order (0 without row weights: counts are exact):
        :func:`aidopt.numerics.rounding.sum_relative_error` of n."""
        return 0.0 if getattr(self, "weight", None) is None else sum_relative_error(self.n)

    @property
    def total_weight(self) -> float:
        """Σ_i w_i (the number of rows without row weights)."""
        w = getattr(self, "weight", None)
        return float(self.n) if w is None else math.fsum(w)

    @property
    def n(self) -> int:
        return int(self.X.shape[0])

    @property
    def m(self) -> int:
        return int(self.X.shape[1])


def _python(value: Any) -> Any:
    """A numpy scalar as the plain Python value (for JSON)."""
    return value.item() if isinstance(value, np.generic) else value


@dataclass(frozen=True, eq=False)
class FeatureData(_Rows):
    """Features only: X (n × m); optionally row weights w > 0 (as :class:`RegressionData`)."""

    X: NDArray[np.float64]
    feature_names: tuple[str, ...]
    target_name: str | None = None
    weight: NDArray[np.float64] | None = None
    target: ClassVar[str] = "none"

    @classmethod
    def from_arrays(
        cls,
        X: ArrayLike,
        feature_names: list[str] | None = None,
        *,
        weight: ArrayLike | None = None,
    ) -> FeatureData:
        X = check_matrix(X, "X")
        return cls(
            X=X,
            feature_names=check_feature_names(feature_names, X.shape[1]),
            weight=check_row_weights(weight, X.shape[0]),
        )

    @classmethod
    def from_frame(cls, frame: Table, target: str | None = None) -> FeatureData:
        """Every column is a feature; a ``target`` column, if named, is left out."""
        if target is not None:
            target_column(frame, target)  # a named column must exist
        X, names = feature_matrix(frame, target)
        return cls.from_arrays(X, names)


@dataclass(frozen=True, eq=False)
class RegressionData(_Rows):
    """Regression data: X (n × m) and y (n,), validated (finite, numeric, matching lengths);
    optionally row weights w (n,) > 0: the loss of row i counts w_i times (a model that takes
    them says so, ``supports_weights``; the others refuse weighted data)."""

    X: NDArray[np.float64]
    y: NDArray[np.float64]
    feature_names: tuple[str, ...]
    target_name: str = "y"
    weight: NDArray[np.float64] | None = None
    target: ClassVar[str] = "required"

    @classmethod
    def from_arrays(
        cls,
        X: ArrayLike,
        y: ArrayLike,
        feature_names: list[str] | None = None,
        target_name: str = "y",
        *,
        weight: ArrayLike | None = None,
    ) -> RegressionData:
        X = check_matrix(X, "X", accept_sparse=True)
        y = check_vector(y, X.shape[0], "y")
        names = check_feature_names(feature_names, X.shape[1])
        w = check_row_weights(weight, X.shape[0])
        return cls(X=X, y=y, feature_names=names, target_name=target_name, weight=w)

    @cached_property
    def weighted_y(self) -> NDArray[np.float64]:
        """w_i y_i (y itself without row weights)."""
        return self.y if self.weight is None else self.y * self.weight

    @classmethod
    def from_frame(cls, frame: Table, target: str | None) -> RegressionData:
        if target is None:
            raise DataError("A regression needs a target column (--target).")
        y = target_column(frame, target)
        if not is_numeric(y):
            raise DataError(f"Target column {target!r} is not numeric.")
        X, names = feature_matrix(frame, target)
        return cls.from_arrays(X, y, names, target)


@dataclass(frozen=True, eq=False)
class BinaryData(_Rows):
    """Two-class data: X (n × m) and labels y ∈ {−1, +1} (n,); optionally row weights w > 0
    (as :class:`RegressionData`).

    ``classes`` holds the original label values: ``classes[0]`` is mapped to −1 and
    ``classes[1]`` to +1 (sorted order, as scikit-learn's ``classes_``).
    """

    X: NDArray[np.float64]
    y: NDArray[np.float64]
    classes: tuple[Any, Any]
    feature_names: tuple[str, ...]
    target_name: str = "y"
    weight: NDArray[np.float64] | None = None
    target: ClassVar[str] = "required"

    @classmethod
    def from_arrays(
        cls,
        X: ArrayLike,
        y: ArrayLike,
        feature_names: list[str] | None = None,
        target_name: str = "y",
        *,
        weight: ArrayLike | None = None,
        classes: tuple[Any, Any] | None = None,
    ) -> BinaryData:
        """Validate X and map a label vector with exactly two distinct values to ±1; with
        ``classes`` (the two values of all rows, for a block of them): ``classes[0]`` → −1,
        ``classes[1]`` → +1, and any other value is an error."""
        X = check_matrix(X, "X", accept_sparse=True)
        labels = np.asarray(y)
        if labels.ndim == 2 and labels.shape[1] == 1:
            labels = labels[:, 0]
        if labels.ndim != 1:
            raise DataError(f"y must be a 1-D array of labels, got shape {labels.shape}.")
        if labels.shape[0] != X.shape[0]:
            raise DataError(f"X has {X.shape[0]} rows but y has {labels.shape[0]} entries.")
        if classes is None:
            classes = cls.shared_options(labels)["classes"]
        elif missing(labels).any():
            cls.shared_options(labels)  # the named error
        positive = labels == classes[1]
        other = ~positive & (labels != classes[0])
        if other.any():
            raise DataError(
                f"y has the label {_python(labels[np.flatnonzero(other)[0]])!r}, neither of "
                f"the two classes {classes[0]!r}, {classes[1]!r} of the other rows."
            )
        names = check_feature_names(feature_names, X.shape[1])
        return cls(
            X=X,
            y=np.where(positive, 1.0, -1.0),
            classes=classes,
            feature_names=names,
            target_name=target_name,
            weight=check_row_weights(weight, X.shape[0]),
        )

    @classmethod
    def shared_options(cls, labels: ArrayLike) -> dict[str, Any]:
        """What every block of rows must know of all rows' labels (the distinct values, or all
        labels, in ``labels``): {"classes": their two values in sorted order}; NaN or other
        than two values is an error."""
        labels = np.asarray(labels)
        absent = missing(labels)
        if absent.any():
            raise DataError(
                f"y contains {int(absent.sum())} missing (NaN) labels, first at index "
                f"{int(np.flatnonzero(absent)[0])}."
            )
        try:
            classes = np.unique(labels)
        except TypeError:  # mixed types that cannot be sorted
            raise DataError("y mixes label types that cannot be compared.") from None
        if classes.size != 2:
            shown = ", ".join(repr(_python(c)) for c in classes[:10])
            more = ", ..." if classes.size > 10 else ""
            raise DataError(
                "An SVM needs labels with exactly two distinct values; y has "
                f"{classes.size} ({shown}{more})."
            )
        return {"classes": (_python(classes[0]), _python(classes[1]))}

    @classmethod
    def from_frame(
        cls, frame: Table, target: str | None, *, classes: tuple[Any, Any] | None = None
    ) -> BinaryData:
        if target is None:
            raise DataError("A two-class model needs a target (label) column (--target).")
        y = target_column(frame, target)
        X, names = feature_matrix(frame, target)
        return cls.from_arrays(X, y, names, target, classes=classes)

    def label_mapping(self) -> dict[str, Any]:
        """{"-1": original value, "+1": original value}."""
        return {"-1": self.classes[0], "+1": self.classes[1]}


@dataclass(frozen=True, eq=False)
class PositiveUnlabeledData(_Rows):
    """PU data: X (N × d, dense or CSR) and the mask of the labeled positives (the rest is
    unlabeled); optionally row weights w > 0 (as :class:`RegressionData`). A block of the rows
    of a larger data set may hold only positives or only unlabeled rows; the whole may not."""

    X: NDArray[np.float64]
    labeled: NDArray[np.bool_]
    feature_names: tuple[str, ...]
    target_name: str = "s"
    weight: NDArray[np.float64] | None = None
    target: ClassVar[str] = "required"

    def __post_init__(self) -> None:
        if self.labeled.shape != (self.X.shape[0],):
            raise DataError(
                f"X has shape {self.X.shape} but labeled has shape {self.labeled.shape}."
            )

    @staticmethod
    def _check_both(labeled: NDArray[np.bool_]) -> None:
        if not labeled.any():
            raise DataError(
                "No labeled positives (target = 1): PU learning needs at least one labeled "
                "positive row."
            )
        if labeled.all():
            raise DataError(
                "No unlabeled rows (target = 0): PU learning needs at least one unlabeled row."
            )

    @classmethod
    def from_arrays(
        cls,
        X: ArrayLike,
        labeled: ArrayLike,
        feature_names: list[str] | None = None,
        target_name: str = "s",
        *,
        weight: ArrayLike | None = None,
        block: bool = False,
    ) -> PositiveUnlabeledData:
        """Validate X (finite numbers; scipy.sparse kept as CSR) and the 0/1 (or bool) labels:
        1 = labeled positive; both present, unless the rows are a ``block`` of a larger
        data set (checked as a whole by :meth:`shared_options`)."""
        X = check_matrix(X, "X", accept_sparse=True)
        s = np.asarray(labeled)
        if s.ndim != 1 or s.shape[0] != X.shape[0]:
            raise DataError(f"X has shape {X.shape} but the labels have shape {s.shape}.")
        if s.dtype != bool:
            if not (np.issubdtype(s.dtype, np.number) and np.isin(s, (0, 1)).all()):
                import pandas as pd

                values = pd.unique(pd.Series(s))
                shown = ", ".join(map(repr, values[:10].tolist()))
                raise DataError(
                    "The PU target must be 1 (labeled positive) or 0 (unlabeled); "
                    f"found the values {{{shown}}}."
                )
            s = s == 1
        if not block:
            cls._check_both(s)
        names = check_feature_names(feature_names, X.shape[1])
        return cls(
            X=X,
            labeled=np.ascontiguousarray(s),
            feature_names=names,
            target_name=target_name,
            weight=check_row_weights(weight, X.shape[0]),
        )

    @classmethod
    def from_frame(
        cls, frame: Table, target: str | None, *, block: bool = False
    ) -> PositiveUnlabeledData:
        if target is None:
            raise DataError(
                "PU learning needs a target column (1 = labeled positive, 0 = unlabeled)."
            )
        s = target_column(frame, target)
        if missing(s).any():
            raise DataError(f"Target column {target!r} has missing values.")
        X, names = feature_matrix(frame, target)
        return cls.from_arrays(X, s, names, target, block=block)

    @classmethod
    def shared_options(cls, values: ArrayLike) -> dict[str, Any]:
        """The target values of all rows (or their distinct values) hold a labeled positive
        and an unlabeled row; every block is then read as a ``block``."""
        values = np.asarray(values)
        cls._check_both(np.isin(values, (1, True)) & ~missing(values))
        return {"block": True}

    @property
    def n_labeled(self) -> int:
        """p, the number of labeled positives."""
        return int(self.labeled.sum())

    @property
    def n_unlabeled(self) -> int:
        """n, the number of unlabeled rows."""
        return self.n - self.n_labeled


_NEG, _POS, _UNL = 0, 1, 2  # entry groups of semi-supervised data


@dataclass(frozen=True, eq=False)
class SemiSupervisedData(_Rows):
    """Features X (n × m, dense or CSR) and labels y: ±1 on labeled rows, 0 on unlabeled rows;
    optionally row weights w > 0 (as :class:`RegressionData`).

    ``classes`` = (value shown as −1, value shown as +1) in the user's target column.
    """

    X: NDArray[np.float64] | sp.csr_matrix
    y: NDArray[np.float64]
    feature_names: tuple[str, ...]
    target_name: str = "y"
    classes: tuple[Any, Any] = (-1, 1)
    weight: NDArray[np.float64] | None = None
    target: ClassVar[str] = "required"

    @classmethod
    def from_arrays(
        cls,
        X: ArrayLike | sp.spmatrix,
        y: ArrayLike,
        feature_names: list[str] | None = None,
        target_name: str = "y",
        *,
        weight: ArrayLike | None = None,
    ) -> SemiSupervisedData:
        """``y`` holds the class of labeled rows and NaN (or None) on unlabeled rows."""
        import pandas as pd

        X = check_matrix(X, "X", accept_sparse=True)
        target = pd.Series(np.asarray(y, dtype=object).ravel())
        if target.shape[0] != X.shape[0]:
            raise DataError(f"X has {X.shape[0]} rows but y has {target.shape[0]} entries.")
        labeled = target.notna().to_numpy()
        if not labeled.any():
            raise DataError("No labeled rows: S3VM needs labeled rows of both classes.")
        if labeled.all():
            raise DataError(
                "No unlabeled rows (an empty target marks one): S3VM needs unlabeled rows; "
                "for labeled data only use a supervised SVM."
            )
        values = pd.unique(target[labeled])
        if len(values) != 2:
            raise DataError(
                f"S3VM needs exactly two classes among the labeled rows; found {len(values)}: "
                f"{sorted(map(str, values))}."
            )
        classes = _class_order(values)
        signed = np.zeros(X.shape[0])
        signed[labeled] = np.where(target[labeled].to_numpy() == classes[1], 1.0, -1.0)
        names = check_feature_names(feature_names, X.shape[1])
        return cls(
            X=X,
            y=signed,
            feature_names=names,
            target_name=target_name,
            classes=classes,
            weight=check_row_weights(weight, X.shape[0]),
        )

    @classmethod
    def from_frame(cls, frame: Table, target: str | None) -> SemiSupervisedData:
        if target is None:
            raise DataError("S3VM needs a target column (empty on unlabeled rows).")
        y = target_column(frame, target)
        X, names = feature_matrix(frame, target)
        return cls.from_arrays(X, y.astype(object), names, target)

    @property
    def labeled(self) -> NDArray[np.bool_]:
        return self.y != 0

    @property
    def group(self) -> NDArray[np.int64]:
        """Group of every entry: 0 labeled −1, 1 labeled +1, 2 unlabeled."""
        return np.where(self.y > 0, _POS, np.where(self.y < 0, _NEG, _UNL)).astype(np.int64)


def _class_order(values) -> tuple[Any, Any]:
    """(−1 value, +1 value): ±1 kept as they are, else the sorted order (0/1 → −1/+1)."""
    as_list = list(values)
    try:
        numeric = sorted(float(v) for v in as_list)
        if numeric == [-1.0, 1.0]:
            return (-1, 1)
        return tuple(sorted(as_list, key=float))  # type: ignore[return-value]
    except (TypeError, ValueError):
        return tuple(sorted(as_list, key=str))  # type: ignore[return-value]
