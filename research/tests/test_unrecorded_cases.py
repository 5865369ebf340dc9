"""research/studies/unrecorded_cases.py: which cases a recording split over several calls still has to record."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest
from trainperf import Ladder

from research.studies import unrecorded_cases

ROOT = Path(__file__).resolve().parents[2]
SINCE = "2026-11-27T07:15:00+00:00"


def ladder_keys() -> set[str]:
    """``workload/case`` of every case of the suite's ladders and of the examples this machine can import
    (timm's may be missing: its tests are then not collected either)."""
    names = [f"workloads.ladders.{path.stem}" for path in (ROOT / "workloads" / "ladders").glob("*.py")]
    names += [f"examples.{path.stem}" for path in (ROOT / "examples").glob("*.py")]  # a test file may hold one
    keys = set()
    for name in names:
        try:
            module = importlib.import_module(name)
        except (ImportError, pytest.skip.Exception):  # an example of a package missing here
            continue
        for ladder in (value for value in vars(module).values() if isinstance(value, Ladder)):
            keys |= {f"{ladder.workload.name}/{case.name}" for case in ladder.cases}
    return keys


def entry(date: str, runs: int) -> dict[str, object]:
    return {"date": date, "run_medians_ms": [1.0] * runs}


def test_every_suite_and_example_test_maps_to_a_case_of_its_ladder() -> None:
    test_ids = unrecorded_cases.collected([str(ROOT / "perf_tests"), str(ROOT / "examples")])
    assert len(test_ids) > 60
    assert {unrecorded_cases.case_key(test_id) for test_id in test_ids} <= ladder_keys()


def test_a_test_of_no_known_workload_is_named() -> None:
    with pytest.raises(SystemExit, match="test_mine"):
        unrecorded_cases.case_key("perf_tests/test_mine.py::test_mine[reference]")


def test_only_cases_recorded_since_are_left_out(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stored = tmp_path / "nvidia-h100-80gb-hbm3.json"
    cases = {
        "transpose/reference": entry("2026-11-27T07:20:00+00:00", 3),  # recorded by this recording
        "transpose/smem_tiled": entry("2026-11-22T17:19:00+00:00", 3),  # an earlier recording
    }
    stored.write_text(json.dumps({"schema_version": 1, "device": "h100", "cases": cases}))
    unrecorded_cases.main([str(stored), SINCE, str(ROOT / "perf_tests" / "test_kernels.py")])
    left = {test_id.split("::")[-1] for test_id in capsys.readouterr().out.split()}
    assert left == {
        "test_transpose[smem_tiled]",
        "test_transpose[smem_tiled_padded]",
        "test_transpose[torch]",
        "test_matmul[reference]",
        "test_matmul[smem_tiled]",
        "test_matmul[cublas]",
    }


def test_nothing_is_printed_once_every_case_is_recorded(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stored = tmp_path / "cpu.json"
    cases = {f"matmul/{name}": entry(SINCE, 3) for name in ("reference", "smem_tiled", "cublas")}
    stored.write_text(json.dumps({"schema_version": 1, "device": "cpu", "cases": cases}))
    unrecorded_cases.main([str(stored), SINCE, f"{ROOT / 'perf_tests' / 'test_kernels.py'}::test_matmul"])
    assert capsys.readouterr().out.strip() == ""
