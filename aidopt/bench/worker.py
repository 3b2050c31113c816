"""Run one benchmark task in this process.

    python -m aidopt.bench.worker '{"task": "module:function", "args": {...}}'


Prints the task's result dict as one JSON line, with ``peak_mb``: the peak resident memory of
this process or of any child it waited for (e.g. Rscript), whichever is larger.
"""

from __future__ import annotations

import importlib
import json
import resource
import sys


def main(payload: str) -> None:
    spec = json.loads(payload)
    module_name, func_name = spec["task"].split(":")
    result = getattr(importlib.import_module(module_name), func_name)(**spec["args"])
    peak_kb = max(
        resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
        resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss,
    )
    result["peak_mb"] = peak_kb / 1024.0
    print(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1])
