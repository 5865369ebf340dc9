"""research/studies/record_suite.sh and research/studies/strict_suite.sh on a machine of another GPU than the one named,
or on a GPU another process holds: they time nothing (the check both source, research/studies/gpu_ready.sh)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import NamedTuple

import pytest

ROOT = Path(__file__).resolve().parents[2]
# stands in for python3: names the GPU when asked for its slug, finds it busy at its first BUSY_CHECKS
# checks, answers the studies that pick the cases left with $LEFT, notes every other call
FAKE_PYTHON = """#!/usr/bin/env bash
if [ "$1" = "-c" ]; then echo "$SLUG"; exit 0; fi
if [ "$1" = "ci/gpu_check.py" ]; then
  echo check >> "$MARK.checks"
  (($(wc -l < "$MARK.checks") > ${BUSY_CHECKS:-0})) || { echo "gpu-check: GPU 0 is busy"; exit 6; }
fi
case "$1" in research/studies/*_cases.py) echo "${LEFT:-}";; esac
echo "$*" >> "$MARK"
"""

H100 = "nvidia-h100-80gb-hbm3"  # the GPU each script is told to time on


class Script(NamedTuple):
    args: list[str]  # its arguments before the test files, SECONDS standing for its time budget
    nothing: str  # what it says it left undone
    selects: str  # the study that picks the cases left


SCRIPTS = {
    "record_suite": Script(
        ["rec", "SECONDS", "2026-11-27T07:15"], "nothing recorded", "research/studies/unrecorded_cases.py"
    ),
    "strict_suite": Script(["aa1", "SECONDS"], "nothing judged", "research/studies/unjudged_cases.py"),
}


@pytest.fixture(params=sorted(SCRIPTS))
def script(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def run_script(
    tmp_path: Path,
    slug: str,
    record_device: str,
    busy_checks: int = 0,
    wait_s: int = 120,
    script: str = "record_suite",
    left: str = "",
    seconds: str = "500",
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
        "LEFT": left,
        "TRAINPERF_REPORTS": str(tmp_path / "reports"),
    }
    args = [seconds if arg == "SECONDS" else arg for arg in SCRIPTS[script].args]
    return subprocess.run(
        ["bash", str(ROOT / "research" / "studies" / f"{script}.sh"), *args, "perf_tests/test_kernels.py"],
        env=env, cwd=ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def test_a_machine_of_another_gpu_times_nothing_and_says_so(tmp_path: Path, script: str) -> None:
    done = run_script(tmp_path, slug="nvidia-h200", record_device="nvidia-h100-80gb-hbm3", script=script)
    assert done.returncode == 1
    assert f"this machine's GPU is nvidia-h200, not nvidia-h100-80gb-hbm3: {SCRIPTS[script].nothing}" in done.stderr
    assert SCRIPTS[script].selects not in (tmp_path / "mark").read_text()


def test_the_machine_named_goes_on_to_select_the_cases_left(tmp_path: Path, script: str) -> None:
    done = run_script(tmp_path, slug=H100, record_device=H100, script=script)
    assert SCRIPTS[script].nothing not in done.stderr
    assert SCRIPTS[script].selects in (tmp_path / "mark").read_text()


def test_a_gpu_another_process_holds_times_nothing_once_the_wait_is_over(tmp_path: Path, script: str) -> None:
    done = run_script(tmp_path, H100, H100, busy_checks=100, wait_s=0, script=script)
    assert done.returncode == 6
    assert f"the GPU is not fit for timing after 0 s (ci/gpu_check.py above): {SCRIPTS[script].nothing}" in done.stderr
    assert SCRIPTS[script].selects not in (tmp_path / "mark").read_text()


def test_a_gpu_freed_within_the_wait_is_timed(tmp_path: Path, script: str) -> None:
    done = run_script(tmp_path, H100, H100, busy_checks=1, wait_s=10, script=script)
    assert SCRIPTS[script].nothing not in done.stderr
    assert (tmp_path / "mark.checks").read_text().count("check") == 2
    assert SCRIPTS[script].selects in (tmp_path / "mark").read_text()


def test_the_wait_for_the_gpu_counts_against_the_time_budget(tmp_path: Path, script: str) -> None:
    """Two busy checks, 2 s apart, leave less than a file's 120 s of a 124-s budget: no file starts."""
    done = run_script(tmp_path, H100, H100, busy_checks=2, wait_s=10, script=script, seconds="124")
    assert "stopped before perf_tests/test_kernels.py, 124 s spent" in done.stdout
    assert SCRIPTS[script].selects not in (tmp_path / "mark").read_text()


def test_a_strict_run_reads_its_own_documents_and_never_records(tmp_path: Path) -> None:
    """The fake study names one case left, so the strict run's pytest (under ci/device_pytest.sh) starts."""
    left = "perf_tests/test_kernels.py::test_matmul[cublas]"
    done = run_script(tmp_path, H100, H100, script="strict_suite", left=left)
    calls = (tmp_path / "mark").read_text()
    reports = tmp_path / "reports"
    assert f"research/studies/unjudged_cases.py {reports}/aa1-*/run.json perf_tests/test_kernels.py" in calls, (
        done.stderr
    )
    assert f"--perf-report={reports}/aa1-test_kernels-" in calls
    assert f"{left} --perf-strict -q -rs" in calls
    assert "--update-baselines" not in calls


def test_a_strict_run_says_whether_it_starts_or_resumes(tmp_path: Path) -> None:
    """A call that lands on a fresh machine finds no documents of its run and starts it again: it says so."""
    (tmp_path / "first").mkdir()
    first = run_script(tmp_path / "first", H100, H100, script="strict_suite")
    assert "strict_suite: run aa1 starts: no run document of it in" in first.stdout
    earlier = tmp_path / "again" / "reports" / "aa1-test_digits-101812"
    earlier.mkdir(parents=True)
    (earlier / "run.json").write_text("{}")
    again = run_script(tmp_path / "again", H100, H100, script="strict_suite")
    assert f"strict_suite: run aa1 resumes: 1 run document(s) of it in {tmp_path / 'again' / 'reports'}" in again.stdout
