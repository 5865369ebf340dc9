"""The nightly job's pieces on the CPU: the GPU check's verdicts, the workflows' schema, the dry run."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

from ci import gpu_check

ROOT = Path(__file__).resolve().parents[1]
WORKFLOWS = [ROOT / "ci" / "nightly.yml", ROOT / "ci" / "refresh-baselines.yml"]


def state(**changes: object) -> gpu_check.GpuState:
    fields: dict[str, object] = {
        "index": 0, "name": "NVIDIA H100 80GB HBM3", "sm_clock_mhz": 345, "sm_clock_max_mhz": 1980,
        "temperature_c": 31, "power_w": 70.0, "memory_used_mib": 1.0, "reasons": 0x1, "processes": (),
    }  # fmt: skip
    fields.update(changes)
    return gpu_check.GpuState(**fields)  # type: ignore[arg-type]


def test_an_idle_gpu_is_fit_a_busy_or_throttled_one_is_not() -> None:
    assert gpu_check.problems([state()]) == []
    assert "idle" in state().line() and "other processes: none" in state().line()
    assert gpu_check.problems([state(reasons=0x4)]) == []  # a power cap is noted, not fatal
    assert gpu_check.problems([state(index=1, processes=(4242,))]) == ["GPU 1 is busy: processes [4242] use it"]
    assert gpu_check.problems([state(reasons=0x20 | 0x80)]) == [
        "GPU 0 is throttled: software thermal slowdown, hardware power brake"
    ]


def test_no_gpu_exits_7_unless_a_cpu_dry_run(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("pynvml")
    try:
        import pynvml

        pynvml.nvmlInit()
        pytest.skip("this machine has an NVIDIA driver")
    except pynvml.NVMLError:
        pass
    assert gpu_check.main([]) == gpu_check.NO_GPU
    assert gpu_check.main(["--allow-cpu"]) == 0
    assert "a CPU dry run goes on" in capsys.readouterr().err


def test_workflows_follow_the_github_schema_and_a_broken_one_does_not(tmp_path: Path) -> None:
    checker = shutil.which("check-jsonschema")
    if checker is None:
        pytest.skip("check-jsonschema not installed (pip install -e '.[dev]')")
    command = [checker, "--builtin-schema", "vendor.github-workflows"]
    assert subprocess.run([*command, *map(str, WORKFLOWS)], capture_output=True, check=False).returncode == 0
    broken = tmp_path / "broken.yml"
    broken.write_text(WORKFLOWS[0].read_text().replace("runs-on:", "runs_on:"))
    assert subprocess.run([*command, str(broken)], capture_output=True, check=False).returncode != 0


@pytest.mark.slow
def test_nightly_dry_run_on_the_cpu_keeps_junit_and_report(tmp_path: Path) -> None:
    out, summary = tmp_path / "nightly", tmp_path / "step-summary.md"
    summary.write_text("earlier steps' summary\n")
    done = subprocess.run(
        ["bash", "ci/nightly.sh", "--dry-run", str(out), "-k", "test_digits and reference", "-p", "no:cacheprovider"],
        cwd=ROOT, capture_output=True, text=True, timeout=900, check=False,
        env={**os.environ, "GITHUB_STEP_SUMMARY": str(summary), "TRAINPERF_LAST_GREEN_FILE": str(tmp_path / "green")},
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    suite = ElementTree.parse(out / "junit.xml").getroot().find("testsuite")
    assert suite is not None and suite.get("tests") == "1" and suite.get("failures") == "0"
    assert {"run.json", "report.html", "report.md"} <= {p.name for p in (out / "report").iterdir()}
    assert (out / "report" / "profiles" / "digits-reference" / "trace.json").is_file()
    appended = summary.read_text()  # the job summary, after what earlier steps wrote
    assert appended.startswith("earlier steps' summary\n## trainperf: ") and "| digits/reference " in appended


def test_nightly_keeps_its_compile_caches_in_the_workspace_unless_told_otherwise(tmp_path: Path) -> None:
    """torch.compile's cache and the CUDA extensions' builds go where ci/nightly.yml keeps them between
    nights; a runner that sets torch's own variables keeps its own place. Each is named with what it holds.
    A night that runs no test fails."""
    kept = tmp_path / "inductor"
    kept.mkdir()
    (kept / "graph").write_bytes(b"x" * 8192)
    environment = {
        key: value for key, value in os.environ.items() if not key.startswith(("TORCHINDUCTOR", "TORCH_EXT"))
    }
    told = subprocess.run(
        ["bash", "ci/nightly.sh", "--dry-run", str(tmp_path / "out"), "-k", "no_such_case", "-p", "no:cacheprovider"],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
        env={**environment, "TORCHINDUCTOR_CACHE_DIR": str(kept)},
    )  # fmt: skip
    workspace = ROOT / ".trainperf" / "compile" / "extensions"
    assert re.search(rf"nightly: compile cache {re.escape(str(kept))}: [0-9.]+K kept from earlier runs", told.stderr)
    assert f"nightly: compile cache {workspace}: " in told.stderr
    assert told.returncode == 1 and "nightly: no test ran" in told.stderr


def test_the_ci_check_stops_at_a_lint_failure_before_any_test(tmp_path: Path) -> None:
    """A failing linter fails the pipeline (inside an && list, set -e let it pass on to the tests)."""
    tools = tmp_path / "bin"
    tools.mkdir()
    for name, status in (("ruff", 1), ("mypy", 0), ("check-jsonschema", 0), ("pytest", 0)):
        (tools / name).write_text(f"#!/bin/sh\necho {name} ran >> {tmp_path}/ran\nexit {status}\n")
        (tools / name).chmod(0o755)
    env = {"PATH": f"{tools}:/usr/bin:/bin"}
    done = subprocess.run(["bash", "ci/check.sh"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert (tmp_path / "ran").read_text().splitlines() == ["ruff ran"]
