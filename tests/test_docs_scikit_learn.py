"""Every Python block of docs/scikit-learn.md runs, in order, in one namespace."""

from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[1] / "docs" / "scikit-learn.md"


def test_every_snippet_runs(capsys):
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)
    assert len(blocks) == 4
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, str(DOC), "exec"), namespace)
    assert namespace["best"].status_ == "optimal"
    assert namespace["q90"].status_ == "optimal" and namespace["domain"].status_ == "optimal"
    assert "lower_bound" in capsys.readouterr().out
