"""research/studies/board_groups.py: where a case's stored runs split by the GPU board's part number."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from trainperf.judge import stats
from trainperf.store import baselines

from research.studies.board_groups import board_frame, main, render

SLOW, FAST = "692-2G520-0282-000", "692-2G520-0282-001"


def entry(recorded: list[float], history: list[float], boards: list[str | None], recorded_on: str | None) -> dict:
    samples = [run + step for run in recorded for step in (-0.01, 0.0, 0.01)]
    return {
        "samples_ms": samples,
        "summary": {"median": recorded[0]},
        "run_medians_ms": recorded,
        "history_ms": history,
        "history_boards": boards,
        "accuracy": {},
        "peak_memory_bytes": 1,
        "fingerprint": {"board_part_number": recorded_on},
        "date": "2026-11-29",
    }


def split_case() -> dict:
    """Recorded on a slow board, then accepted on fast ones 2.3% quicker, and on slow ones again."""
    history = [23.35, 23.89, 23.34, 23.36, 23.90, 23.35]
    return entry([23.90, 23.89, 23.90], history, [FAST, SLOW, FAST, FAST, SLOW, FAST], SLOW)


def test_a_board_whose_runs_sit_under_the_center_reads_a_slowdown_smaller() -> None:
    frame = board_frame({"k/split": split_case()}).set_index("board part")
    center = sum([23.90, 23.89, 23.90]) / 3
    fast, slow = frame.loc[FAST], frame.loc[SLOW]
    assert (fast["runs"], slow["runs"]) == (4, 5)  # the slow part's: its 3 recorded runs and 2 accepted
    assert fast["against center"] == pytest.approx(23.35 / center - 1, abs=1e-4)
    assert fast["5% reads"] == pytest.approx(1.05 * 23.35 / center - 1, abs=1e-4)  # about +2.6%
    assert slow["5% reads"] == pytest.approx(0.05, abs=1e-3)
    assert bool(fast["apart"]) and bool(slow["apart"])
    detects = baselines.stored_baseline(split_case()).noise().threshold
    assert fast["detects"] == detects and bool(fast["5% caught"]) == (fast["5% reads"] > detects)
    assert not fast["5% caught"]  # the history spread over both parts judges wider than +2.6%


def test_parts_that_run_alike_are_not_apart_and_unknown_or_few_runs_make_no_group() -> None:
    history = [10.02, 9.98, 10.01, 9.99, 10.0, 10.03, 9.97]
    boards = [FAST, SLOW, FAST, SLOW, None, FAST, SLOW]
    case = entry([10.0, 10.01, 9.99], history, boards, None)
    frame = board_frame({"k/alike": case, "k/few": entry([5.0, 5.0, 5.0], [5.0, 5.0], [FAST, FAST], None)})
    assert sorted(frame["board part"]) == sorted([FAST, SLOW]) and set(frame["case"]) == {"k/alike"}
    assert not frame["apart"].any()
    assert render(frame).startswith("2 board part group(s) of at least 3 stored runs; 0 apart")
    assert len(render(frame).splitlines()) == 1  # no table without a part apart


def test_apart_p_value_of_spread_and_of_constant_sets() -> None:
    assert stats.apart_p_value([1.0, 1.1, 0.9], [5.0, 5.1, 4.9]) < 1e-3
    assert stats.apart_p_value([1.0, 1.1, 0.9], [1.05, 0.95, 1.0]) > 0.5
    assert stats.apart_p_value([2.0, 2.0], [2.0, 2.0, 2.0]) == 1.0
    assert stats.apart_p_value([2.0, 2.0], [3.0, 3.0]) == 0.0
    assert stats.apart_p_value([2.0], [3.0, 3.0]) is None


def test_the_study_lists_the_parts_apart(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "nvidia-h200.json"
    document = {"schema_version": baselines.SCHEMA_VERSION, "device": "nvidia-h200", "cases": {"k/split": split_case()}}
    path.write_text(json.dumps(document), encoding="utf-8")
    assert main([str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].startswith("2 board part group(s) of at least 3 stored runs; 2 apart")
    assert lines[2].split()[-3:] == ["detects", "5%", "caught"]
    rows = {line.split()[1]: line.split() for line in lines[3:]}
    assert rows[FAST][-1] == "no" and rows[FAST][3] == "-2.29%" and rows[SLOW][-1] == "yes"  # +5.0% against 4.9%
