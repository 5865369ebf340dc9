"""Would the GPU's busy time an iteration tell a slow host from slower GPU work?

    PYTHONPATH=$PWD python research/studies/busy_time_spread.py

A case that waits for the host a little (GPU busy 88-95%) runs slower on a slow host with the same
GPU work (lease BA). NVML's busy share times the iteration's median is the GPU's busy time an
iteration: were it steady from machine to machine, a gate could judge it instead of the time. This
reads the committed unchanged-code rows of the host-work leases (not their slowed runs) whose busy
share was read over the timed window alone (lease AZ on, `cb32b56`), and prints, per case busy at
least 88% with runs on at least 3 machines, the spread (coefficient of variation) of the time and of
the busy time over the runs.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

ROWS = Path(__file__).resolve().parents[1] / "evidence" / "data" / "h200-host-work.csv"
SLOWED_RUNS = "ops-|slow|detect|calib|memory"  # the runs with work added, or of another study
WINDOWED_LEASES = ("AZ", "BA", "BB", "BC", "BD", "BE", "BF", "BG")  # busy read inside the timed window
MIN_BUSY, MIN_MACHINES = 0.88, 3


def spreads(rows: pd.DataFrame) -> pd.DataFrame:
    """Per case: runs, machines, median busy share, and the spread of the time and of the busy time."""
    windowed = rows[rows["lease"].isin(WINDOWED_LEASES)]
    unchanged = windowed[~windowed["run"].astype(str).str.contains(SLOWED_RUNS)].dropna(subset=["gpu_busy"])
    unchanged = unchanged.assign(busy_ms=unchanged["median_ms"] * unchanged["gpu_busy"])

    def cv(values: pd.Series) -> float:
        return float(values.std() / values.mean())

    table = unchanged.groupby("case").agg(
        runs=("median_ms", "size"),
        machines=("lease", "nunique"),
        busy=("gpu_busy", "median"),
        time_spread=("median_ms", cv),
        busy_time_spread=("busy_ms", cv),
    )
    return table[(table["machines"] >= MIN_MACHINES) & (table["busy"] >= MIN_BUSY)].sort_values("busy")


def main() -> int:
    table = spreads(pd.read_csv(ROWS))
    print(table.to_string(float_format=lambda value: f"{value:.4f}"))
    steadier = int((table["busy_time_spread"] < table["time_spread"]).sum())
    print(f"busy time steadier than time in {steadier} of {len(table)} cases")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
