"""Append the cases of the work gate's run documents to its evidence table, one row per case and run.

    PYTHONPATH=$PWD python research/studies/work_gate_rows.py MACHINE RUN_JSON... --append research/evidence/data/h200-work-gate-sixth-machine.csv

Each RUN_JSON is the ``run.json`` of one ``research/experiments/gate_runs.sh`` run (``NAME/run.json``,
the run named by its folder: ``aaN`` unchanged, ``opsN``, ``syncN``, ``spinN`` injected). MACHINE names
the machine. ``files`` is ``examples`` or ``suite``, ``failed`` the checks that failed (``;``-joined),
``kernel_time_pct`` and ``wall_pct`` the case against its recording, ``work_message`` what the work
check said. A case the run left unfinished is a row with its verdict only. Without ``--append`` the
rows go to standard output, with the header.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from research.studies import evidence_rows

COLUMNS = ["run", "machine", "files", "case", "verdict", "failed", "kernel_time_pct", "wall_pct", "work_message"]
KERNEL_TIME_CHANGE = re.compile(r"\(([+-]\d+\.\d)%")  # "kernel time 20.75 ms against 20.73 ms recorded (+0.1%, ..."


def rows(machine: str, run_documents: list[Path]) -> pd.DataFrame:
    """Every case of ``run_documents``, judged or unfinished, in the table's columns."""
    made: list[dict[str, Any]] = []
    for path in run_documents:
        document = json.loads(path.read_text(encoding="utf-8"))
        run = path.parent.name
        for case in document["benchmarks"]:
            made.append({"run": run, "machine": machine, "files": _files(case["fullname"]), **_figures(case)})
        for case in document.get("unfinished") or []:
            made.append({"run": run, "machine": machine, "files": "", "case": case["name"], "verdict": case["verdict"]})
    if not made:
        raise SystemExit(f"no case in {', '.join(map(str, run_documents))}")
    return pd.DataFrame(made).reindex(columns=COLUMNS).fillna("")


def _files(node_id: str) -> str:
    return "examples" if node_id.startswith("examples/") else "suite"


def _figures(case: Mapping[str, Any]) -> dict[str, Any]:
    info = case["extra_info"]
    messages = {check["name"]: check["message"] for check in info.get("checks") or []}
    change = KERNEL_TIME_CHANGE.search(messages.get("kernel time", ""))
    baseline = info.get("baseline_median_ms")
    work = messages.get("work", "")
    return {
        "case": case["name"],
        "verdict": info.get("verdict"),
        "failed": ";".join(c["name"] for c in info.get("checks") or [] if c["passed"] is False),
        "kernel_time_pct": change.group(1) if change else "",
        "wall_pct": f"{(info['summary_ms']['median'] / baseline - 1) * 100:+.1f}" if baseline else "",
        "work_message": work.split(": ", 1)[1] if ": " in work else work,  # without the case's name
    }


def main(argv: list[str] | None = None) -> int:
    return evidence_rows.main(argv, __doc__.splitlines()[0], "RUN_JSON", rows, COLUMNS)


if __name__ == "__main__":
    sys.exit(main())
