"""Which cases can meet the 5% bar of row 4 (``research/evidence/trust.md``) under the gate's present rule?

    PYTHONPATH=$PWD python research/studies/detection_power.py baselines/nvidia-h100-80gb-hbm3.json [--slowdown 0.05]

For each case whose GPU is busy (``research/studies/detection_plan.gpu_busy``), from its stored noise alone: the
threshold it is judged at (``detects``), the slowdown caught nine times in ten (``stats.reliably_caught``)
and the share of runs slowed by SLOWDOWN it should catch, both measurements past the threshold
(``stats.caught_share``). A case whose share is under 90% cannot meet the bar by more detection runs:
only less noise between runs would get it there. Prints the cases, least likely first.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd
from trainperf.judge import checks, stats
from trainperf.store import baselines

from research.studies.detection_plan import GPU_BUSY, gpu_busy


def power_frame(
    cases: Mapping[str, Mapping[str, Any]], slowdown: float, floor: float = checks.DEFAULT_FLOOR
) -> pd.DataFrame:
    """One row per GPU-busy case: its threshold, the slowdown caught nine times in ten, the share caught."""
    rows = []
    for name, entry in cases.items():
        if not gpu_busy(entry):
            continue
        noise = baselines.stored_baseline(entry).noise(floor)
        rows.append([name, noise.threshold, stats.reliably_caught(noise), stats.caught_share(noise, slowdown)])
    frame = pd.DataFrame(rows, columns=["case", "detects", "9 in 10", "caught"])
    return frame.sort_values(["caught", "case"], na_position="first", ignore_index=True)


def _percent(value: float) -> str:
    return "-" if pd.isna(value) else f"{value:.1%}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("baseline_file", type=Path)
    parser.add_argument("--slowdown", type=float, default=GPU_BUSY, help=f"the slowdown to catch ({GPU_BUSY})")
    args = parser.parse_args(argv)
    try:
        frame = power_frame(baselines.load(args.baseline_file), args.slowdown)
    except baselines.BaselineError as error:
        raise SystemExit(f"detection_power: {error}") from None
    short = frame[frame["caught"].isna() | (frame["caught"] < stats.RELIABLE_POWER)]
    print(frame.to_string(index=False, formatters=dict.fromkeys(["detects", "9 in 10", "caught"], _percent)))
    print(f"{len(short)} of {len(frame)} GPU-busy cases catch {args.slowdown:.0%} less than nine times in ten")
    return 0


if __name__ == "__main__":
    sys.exit(main())
