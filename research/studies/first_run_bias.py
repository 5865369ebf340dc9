"""Does the recording's first run, timed in the test process, differ from its two fresh-process runs?

    PYTHONPATH=$PWD python research/studies/first_run_bias.py baselines/nvidia-h100-80gb-hbm3.json

``--update-baselines`` times each case three times: first in the test process, after whatever cases
ran there before (its memory released and torch.compile's caches reset), then twice in fresh
processes. A state the test process carries from case to case would show as a first run slower (or
faster) than the other two across the cases. Prints, per file, the median of first / mean(others) - 1
over the cases recorded with three runs, how many were slower (with the sign test's two-sided p: near
1 where the first run is as often slower as faster), and the cases furthest either way.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import pandas as pd
from scipy import stats


def first_run_changes(baseline_file: Path) -> pd.Series:
    """Per case with three recorded runs: its first run against the mean of the other two, as a change."""
    cases = json.loads(baseline_file.read_text())["cases"]
    changes = {
        name: runs[0] / statistics.fmean(runs[1:]) - 1.0
        for name, entry in cases.items()
        if len(runs := entry.get("run_medians_ms", [])) == 3
    }
    return pd.Series(changes, dtype=float).sort_values()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("baseline_files", nargs="+", type=Path)
    for path in parser.parse_args(argv).baseline_files:
        changes = first_run_changes(path)
        slower = int((changes > 0).sum())
        p = stats.binomtest(slower, int((changes != 0).sum())).pvalue
        print(f"{path.name}: {len(changes)} cases, median {changes.median():+.2%}, first run slower in "
              f"{slower} (sign test p = {p:.2f})")  # fmt: skip
        ends = pd.concat([changes.head(3), changes.tail(3)])
        print("  " + ", ".join(f"{name} {change:+.1%}" for name, change in ends.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
