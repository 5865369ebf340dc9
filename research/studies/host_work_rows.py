"""Rows of the host-work table, one per case and run: its host calls per iteration, its time, and both
checks' figures, from run documents.

    PYTHONPATH=$PWD python research/studies/host_work_rows.py LEASE RUN_JSON... --append research/evidence/data/h200-host-work.csv

Each run is named by its folder (``DIR/NAME/run.json``). ``stored_calls`` and ``calls_detects`` are
those of the host-work check, read from its message, where the case was judged on its host work;
``step_calls`` and ``stored_step_calls`` the same of the training step alone, where it was counted apart;
``fetch_calls`` the calls of each counted iteration's fetch, where kept; ``torch_calls`` the step's calls
into torch, where counted.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pandas as pd

from research.studies import evidence_rows

COLUMNS = ["lease", "run", "case", "host_calls", "stored_calls", "calls_detects", "calls_passed", "median_ms",
           "baseline_ms", "detects", "time_passed", "gpu_busy", "verdict",
           "step_calls", "stored_step_calls", "fetch_calls", "torch_calls"]  # fmt: skip
STORED = re.compile(r"host calls per iteration vs (\d+) stored")
STORED_STEP = re.compile(r"of them in the training step vs (\d+) stored")
INTEGERS = ("host_calls", "stored_calls", "step_calls", "stored_step_calls", "torch_calls")
BEYOND = re.compile(r"more counts beyond ([\d.]+)%")


def row(lease: str, run: str, case: dict[str, Any]) -> dict[str, Any]:
    info = case["extra_info"]
    checks = {check["name"]: check for check in info["checks"]}
    work, time = checks.get("host work", {}), checks.get("baseline", {})
    message = work.get("message", "")
    stored, beyond, stored_step = STORED.search(message), BEYOND.search(message), STORED_STEP.search(message)
    return {
        "lease": lease,
        "run": run,
        "case": case["name"],
        "host_calls": info["host_calls"][0] if info.get("host_calls") else None,
        "stored_calls": int(stored.group(1)) if stored else None,
        "calls_detects": float(beyond.group(1)) / 100 if beyond else None,
        "calls_passed": work.get("passed"),
        "median_ms": round(info["summary_ms"]["median"], 4),
        "baseline_ms": info["baseline_median_ms"] and round(info["baseline_median_ms"], 4),
        "detects": info["min_detectable_slowdown"] and round(info["min_detectable_slowdown"], 4),
        "time_passed": time.get("passed"),
        "gpu_busy": _rounded((info["clocks"].get("during") or {}).get("gpu_busy_share"), 3),
        "verdict": info["verdict"],
        "step_calls": info["host_step_calls"][0] if info.get("host_step_calls") else None,
        "stored_step_calls": int(stored_step.group(1)) if stored_step else None,
        "fetch_calls": " ".join(map(str, info.get("host_fetch_calls", []))) or None,
        "torch_calls": info["host_torch_calls"][0] if info.get("host_torch_calls") else None,
    }


def _rounded(value: float | None, digits: int) -> float | None:
    """``value`` rounded; None (an empty cell) where the run read none."""
    return None if value is None else round(value, digits)


def rows(lease: str, run_documents: list[Path]) -> pd.DataFrame:
    found = [
        row(lease, path.parent.name, case)
        for path in run_documents
        for case in json.loads(path.read_text(encoding="utf-8"))["benchmarks"]
    ]
    if not found:
        raise SystemExit(f"no case in {', '.join(map(str, run_documents))}")
    return pd.DataFrame(found, columns=COLUMNS).astype({name: "Int64" for name in INTEGERS})


def main(argv: list[str] | None = None) -> int:
    return evidence_rows.main(argv, (__doc__ or "").splitlines()[0], "RUN_JSON", rows, COLUMNS)


if __name__ == "__main__":
    sys.exit(main())
