"""The version of aidopt (pyproject.toml's, kept in step by tests/test_cli.py)."""

__version__ = "0.1.0"
