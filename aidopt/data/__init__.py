"""Data: the containers each model takes, reading tables, and the paper's synthetic instances."""

from aidopt.data.containers import (
    BinaryData,
    FeatureData,
    PositiveUnlabeledData,
    RegressionData,
    SemiSupervisedData,
)
from aidopt.data.io import feature_matrix, read_table, target_column

__all__ = [
    "BinaryData",
    "FeatureData",
    "PositiveUnlabeledData",
    "RegressionData",
    "SemiSupervisedData",
    "feature_matrix",
    "read_table",
    "target_column",
]
