"""Data: reading tables and generating the paper's synthetic instances."""

from aidopt.data.io import feature_matrix, read_table, target_column

__all__ = ["feature_matrix", "read_table", "target_column"]
