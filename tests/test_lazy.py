"""SciPy imported on first use (aidopt.common.lazy)."""

import copy
import json
import pickle
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from aidopt.common.lazy import DeferredModule, issparse, sparse


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo", "lil", "dok", "bsr", "dia"])
@pytest.mark.parametrize("kind", ["matrix", "array"])
def test_issparse_answers_as_scipy_does(fmt, kind):
    x = getattr(sp, f"{fmt}_{kind}")(np.eye(3))
    assert issparse(x) and sp.issparse(x)


@pytest.mark.parametrize(
    "x", [np.eye(3), np.matrix(np.eye(2)), [[1.0]], 3.0, None, spla.aslinearoperator(np.eye(2))]
)
def test_issparse_is_false_for_what_scipy_calls_dense(x):
    assert not issparse(x) and not sp.issparse(x)


def test_the_deferred_module_is_the_module_once_read():
    assert sparse.csr_matrix is sp.csr_matrix
    assert "imported" in repr(sparse)
    missing = DeferredModule("aidopt_no_such_module")
    assert "not imported yet" in repr(missing)
    with pytest.raises(ModuleNotFoundError, match="aidopt_no_such_module"):
        _ = missing.anything


def test_the_deferred_module_copies_and_pickles_as_a_stand_in():
    for twin in (copy.copy(sparse), copy.deepcopy(sparse), pickle.loads(pickle.dumps(sparse))):
        assert isinstance(twin, DeferredModule)
        assert twin.csr_matrix is sp.csr_matrix


def test_importing_aidopt_does_not_import_scipy():
    code = "import sys, aidopt, aidopt.cli; print(sorted(m for m in sys.modules if 'scipy' in m))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_one_blas_thread_reaches_a_blas_loaded_after_the_first_limit():
    """SciPy's OpenBLAS loads with scipy.linalg, now imported on first use: a solver's
    single-thread limit must still reach it when aidopt scanned the BLAS libraries before."""
    code = (
        "import json, numpy, threadpoolctl; "
        "from aidopt.common.threads import single_thread_blas\n"
        "with single_thread_blas(): pass\n"
        "import scipy.linalg\n"
        "with single_thread_blas():\n"
        "    blas = [i for i in threadpoolctl.threadpool_info() if i['user_api'] == 'blas']\n"
        "print(json.dumps([(i['filepath'], i['num_threads']) for i in blas]))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert any("scipy" in path and "openblas" in path for path, _ in found), found
    assert all(threads == 1 for _, threads in found), found
