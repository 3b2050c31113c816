"""The command line's allocator setting (aidopt.common.memory)."""

import subprocess
import sys

import pytest


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator")
def test_command_line_processes_keep_freed_memory_in_the_heap():
    """After keep_freed_memory (what `aidopt` runs first), an 80 MB array comes from glibc's
    heap, whose freed pages the next one reuses, instead of a mapping of its own."""
    code = (
        "import sys, numpy as np\n"
        "from aidopt.common.memory import keep_freed_memory\n"
        "kept = keep_freed_memory() if sys.argv[1] == '1' else False\n"
        "a = np.ones(10_000_000)\n"
        "heap = 0\n"
        "for line in open('/proc/self/maps'):\n"
        "    if '[heap]' in line:\n"
        "        start, end = (int(x, 16) for x in line.split()[0].split('-'))\n"
        "        heap += end - start\n"
        "print(kept, heap >= a.nbytes)\n"
    )
    run = [
        subprocess.run([sys.executable, "-c", code, flag], capture_output=True, text=True)
        for flag in ("1", "0")
    ]
    kept, plain = (r.stdout.split() for r in run)
    if kept[0] == "False":
        pytest.skip("not glibc")
    assert kept == ["True", "True"]
    assert plain == ["False", "False"]  # glibc's default: a mapping of its own


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux's huge pages")
@pytest.mark.parametrize("numpy_switch", [None, "1"])
def test_command_line_processes_ask_numpy_for_small_pages_unless_told(numpy_switch):
    """keep_freed_memory turns numpy's huge-page advice off; NUMPY_MADVISE_HUGEPAGE, numpy's
    own switch, wins when set."""
    import os

    from numpy._core import multiarray

    if not hasattr(multiarray, "_get_madvise_hugepage"):
        pytest.skip("this numpy has no huge-page switch")
    code = (
        "from numpy._core import multiarray\n"
        "from aidopt.common.memory import keep_freed_memory\n"
        "before = multiarray._get_madvise_hugepage()\n"
        "keep_freed_memory()\n"
        "print(before, multiarray._get_madvise_hugepage())\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "NUMPY_MADVISE_HUGEPAGE"}
    env.pop("AIDOPT_KEEP_FREED_MEMORY", None)
    if numpy_switch is not None:
        env["NUMPY_MADVISE_HUGEPAGE"] = numpy_switch
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert run.returncode == 0, run.stderr
    before, after = run.stdout.split()
    if before == "False" and numpy_switch is None:
        pytest.skip("numpy gives no huge-page advice on this kernel")
    assert after == ("True" if numpy_switch == "1" else "False")
