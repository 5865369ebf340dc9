"""studies/record_suite.sh on a machine of another GPU than the one it is to record, or on a GPU another
process holds: it records nothing."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# stands in for python3: names the GPU when asked for its slug, finds it busy at its first BUSY_CHECKS
# checks, notes every other call
FAKE_PYTHON = """#!/usr/bin/env bash
if [ "$1" = "-c" ]; then echo "$SLUG"; exit 0; fi
if [ "$1" = "ci/gpu_check.py" ]; then
  echo check >> "$MARK.checks"
  (($(wc -l < "$MARK.checks") > ${BUSY_CHECKS:-0})) || { echo "gpu-check: GPU 0 is busy"; exit 6; }
fi
echo "$*" >> "$MARK"
"""


def record(
    tmp_path: Path, slug: str, record_device: str, busy_checks: int = 0, wait_s: int = 120
) -> subprocess.CompletedProcess[str]:
    bin_dir, out, mark = tmp_path / "bin", tmp_path / "out", tmp_path / "mark"
    bin_dir.mkdir()
    out.mkdir()
    fake = bin_dir / "python3"
    fake.write_text(FAKE_PYTHON)
    fake.chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "SLUG": slug,
        "MARK": str(mark),
        "OUT": str(out),
        "RECORD_DEVICE": record_device,
        "TRAINPERF_BASELINE_DIR": str(tmp_path / "stored"),
        "BUSY_CHECKS": str(busy_checks),
        "RECORD_GPU_WAIT_S": str(wait_s),
    }
    script = ROOT / "studies" / "record_suite.sh"
    return subprocess.run(
        ["bash", str(script), "rec", "500", "2026-11-27T07:15", "perf_tests/test_kernels.py"],
        env=env, cwd=ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def test_a_machine_of_another_gpu_records_nothing_and_says_so(tmp_path: Path) -> None:
    done = record(tmp_path, slug="nvidia-h200", record_device="nvidia-h100-80gb-hbm3")
    assert done.returncode == 1
    assert "this machine's GPU is nvidia-h200, not nvidia-h100-80gb-hbm3: nothing recorded" in done.stderr
    assert "unrecorded_cases" not in (tmp_path / "mark").read_text()


def test_the_machine_named_goes_on_to_select_the_cases_left(tmp_path: Path) -> None:
    done = record(tmp_path, slug="nvidia-h100-80gb-hbm3", record_device="nvidia-h100-80gb-hbm3")
    assert "nothing recorded" not in done.stderr
    assert "studies/unrecorded_cases.py" in (tmp_path / "mark").read_text()


def test_a_gpu_another_process_holds_records_nothing_once_the_wait_is_over(tmp_path: Path) -> None:
    done = record(tmp_path, "nvidia-h100-80gb-hbm3", "nvidia-h100-80gb-hbm3", busy_checks=100, wait_s=0)
    assert done.returncode == 6
    assert "the GPU is not fit for timing after 0 s (ci/gpu_check.py above): nothing recorded" in done.stderr
    assert "unrecorded_cases" not in (tmp_path / "mark").read_text()


def test_a_gpu_freed_within_the_wait_is_recorded(tmp_path: Path) -> None:
    done = record(tmp_path, "nvidia-h100-80gb-hbm3", "nvidia-h100-80gb-hbm3", busy_checks=1, wait_s=10)
    assert "nothing recorded" not in done.stderr
    assert (tmp_path / "mark.checks").read_text().count("check") == 2
    assert "studies/unrecorded_cases.py" in (tmp_path / "mark").read_text()
