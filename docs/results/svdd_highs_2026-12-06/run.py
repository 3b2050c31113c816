"""SVDD by AID on HiGHS against boxqp (docs/svc.md): python run.py > runs.csv."""

import json
import subprocess

import numpy as np
import pandas as pd


def blobs(n, seed, centres, scale):
    rng = np.random.default_rng(seed)
    X = centres[rng.integers(0, len(centres), n)] + rng.normal(scale=scale, size=(n, 2))
    return pd.DataFrame(X, columns=["x1", "x2"])


sets = {
    "blobs3k": blobs(3000, 15, np.array([[3.0, 3.0], [-2.0, 4.0]]), 0.6),
    "blobs20k": blobs(20000, 16, np.array([[3.0, 3.0], [-2.0, 4.0], [0.0, -3.0]]), 0.8),
}
print("data,rows,C,solver,status,iterations,seconds,objective,gap")
for name, frame in sets.items():
    frame.to_csv(f"{name}.csv", index=False)
    for C in (1.0, 0.05, 0.01, 0.002):
        for solver in ("highs", "boxqp"):
            args = ["aidopt", "solve", "svdd", "--data", f"{name}.csv", "--solver", solver]
            args += ["--C", str(C), "--tol", "0", "--time-limit", "120", "--quiet", "--json"]
            r = json.loads(subprocess.run(args, capture_output=True, text=True).stdout)
            print(
                f"{name},{len(frame)},{C},{solver},{r['status']},{r['iterations']},"
                f"{r['seconds']:.2f},{r['objective']:.10f},{r['gap']}"
            )
