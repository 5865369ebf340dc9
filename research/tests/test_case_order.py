"""research/studies/case_order.py: each measured case's row, with the GPU's readings where there is a GPU."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from research.studies.case_order import gpu_readings

ROOT = Path(__file__).resolve().parents[2]


def test_a_gpu_runs_readings_come_from_before_and_during_the_timed_iterations() -> None:
    clocks = {
        "before": {"sm_clock_mhz": 1980, "temperature_c": 41, "power_w": 120.0, "throttle": []},
        "during": {"mean_sm_clock_mhz": 1604.5, "mean_power_w": 681.2, "throttle": ["software power cap"]},
        "after": {"sm_clock_mhz": 1755, "temperature_c": 58, "power_w": 300.0, "throttle": []},
    }
    assert gpu_readings(clocks) == {"temperature_before_c": 41, "mean_sm_mhz": 1604.5, "mean_power_w": 681.2}


def test_a_cpu_sequence_prints_a_row_per_case_with_blank_gpu_readings() -> None:
    command = [
        sys.executable,
        str(ROOT / "research" / "studies" / "case_order.py"),
        "--ladder",
        "workloads.ladders.digits",
    ]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "plugin")])}
    done = subprocess.run(
        [*command, "--seq", "reference,reference", "--device", "cpu"],
        capture_output=True, text=True, env=env, cwd=ROOT, check=True,
    )  # fmt: skip
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    assert [(row["position"], row["case"]) for row in rows] == [(0, "reference"), (1, "reference")]
    assert all(row["median_ms"] > 0 and row["mean_sm_mhz"] is None for row in rows)
