"""Append the cases of A/A run documents to the examples' A/A table, one row per case and run.

    PYTHONPATH=$PWD python studies/aa_rows.py LEASE RUN_JSON... --append docs/evidence/data/h200-examples-aa.csv

Each RUN_JSON is the ``run.json`` of one ``studies/trust_runs.sh`` run (``aa-HHMMSS/run.json``); the
run is named by its folder. LEASE names the machine. ``detects`` is the threshold the case was judged
at, ``confirmed`` whether a second measurement upheld a failed time check. Without ``--append`` the
rows go to standard output, with the header.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd
from trainperf.report import document

from studies import evidence_rows
from studies.trust_table import UPHELD

COLUMNS = ["lease", "run", "case", "median_ms", "baseline_ms", "detects", "confirmed", "verdict"]


def upheld(case: Mapping[str, Any]) -> bool:
    """Whether the case's time check failed on a second measurement."""
    return any(
        check["name"] == "baseline" and check["passed"] is False and UPHELD in check["message"]
        for check in case["extra_info"]["checks"]
    )


def rows(lease: str, run_documents: list[Path]) -> pd.DataFrame:
    """The judged cases of ``run_documents`` in the table's columns, rounded as the table keeps them."""
    frames = []
    for path in run_documents:
        run = document.load(path)
        frame = document.cases_frame(run.cases)
        frame = frame.assign(lease=lease, run=path.parent.name, detects=frame["min_detectable"])
        frame["confirmed"] = [upheld(case) for case in run.cases]
        frames.append(frame[frame["baseline_ms"].notna()])
    table = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=COLUMNS)
    if table.empty:
        raise SystemExit(f"no case judged against a baseline in {', '.join(map(str, run_documents))}")
    return table.round({"median_ms": 4, "baseline_ms": 4, "detects": 4})[COLUMNS]


def main(argv: list[str] | None = None) -> int:
    args = evidence_rows.arguments(argv, __doc__.splitlines()[0], "RUN_JSON")
    evidence_rows.write(rows(args.lease, args.sources), COLUMNS, args.append)
    return 0


if __name__ == "__main__":
    sys.exit(main())
