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


def _svr_parts() -> dict[str, int]:
    """Lines of each part of models/svr.py, as docs/writing-a-model.md names them."""
    import ast

    source = (ROOT / "models" / "svr.py").read_text(encoding="utf-8")
    tree = ast.parse(source)
    doc, *body = tree.body
    imports = [n for n in body if isinstance(n, (ast.Import, ast.ImportFrom))]
    cls = next(n for n in body if isinstance(n, ast.ClassDef))
    methods = [n for n in cls.body if isinstance(n, ast.FunctionDef)]
    header_end = max(n.end_lineno for n in cls.body if not isinstance(n, ast.FunctionDef))
    parts = {
        "docstring": doc.end_lineno - doc.lineno + 1,
        "imports": imports[-1].end_lineno - imports[0].lineno + 1,
        "class": header_end - cls.lineno + 1,
        "MODEL": 1,
    }
    parts |= {m.name: m.end_lineno - m.lineno + 1 for m in methods}
    return parts


def test_the_parts_of_the_svr_in_the_guide_are_its_lines():
    text = (ROOT / "docs" / "writing-a-model.md").read_text(encoding="utf-8")
    table = text.split("## The file, part by part", 1)[1].split("\n\n", 2)[1]
    stated = {
        cells[0]: int(cells[-1])
        for line in table.splitlines()[2:]
        if (cells := [c.strip() for c in line.strip("|").split("|")])
    }
    assert stated == _svr_parts()
    total = len((ROOT / "models" / "svr.py").read_text(encoding="utf-8").splitlines())
    assert f"{total} lines in all" in text
