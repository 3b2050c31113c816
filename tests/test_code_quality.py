"""The code-quality gates of the architecture issue, run with the tests: ruff (lint and format)
on the whole tree and mypy on every package and model (`[tool.mypy]`)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run(tool: str, *args: str) -> subprocess.CompletedProcess[str]:
    if shutil.which(tool, path=str(Path(sys.executable).parent)) is None:
        pytest.skip(f"{tool} is not installed (pip install -e '.[test]')")
    command = [sys.executable, "-m", tool, *args]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize("args", [("check", "."), ("format", "--check", ".")])
def test_ruff_is_clean(args):
    done = _run("ruff", *args)
    assert done.returncode == 0, done.stdout + done.stderr


def test_mypy_passes_on_every_package(tmp_path):
    done = _run("mypy", "--cache-dir", str(tmp_path / "mypy"))
    assert done.returncode == 0, done.stdout + done.stderr
