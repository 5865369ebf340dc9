"""``trainperf calibrate``: a finished run of the recorded code teaches the baselines its noise afterwards,
as ``--perf-calibrate`` would have during the run (judged cases, passed or failed)."""

from __future__ import annotations

import json
import shutil
import statistics
from pathlib import Path

import pytest
from trainperf.cli.main import main
from trainperf.report.noise_table import noise_frame
from trainperf.store import baselines

ROOT = Path(__file__).parent.parent
RUN = Path(__file__).parent / "data" / "h100_digits_ncu.run.json"  # digits --profile=ncu on the H100
SLUG = "nvidia-h100-80gb-hbm3"
H200_RUN = Path(__file__).parent / "data" / "h200_gpt2_bert_host_work.run.json"  # GPT-2 and BERT, counted
SLOW_BOARD_RUN = Path(__file__).parent / "data" / "h200_kernels_slow_board.run.json"  # lease BE, board -000


@pytest.fixture
def baseline_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "baselines"
    folder.mkdir()
    shutil.copy(ROOT / "baselines" / f"{SLUG}.json", folder)
    return folder


def calibrated_h200(run: Path, tmp_path: Path) -> tuple[dict, dict]:
    """The H200 file's cases before and after ``trainperf calibrate RUN`` on a copy of it."""
    folder = tmp_path / "baselines"
    folder.mkdir()
    shutil.copy(ROOT / "baselines" / "nvidia-h200.json", folder)
    before = baselines.load(baselines.baseline_path(folder, "nvidia-h200"))
    assert main(["calibrate", str(run), "--baseline-dir", str(folder)]) == 0
    return before, baselines.load(baselines.baseline_path(folder, "nvidia-h200"))


def run_medians(path: Path) -> dict[str, float]:
    cases = json.loads(path.read_text())["benchmarks"]
    return {case["name"]: case["extra_info"]["summary_ms"]["median"] for case in cases}


