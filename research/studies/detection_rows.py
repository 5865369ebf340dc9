"""Append the runs of ``research/studies/slowed_case.py``'s JUnit files to a detection table, one row each.

    PYTHONPATH=$PWD python research/studies/detection_rows.py LEASE JUNIT... --append research/evidence/data/h200-detection.csv

LEASE names the machine the runs were measured on. The columns are the committed table's: ``got`` is
the judged median against the baseline (the second measurement's where a catch was measured again),
``caught_by`` which checks failed it (``time``, ``host work``, ``time and host work`` or ``none``),
``measured_again`` whether a second measurement upheld the time's catch (host work is counted, not
timed). Without ``--append`` the rows go to standard output, with the header.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

from research.studies import evidence_rows
from research.studies.trust_table import detection_runs

COLUMNS = [
    "lease",
    "case",
    "test",
    "slowdown",
    "spin_ms",
    "median_ms",
    "baseline_ms",
    "got",
    "caught",
    "caught_by",
    "measured_again",
]


def rows(lease: str, junit_files: list[Path]) -> pd.DataFrame:
    """The runs of ``junit_files`` in the table's columns, rounded as the table keeps them."""
    runs = detection_runs(junit_files)
    if runs.empty:
        raise SystemExit(f"no measured run of research/studies/slowed_case.py in {', '.join(map(str, junit_files))}")
    runs = runs.assign(lease=lease, measured_again=runs["upheld"])
    return runs.round({"spin_ms": 4, "median_ms": 4, "baseline_ms": 4, "got": 4})[COLUMNS]


def main(argv: list[str] | None = None) -> int:
    return evidence_rows.main(argv, __doc__.splitlines()[0], "JUNIT", rows, COLUMNS, float_format="%.4f")


if __name__ == "__main__":
    sys.exit(main())
