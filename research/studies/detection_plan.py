"""What the detection study still has to run on one device: per case and slowdown, the judged runs its
ledger lacks.

    PYTHONPATH=$PWD python research/studies/detection_plan.py baselines/nvidia-h100-80gb-hbm3.json \\
        research/evidence/data/h100-detection.csv [JUNIT...] [--cases CASE...]

Rows 4 and 5 of the gate's acceptance (``research/evidence/trust.md``) want 10 judged runs at 5% for each case
whose GPU is busy (its recording's busy share at least 90%, or none recorded) and at 10% for every case.
A busy GPU is slowed by GPU work, a case that waits for the host by host work (tiny GPU ops issued by its
thread: its host-work check judges them). The ledger is the committed table of
``research/studies/detection_rows.py``; JUnit files of ``research/studies/slowed_case.py`` add runs made since. Prints a
line per case and slowdown still short, ``CASE gpu|host SLOWDOWN RUNS``, in the baseline file's order.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

import pandas as pd
from trainperf.judge.checks import HOST_BOUND_BUSY
from trainperf.store import baselines

from research.studies.detection_rows import COLUMNS
from research.studies.trust_table import detection_runs

RUNS = 10  # judged runs each slowdown needs
EVERY_CASE = 0.10  # the slowdown every case must be caught at
GPU_BUSY = 0.05  # the slowdown a case whose GPU is busy must also be caught at


class Wanted(NamedTuple):
    case: str
    on: str  # "gpu" or "host": where the extra work runs
    slowdown: float
    runs: int  # judged runs still to make


def gpu_busy(entry: Mapping[str, Any]) -> bool:
    """Whether the case's GPU was busy in its recording (at least 90% of the timed window, or no figure)."""
    share = (entry.get("host") or {}).get("gpu_busy_share")
    return share is None or share >= HOST_BOUND_BUSY


def judged(ledger: Path, junit_files: list[Path]) -> pd.Series:
    """Judged runs per case and slowdown: the ledger's rows and the JUnit files' runs."""
    rows = pd.read_csv(ledger, usecols=["case", "slowdown"])
    if junit_files:
        rows = pd.concat([rows, detection_runs(junit_files)[["case", "slowdown"]]], ignore_index=True)
    return rows.assign(slowdown=rows["slowdown"].round(4)).value_counts(["case", "slowdown"])


def plan(cases: Mapping[str, Mapping[str, Any]], done: pd.Series, runs: int = RUNS) -> list[Wanted]:
    """The runs each case of ``cases`` (a baseline file's entries) still needs, given ``done``."""
    wanted = []
    for case, entry in cases.items():
        busy = gpu_busy(entry)
        for slowdown in (GPU_BUSY, EVERY_CASE) if busy else (EVERY_CASE,):
            left = runs - int(done.get((case, slowdown), 0))
            if left > 0:
                wanted.append(Wanted(case, "gpu" if busy else "host", slowdown, left))
    return wanted


def selected(cases: dict[str, dict[str, Any]], names: list[str] | None, path: Path) -> dict[str, dict[str, Any]]:
    """The entries of ``names`` (all where none are named); an unknown name is an error naming the file."""
    if not names:
        return cases
    unknown = [name for name in names if name not in cases]
    if unknown:
        raise SystemExit(f"detection_plan: {path} holds no case {', '.join(unknown)}")
    return {name: cases[name] for name in names}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("baseline_file", type=Path, help="the device's committed baseline file")
    parser.add_argument("ledger", type=Path, help="the device's committed detection table")
    parser.add_argument("junit", nargs="*", type=Path, help="JUnit files of research/studies/slowed_case.py made since")
    parser.add_argument("--cases", nargs="+", help="only these cases (default: every case of the file)")
    parser.add_argument("--runs", type=int, default=RUNS, help=f"judged runs each slowdown needs ({RUNS})")
    args = parser.parse_args(argv)
    if not args.baseline_file.is_file():
        raise SystemExit(f"detection_plan: no baseline file {args.baseline_file}")
    if not args.ledger.is_file():
        header = ",".join(COLUMNS)
        raise SystemExit(f"detection_plan: no ledger {args.ledger}; start one with the header line {header}")
    try:
        cases = selected(baselines.load(args.baseline_file), args.cases, args.baseline_file)
    except baselines.BaselineError as error:
        raise SystemExit(f"detection_plan: {error}") from None
    for wanted in plan(cases, judged(args.ledger, args.junit), args.runs):
        print(wanted.case, wanted.on, f"{wanted.slowdown:.2f}", wanted.runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
