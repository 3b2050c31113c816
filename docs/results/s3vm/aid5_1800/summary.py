"""The summary table of docs/s3vm.md "AID5 at the paper's limit", generated from the runs:
python docs/results/s3vm/aid5_1800/summary.py (prints Markdown; tests/test_docs_tables.py checks
that the page holds exactly this table)."""

from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent


def summary() -> str:
    runs = pd.read_csv(HERE / "s3vm_runs.csv")
    aid1 = runs[runs["level"] == "AID1"].set_index(["labeled", "set", "split"])["accuracy"]
    aid5 = runs[runs["level"] == "AID5"].set_index(["labeled", "set", "split"])
    rows = [
        "| l | set | splits | AID1 % (mean) | AID5 % (mean) | AID5 below AID1 | time_limit "
        "| iteration_limit | node limit | iterations (mean) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (labeled, name), group in aid5.groupby(level=["labeled", "set"], sort=True):
        first = aid1.reindex(group.index)
        status = group["status"].value_counts()
        rows.append(
            f"| {labeled} | {name} | {len(group)} | {100 * first.mean():.1f} "
            f"| {100 * group['accuracy'].mean():.1f} "
            f"| {int((group['accuracy'] < first).sum())} | {status.get('time_limit', 0)} "
            f"| {status.get('iteration_limit', 0)} | {status.get('solver_limit', 0)} "
            f"| {group['iterations'].mean():.1f} |"
        )
    return "\n".join(rows)


if __name__ == "__main__":
    print(summary())
