"""The command line's allocator setting (aidopt.memory)."""

import subprocess
import sys

import pytest


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator")
def test_command_line_processes_keep_freed_memory_in_the_heap():
    """After keep_freed_memory (what `aidopt` runs first), an 80 MB array comes from glibc's
    heap, whose freed pages the next one reuses, instead of a mapping of its own."""
    code = (
        "import sys, numpy as np\n"
        "from aidopt.memory import keep_freed_memory\n"
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
