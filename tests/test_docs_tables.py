"""Tables of the docs that are generated from the runs under docs/results/ hold exactly what the
generator prints from those CSVs (issue 58: result tables as data, not hand-copied prose)."""

from __future__ import annotations

import runpy
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_s3vm_aid5_summary_is_the_csvs():
    generator = runpy.run_path(str(ROOT / "docs/results/s3vm/aid5_1800/summary.py"))
    table = generator["summary"]()
    assert table in (ROOT / "docs/s3vm.md").read_text(encoding="utf-8")
