"""The documentation site (MkDocs, mkdocs.yml) builds with no warning (``strict``), and every
public class, function and method of the modules of its API reference has a docstring."""

from __future__ import annotations

import importlib
import inspect
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _api_modules() -> list[str]:
    text = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    names = re.findall(r"^::: ([\w.]+)", text, re.M)
    modules = set()
    for name in names:
        parts = name.split(".")
        for cut in range(len(parts), 0, -1):
            try:
                importlib.import_module(".".join(parts[:cut]))
            except ImportError:
                continue
            modules.add(".".join(parts[:cut]))
            break
    return sorted(modules)


def test_every_public_object_of_the_api_reference_has_a_docstring():
    missing = []
    for name in _api_modules():
        module = importlib.import_module(name)
        for attr in getattr(module, "__all__", []):
            obj = getattr(module, attr)
            if not (inspect.isclass(obj) or inspect.isfunction(obj)):
                continue
            if not inspect.getdoc(obj):
                missing.append(f"{name}.{attr}")
            if inspect.isclass(obj) and obj.__module__ == name:
                for key, value in vars(obj).items():
                    function = value.fget if isinstance(value, property) else value
                    if key.startswith("_") or not inspect.isfunction(function):
                        continue
                    if not (function.__doc__ or "").strip():
                        missing.append(f"{name}.{attr}.{key}")
    assert not missing, missing


def test_the_site_builds_without_a_warning(tmp_path):
    pytest.importorskip("mkdocs")
    pytest.importorskip("mkdocstrings")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert "WARNING" not in done.stderr, done.stderr[-3000:]
    api = (tmp_path / "site" / "api" / "index.html").read_text(encoding="utf-8")
    assert "AIDSolver" in api and "verify_result" in api
