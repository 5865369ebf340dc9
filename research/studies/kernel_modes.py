"""Do the kernel cases run at one of two speeds? Groups every whole run of the kernels file in the
committed rows by ``matmul/reference``'s median and prints each kernel case's range in either group;
then, for every case timed in at least six of those runs, how far the slow group's runs lay from the
fast group's, against the fast group's own spread.

    PYTHONPATH=$PWD python research/studies/kernel_modes.py

Reads the acceptance runs, the calibration leases, the fresh-host runs and the host-work runs (their
slowed runs left out: they added work to the step). research/evidence/h200-gpu-bound-noise.md holds what it
found.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

DATA = Path(__file__).resolve().parents[1] / "evidence" / "data"
KERNELS = ("matmul/reference", "matmul/smem_tiled", "transpose/reference", "transpose/smem_tiled", "transpose/torch")
# the committed files of whole runs, and the columns that name a run in each
SOURCES = {
    "h200-acceptance-runs.csv": ["run"],
    "h200-calibration-runs.csv": ["lease"],
    "h200-suite-aa.csv": ["lease", "run"],
    "h200-host-work.csv": ["lease", "run"],
}
SLOW_MATMUL_MS = 23.6  # between the two groups of matmul/reference, 23.35 and 23.89 ms


def runs() -> pd.DataFrame:
    """One row per whole run that timed the kernels, a column per case (median ms; NaN where not run)."""
    frames = []
    for name, columns in SOURCES.items():
        rows = pd.read_csv(DATA / name)
        if name == "h200-host-work.csv":
            rows = rows[rows["run"] != "slowed"]
        key = rows[columns].astype(str).agg(" ".join, axis=1)
        frames.append(pd.DataFrame({"run": name + ": " + key, "case": rows["case"], "ms": rows["median_ms"]}))
    every = pd.concat(frames, ignore_index=True)
    table = every.pivot_table(index="run", columns="case", values="ms", aggfunc="first")
    return table[table["matmul/reference"].notna()]


def groups(table: pd.DataFrame) -> pd.DataFrame:
    """Per kernel case: the range and mean of the fast and the slow runs, and the slow mean over the fast."""
    slow = table["matmul/reference"] > SLOW_MATMUL_MS
    rows = []
    for case in KERNELS:
        fast_ms, slow_ms = table.loc[~slow, case], table.loc[slow, case]
        rows.append(
            {
                "case": case,
                f"fast ({(~slow).sum()} runs)": f"{fast_ms.min():.4f}-{fast_ms.max():.4f} (mean {fast_ms.mean():.4f})",
                f"slow ({slow.sum()} runs)": f"{slow_ms.min():.4f}-{slow_ms.max():.4f} (mean {slow_ms.mean():.4f})",
                "slow over fast": f"{slow_ms.mean() / fast_ms.mean() - 1:+.2%}",
            }
        )
    return pd.DataFrame(rows).set_index("case")


def shifts(table: pd.DataFrame, least_runs: int = 6) -> pd.DataFrame:
    """Per case timed in ``least_runs`` runs or more, a slow one among them: the slow runs' mean log
    median less the fast runs', and the fast runs' standard deviation, both in percent."""
    slow = table["matmul/reference"] > SLOW_MATMUL_MS
    rows = []
    for case in table.columns:
        timed = table[case].dropna()
        logs, in_slow = np.log(timed), slow[timed.index]
        if len(timed) < least_runs or not in_slow.any():
            continue
        shift = logs[in_slow].mean() - logs[~in_slow].mean()
        rows.append({"case": case, "runs": len(timed), "slow": int(in_slow.sum()), "slow over fast %": shift * 100,
                     "fast runs' spread %": logs[~in_slow].std() * 100})  # fmt: skip
    found = pd.DataFrame(rows).set_index("case")
    return found.assign(spreads=found["slow over fast %"] / found["fast runs' spread %"]).sort_values("spreads")


def main() -> None:
    table = runs()
    print(table[list(KERNELS)].round(4).to_markdown())
    print()
    print(groups(table).to_markdown())
    print()
    print(shifts(table).astype({"runs": str, "slow": str}).to_markdown(floatfmt=".2f"))


if __name__ == "__main__":
    main()
