"""research/studies/detection_runs.sh with a stand-in for python3: it runs the plan's cases in sessions of at most
five runs, judged against this GPU's committed file, within its time budget, and resumes from its own
JUnit files."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
H100 = "nvidia-h100-80gb-hbm3"
# names the GPU when asked for its slug, prints $PLAN for the plan, notes every pytest call with the
# slowed-case settings it was given (after SESSION_S seconds, as a session takes time) and reads its standard
# input to the end, as a session may
FAKE_PYTHON = """#!/usr/bin/env bash
if [ "$1" = "-c" ]; then echo "$SLUG"; exit 0; fi
case "$1" in research/studies/detection_plan.py) echo "plan $*" >> "$MARK"; printf '%s' "$PLAN"; exit 0;; esac
case "$*" in *pytest*) sleep "${SESSION_S:-0}"
  echo "pytest $TRAINPERF_SLOWED_CASE $TRAINPERF_SLOWED_ON $TRAINPERF_SLOWDOWNS $TRAINPERF_SLOWED_RUNS \
$TRAINPERF_SLOWED_HOST_WORK $*" >> "$MARK"; cat > /dev/null;; esac
exit 0
"""
# runs its command without a limit, so that a budget of a few seconds may start a session
FAKE_TIMEOUT = """#!/usr/bin/env bash
shift 5
exec "$@"
"""


def run_script(
    tmp_path: Path,
    plan: str,
    slug: str = H100,
    seconds: str = "3000",
    cases: tuple[str, ...] = (),
    **settings: str,
) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    bin_dir, out, mark = tmp_path / "bin", tmp_path / "out", tmp_path / "mark"
    for folder in (bin_dir, out):
        folder.mkdir(exist_ok=True)
    for name, text in (("python3", FAKE_PYTHON), ("timeout", FAKE_TIMEOUT)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    mark.touch()
    env = {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "SLUG": slug,
        "MARK": str(mark),
        "OUT": str(out),
        "PLAN": plan,
        "TRAINPERF_BASELINE_DIR": str(tmp_path / "stored"),
        "TRAINPERF_REPORTS": str(tmp_path / "reports"),
        **settings,
    }
    done = subprocess.run(
        ["bash", str(ROOT / "research" / "studies" / "detection_runs.sh"), "det1", seconds, "LEDGER.csv", *cases],
        env=env, cwd=ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    return done, mark.read_text().splitlines()


def sessions(calls: list[str]) -> list[str]:
    """Each pytest session's case, side, slowdown, runs and host work."""
    return [" ".join(call.split()[1:6]) for call in calls if call.startswith("pytest ")]


def test_a_plan_runs_in_sessions_of_at_most_five_runs_each_on_its_side(tmp_path: Path) -> None:
    plan = "digits/dataloader_workers gpu 0.05 7\nlstm_lm/reference host 0.10 3\n"
    done, calls = run_script(tmp_path, plan)
    assert done.returncode == 0, done.stderr
    assert sessions(calls) == [
        "digits/dataloader_workers gpu 0.05 5 ops",
        "digits/dataloader_workers gpu 0.05 2 ops",
        "lstm_lm/reference host 0.10 3 ops",
    ]
    first = next(call for call in calls if call.startswith("pytest "))
    assert "research/studies/slowed_case.py --perf-confirmations=1000 -q" in first
    assert f"--junitxml={tmp_path}/reports/det1-digits-dataloader_workers-0.05-" in first
    assert f"{H100}.json" in {path.name for path in (tmp_path / "stored").iterdir()}


def test_the_plan_is_this_gpus_committed_file_less_the_runs_this_name_made(tmp_path: Path) -> None:
    earlier = tmp_path / "reports" / "det1-digits-dataloader_workers-0.05-004400"
    earlier.mkdir(parents=True)
    (earlier / "detection.xml").write_text("<testsuites/>")
    _, calls = run_script(tmp_path, "", cases=("digits/dataloader_workers", "lstm_lm/reference"))
    assert calls[0] == (
        f"plan research/studies/detection_plan.py baselines/{H100}.json LEDGER.csv {earlier}/detection.xml "
        "--cases digits/dataloader_workers lstm_lm/reference"
    )


def test_nothing_left_in_the_plan_starts_nothing_and_says_so(tmp_path: Path) -> None:
    done, calls = run_script(tmp_path, "")
    assert done.returncode == 0
    assert f"every case of baselines/{H100}.json has its judged runs in LEDGER.csv" in done.stdout
    assert sessions(calls) == []


def test_no_session_starts_with_120_s_or_less_left(tmp_path: Path) -> None:
    done, calls = run_script(tmp_path, "gpt2/reference gpu 0.05 10\n", seconds="120")
    assert "stopped before gpt2/reference at 0.05, 120 s spent" in done.stdout
    assert sessions(calls) == []


def test_no_session_starts_with_less_time_left_than_the_last_one_took(tmp_path: Path) -> None:
    done, calls = run_script(
        tmp_path, "gpt2_ddp/bucket_cap host 0.10 10\n", seconds="6", DETECTION_SESSION_S="1", SESSION_S="3"
    )
    assert sessions(calls) == ["gpt2_ddp/bucket_cap host 0.10 5 ops"]
    assert "stopped before gpt2_ddp/bucket_cap at 0.10, 6 s spent" in done.stdout


def test_a_gpu_without_a_committed_file_slows_nothing(tmp_path: Path) -> None:
    done, calls = run_script(tmp_path, "gpt2/reference gpu 0.05 10\n", slug="nvidia-b200")
    assert done.returncode == 1
    assert "no committed baseline file for nvidia-b200 (baselines/nvidia-b200.json): nothing slowed" in done.stderr
    assert calls == []
