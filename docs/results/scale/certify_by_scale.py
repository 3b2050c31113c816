"""Which scales each model certifies on its default solver: features (and LAD's y) × 1e-9 ... 1e9,
2,000 rows, 3 features, --time-limit 30, in a temporary folder. Writes the CSV named on the
command line:  python docs/results/scale/certify_by_scale.py docs/results/scale/certify_by_scale.csv
"""

import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import pandas as pd

os.chdir(tempfile.mkdtemp())
rng = np.random.default_rng(0)
n = 2000
X = rng.normal(size=(n, 3))
y = np.where(X[:, 0] + 0.5 * rng.normal(size=n) > 0, 1, -1)
yr = X @ [1.0, 2.0, 3.0] + rng.laplace(size=n)
s = ((y > 0) & (rng.random(n) < 0.3)).astype(int)
MODELS = {
    "lad": (["lad", "--target", "y"], "reg"),
    "svm": (["svm", "--target", "y"], "cls"),
    "svm-rbf": (["svm", "--kernel", "rbf", "--target", "y"], "cls"),
    "pu": (["pu", "--target", "s", "--prior", "0.4"], "pu"),
    "pu-rbf": (["pu", "--kernel", "rbf", "--target", "s", "--prior", "0.4"], "pu"),
    "ocsvm": (["ocsvm"], "one"),
    "ocsvm-rbf": (["ocsvm", "--kernel", "rbf"], "one"),
    "svdd": (["svdd", "--C", "0.01"], "one"),
}
rows = []
for sc in (1e-9, 1e-3, 1.0, 1e3, 1e6, 1e9):
    f = pd.DataFrame(X * sc, columns=["x1", "x2", "x3"])
    files = {"reg": f.assign(y=yr * sc), "cls": f.assign(y=y), "pu": f.assign(s=s), "one": f}
    for k, v in files.items():
        v.to_csv(f"{k}.csv", index=False)
    for name, (argv, which) in MODELS.items():
        t = time.perf_counter()
        out = subprocess.run(
            [
                "aidopt",
                "solve",
                argv[0],
                "--data",
                f"{which}.csv",
                *argv[1:],
                "--time-limit",
                "30",
                "--json",
            ],
            capture_output=True,
            text=True,
        )
        sec = time.perf_counter() - t
        if out.returncode == 0:
            d = json.loads(out.stdout)
            rows.append(
                dict(
                    model=name,
                    scale=sc,
                    solver=d["solver"],
                    status=d["status"],
                    gap=d["gap"],
                    seconds=round(sec, 2),
                    error="",
                )
            )
        else:
            rows.append(
                dict(
                    model=name,
                    scale=sc,
                    solver="default",
                    status="error",
                    gap=None,
                    seconds=round(sec, 2),
                    error=out.stderr.strip().splitlines()[-1][:160],
                )
            )
pd.DataFrame(rows).to_csv(sys.argv[1] if len(sys.argv) > 1 else "certify_by_scale.csv", index=False)
