"""Append the cases of A/A run documents to the examples' A/A table, one row per case and run.

    PYTHONPATH=$PWD python research/studies/aa_rows.py LEASE RUN_JSON... --append research/evidence/data/h200-examples-aa.csv

Each RUN_JSON is the ``run.json`` of one ``research/studies/trust_runs.sh`` run (``aa-HHMMSS/run.json``); the
run is named by its folder. LEASE names the machine. ``detects`` is the threshold the case was judged
at, ``confirmed`` whether a second measurement upheld a failed time check. Without ``--append`` the
rows go to standard output, with the header.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

from research.studies import evidence_rows
from research.studies.trust_table import run_frame

COLUMNS = ["lease", "run", "case", "median_ms", "baseline_ms", "detects", "confirmed", "verdict"]


def rows(lease: str, run_documents: list[Path]) -> pd.DataFrame:
    """The judged cases of ``run_documents`` in the table's columns, rounded as the table keeps them."""
    runs = [run_frame(path, path.parent.name) for path in run_documents]
    judged = pd.concat(runs, ignore_index=True).dropna(subset=["baseline_ms"]) if runs else pd.DataFrame()
    if judged.empty:
        raise SystemExit(f"no case judged against a baseline in {', '.join(map(str, run_documents))}")
    judged = judged.assign(lease=lease, detects=judged["min_detectable"], confirmed=judged["upheld"])
    return judged.round({"median_ms": 4, "baseline_ms": 4, "detects": 4})[COLUMNS]


def main(argv: list[str] | None = None) -> int:
    return evidence_rows.main(argv, __doc__.splitlines()[0], "RUN_JSON", rows, COLUMNS)


if __name__ == "__main__":
    sys.exit(main())
