"""Profiled runs' verdicts against the unprofiled runs of the same machine: two run documents captured
on an H100 (lease BZ of research/evidence/h100-examples-ncu.md), the 16 example cases unprofiled (run
aa-221200) and then the timm ResNet-50's four cases under ``--profile=ncu`` (run aa-221623)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from research.studies import profile_verdicts

DATA = Path(__file__).parent / "data"
UNPROFILED = DATA / "h100_examples_unprofiled.run.json"
PROFILED = DATA / "h100_timm_ncu.run.json"
TABLE = Path(__file__).parents[1] / "evidence" / "data" / "h100-examples-ncu.csv"


def placed(tmp_path: Path, captured: Path, run: str, edit: dict[str, str] | None = None) -> Path:
    """The captured document where trust_runs.sh leaves it, with ``edit`` applied: case -> verdict,
    or ``gpu_uuid`` -> another machine's."""
    data = json.loads(captured.read_text())
    for case in data["benchmarks"]:
        case["extra_info"]["verdict"] = (edit or {}).get(case["name"], case["extra_info"]["verdict"])
    data["machine_info"]["gpu_uuid"] = (edit or {}).get("gpu_uuid", data["machine_info"]["gpu_uuid"])
    path = tmp_path / run / "run.json"
    path.parent.mkdir()
    path.write_text(json.dumps(data))
    return path


@pytest.fixture
def pair(tmp_path: Path) -> list[Path]:
    runs = [(UNPROFILED, "aa-221200"), (PROFILED, "aa-221623")]
    return [placed(tmp_path, captured, run) for captured, run in runs]


def test_each_case_run_is_a_row_with_the_profiler_that_gave_its_kernels(pair: list[Path]) -> None:
    rows = profile_verdicts.case_runs(pair)
    assert len(rows) == 20 and rows["machine"].nunique() == 1
    profiled = rows[rows["profiler"] == "ncu"]
    assert sorted(profiled["case"]) == sorted(
        f"timm_resnet50/{name}" for name in ("amp_bf16", "compile", "reference", "tf32")
    )
    assert (profiled["profile_s"] > 0).all() and rows[rows["profiler"] == "none"]["profile_s"].isna().all()


def test_the_captured_profiled_verdicts_agree(pair: list[Path], capsys: pytest.CaptureFixture[str]) -> None:
    assert profile_verdicts.main([str(path) for path in pair]) == 0
    out = capsys.readouterr().out
    assert "4 of 4 profiled case-runs agree" in out and "| timm_resnet50/compile" in out


def test_a_profiled_verdict_that_differs_fails_and_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    paths = [placed(tmp_path, UNPROFILED, "aa-1"), placed(tmp_path, PROFILED, "aa-2", {"timm_resnet50/tf32": "fail"})]
    assert profile_verdicts.main([str(path) for path in paths]) == 1
    out = capsys.readouterr().out
    assert "3 of 4 profiled" in out and "aa-2 timm_resnet50/tf32: fail under ncu, unprofiled: pass" in out


def test_a_profiled_run_of_another_machine_has_nothing_to_match(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = [placed(tmp_path, UNPROFILED, "aa-1"), placed(tmp_path, PROFILED, "aa-2", {"gpu_uuid": "GPU-00000000-x"})]
    assert profile_verdicts.main([str(path) for path in paths]) == 1
    assert "no unprofiled run on this machine" in capsys.readouterr().out


def test_unprofiled_runs_alone_say_there_is_nothing_to_compare(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert profile_verdicts.main([str(placed(tmp_path, UNPROFILED, "aa-1"))]) == 1
    assert "no profiled run" in capsys.readouterr().err


def test_the_rows_are_those_the_committed_table_holds(pair: list[Path]) -> None:
    found = profile_verdicts.case_runs(pair).merge(pd.read_csv(TABLE), how="left", indicator=True)
    assert (found["_merge"] == "both").all(), found[found["_merge"] != "both"]