def test_each_judged_case_of_the_run_ends_its_history_with_the_runs_median(
    baseline_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = baselines.load(baselines.baseline_path(baseline_dir, SLUG))
    assert main(["calibrate", str(RUN), "--baseline-dir", str(baseline_dir)]) == 0
    after = baselines.load(baselines.baseline_path(baseline_dir, SLUG))
    medians = run_medians(RUN)
    for name, median in medians.items():
        assert baselines.history(after[name]) == [*baselines.history(before[name]), median]
    for name in set(before) - set(medians):
        assert after[name] == before[name]
    assert f"{len(medians)} judged case(s)" in capsys.readouterr().out
    for name in medians:  # the H100's run names no board: a list kept goes on with null, none is begun
        boards = before[name].get("history_boards")
        expected = None if boards is None else [*boards, None][-baselines.HISTORY_RUNS :]
        assert after[name].get("history_boards") == expected


def test_each_judged_case_keeps_the_board_it_ran_on_beside_its_median(tmp_path: Path) -> None:
    """Runs added before the board was kept stand as unknown (null), so that the two lists stay aligned."""
    before, after = calibrated_h200(SLOW_BOARD_RUN, tmp_path)
    medians = run_medians(SLOW_BOARD_RUN)
    assert len(medians) == 7 and medians["matmul/reference"] > 23.8  # the slow group's pace
    for name in medians:
        boards = before[name].get("history_boards") or [None] * len(baselines.history(before[name]))
        assert after[name]["history_boards"] == [*boards, "692-2G520-0282-000"][-baselines.HISTORY_RUNS :]
        assert len(after[name]["history_boards"]) == len(baselines.history(after[name]))


def test_each_judged_case_adds_its_host_calls_and_gpu_busy_share(tmp_path: Path) -> None:
    before, after = calibrated_h200(H200_RUN, tmp_path)
    cases = json.loads(H200_RUN.read_text())["benchmarks"]
    assert len(cases) == 25
    for case in cases:
        info, name = case["extra_info"], case["name"]
        calls = statistics.median(info["host_calls"])  # of each measurement: one here
        assert after[name]["host_calls_history"] == [*before[name].get("host_calls_history", []), calls]
        busy = info["clocks"]["during"]["gpu_busy_share"]
        assert after[name]["gpu_busy_history"] == [*before[name].get("gpu_busy_history", []), busy]
        assert "host_step_calls" not in info  # counted apart since: its history is left as it was
        assert after[name].get("host_step_calls_history") == before[name].get("host_step_calls_history")


def test_a_run_that_counted_its_steps_apart_adds_their_calls_to_the_step_history(tmp_path: Path) -> None:
    document = json.loads(H200_RUN.read_text())
    counted = document["benchmarks"][0]
    counted["extra_info"]["host_step_calls"] = [812]  # as a run since the step was counted apart writes it
    edited = tmp_path / "run.json"
    edited.write_text(json.dumps(document))
    before, after = calibrated_h200(edited, tmp_path)
    stored = before[counted["name"]].get("host_step_calls_history", [])
    assert after[counted["name"]]["host_step_calls_history"] == [*stored, 812.0]
    for case in document["benchmarks"][1:]:
        name = case["name"]
        assert after[name].get("host_step_calls_history") == before[name].get("host_step_calls_history")


def test_a_failed_case_joins_the_history_and_a_case_with_no_baseline_check_does_not(
    baseline_dir: Path, tmp_path: Path
) -> None:
    document = json.loads(RUN.read_text())
    failed, unjudged = document["benchmarks"][1], document["benchmarks"][2]
    for check in failed["extra_info"]["checks"]:
        if check["name"] == "baseline":
            check["passed"] = False
    unjudged["extra_info"]["checks"] = [c for c in unjudged["extra_info"]["checks"] if c["name"] != "baseline"]
    edited = tmp_path / "run.json"
    edited.write_text(json.dumps(document))
    before = baselines.load(baselines.baseline_path(baseline_dir, SLUG))
    assert main(["calibrate", str(edited), "--baseline-dir", str(baseline_dir)]) == 0
    after = baselines.load(baselines.baseline_path(baseline_dir, SLUG))
    assert baselines.history(after[failed["name"]])[-1:] == [failed["extra_info"]["summary_ms"]["median"]]
    assert baselines.history(after[unjudged["name"]]) == baselines.history(before[unjudged["name"]])


def test_no_baseline_file_or_nothing_judged_is_one_line_and_writes_nothing(
    tmp_path: Path, baseline_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["calibrate", str(RUN), "--baseline-dir", str(tmp_path / "none")]) == 2
    error = capsys.readouterr().err.strip()
    assert "\n" not in error and f"{SLUG}.json" in error and "--update-baselines" in error
    assert not (tmp_path / "none").exists()

    document = json.loads(RUN.read_text())
    for case in document["benchmarks"]:
        case["extra_info"]["checks"] = []
    unjudged = tmp_path / "unjudged.json"
    unjudged.write_text(json.dumps(document))
    stored = (baseline_dir / f"{SLUG}.json").read_text()
    assert main(["calibrate", str(unjudged), "--baseline-dir", str(baseline_dir)]) == 2
    assert "no case's time was judged" in capsys.readouterr().err
    assert (baseline_dir / f"{SLUG}.json").read_text() == stored


def test_each_case_whose_threshold_moved_is_printed_with_the_one_trainperf_noise_shows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before, after = calibrated_h200(H200_RUN, tmp_path)
    printed = capsys.readouterr().out.splitlines()
    old, new = noise_frame(before).set_index("case"), noise_frame(after).set_index("case")
    moved = sorted(name for name in after if old.loc[name, "threshold"] != new.loc[name, "threshold"])
    assert moved, "the captured run moves no threshold: the test would prove nothing"
    assert printed[-len(moved) - 1].endswith(f"{len(moved)} case(s) with a new threshold")
    for line, name in zip(printed[-len(moved) :], moved, strict=True):
        before, after = old.loc[name, "threshold"], new.loc[name, "threshold"]
        assert line.startswith(f"  {name}: threshold {before:.1%} -> {after:.1%}")
