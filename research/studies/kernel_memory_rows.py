"""The memory traffic of the naive kernels, one table per machine, from what
``research/studies/kernel_memory_traffic.sh`` captured: each kernel's time, DRAM bytes read and written, L2 and L1
hit rates, and the DRAM and SM clocks while it ran (mean of its launches; the range in brackets).

    PYTHONPATH=$PWD:$PWD/plugin python research/studies/kernel_memory_rows.py LEASE=FILE.csv ...

ncu writes its own notes (lines starting with ``==``) into the same output as the page; they are left
out here. research/evidence/h200-gpu-bound-noise.md holds what it found.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
from trainperf.profile.ncu_raw import read_ncu_raw

FIGURES = {  # column shown: (metric, scale to the unit shown)
    "ms": ("gpu__time_duration.sum", 1e3),
    "DRAM read GB": ("dram__bytes_read.sum", 1e-9),
    "DRAM write GB": ("dram__bytes_write.sum", 1e-9),
    "L2 hit %": ("lts__t_sector_hit_rate.pct", 1.0),
    "L1 hit %": ("l1tex__t_sector_hit_rate.pct", 1.0),
    "DRAM MHz": ("dram__cycles_elapsed.avg.per_second", 1e-6),
    "SM MHz": ("sm__cycles_elapsed.avg.per_second", 1e-6),
}


def launches(path: Path) -> pd.DataFrame:
    """The captured page without ncu's notes, one row per profiled launch."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return read_ncu_raw("\n".join(line for line in lines if not line.startswith("==")))


def table(raw: pd.DataFrame) -> pd.DataFrame:
    """Per kernel: its launches, then each figure's mean and range over them."""
    kernel = raw["Kernel Name"].str.split("(").str[0].rename("kernel")
    rows: dict[str, object] = {"launches": raw.groupby(kernel).size()}
    for label, (metric, scale) in FIGURES.items():
        grouped = (raw[metric] * scale).groupby(kernel)
        low, mean, high = grouped.min(), grouped.mean(), grouped.max()
        rows[label] = [f"{m:.4g} [{lo:.4g}-{hi:.4g}]" for m, lo, hi in zip(mean, low, high, strict=True)]
    return pd.DataFrame(rows)


def main(arguments: list[str]) -> None:
    if not arguments or any("=" not in argument for argument in arguments):
        sys.exit("usage: kernel_memory_rows.py LEASE=FILE.csv ... (the kernel-memory-traffic.csv of each machine)")
    for argument in arguments:
        lease, path = argument.split("=", 1)
        print(f"{lease} ({path})")
        print(table(launches(Path(path))).to_string())


if __name__ == "__main__":
    main(sys.argv[1:])
