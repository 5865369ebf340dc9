"""research/studies/host_work_runs.sh under a time limit: its running pytest is stopped with it and waited for,
so that it writes its reports and does not run on into what the caller starts next."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# stands in for python3: notes that it started, and on SIGTERM that it was stopped, then that it wrote
# its reports half a second later, as pytest does once interrupted; like the plugin's handler
# (trainperf.hooks.termination) it ignores the same stop delivered twice: timeout signals the whole group and
# the script forwards the signal too, and under load both can arrive before the first is handled
FAKE_PYTHON = """#!/usr/bin/env bash
trap 'trap "" TERM; echo stopped >> "$MARK"; sleep 0.5; echo reported >> "$MARK"; exit 2' TERM
echo started >> "$MARK"
sleep 60 & wait $!
"""


def test_a_time_limit_stops_the_running_pytest_and_waits_for_its_reports(tmp_path: Path) -> None:
    bin_dir, stored, mark = tmp_path / "bin", tmp_path / "stored", tmp_path / "mark"
    bin_dir.mkdir()
    stored.mkdir()
    (stored / "nvidia-h200.json").write_text("{}")
    fake = bin_dir / "python3"
    fake.write_text(FAKE_PYTHON)
    fake.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "MARK": str(mark), "BASELINES": str(stored)}
    script = ROOT / "research" / "studies" / "host_work_runs.sh"
    done = subprocess.run(
        ["timeout", "2", "bash", str(script), str(tmp_path / "out"), "gpt2/reference", "0"],
        env=env, cwd=ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 124  # timeout's status: the limit stopped it
    assert mark.read_text().split() == ["started", "stopped", "reported"]
