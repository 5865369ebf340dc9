"""``trainperf noise``: what each case of a baseline file lets the gate catch, read before any run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from trainperf.cli.main import main
from trainperf.report.noise_table import noise_frame, threshold_changes

H100 = Path(__file__).parent.parent / "baselines" / "nvidia-h100-80gb-hbm3.json"


def entry(run_medians: list[float], samples: list[float], busy: float | None = None) -> dict:
    host = {} if busy is None else {"gpu_busy_share": busy}
    return {"samples_ms": samples, "summary": {"median": run_medians[0]}, "run_medians_ms": run_medians, "host": host}


def test_each_case_says_what_set_its_threshold_widest_first() -> None:
    cases = {
        "w/steady": entry([10.0, 10.0, 10.0], [10.0] * 9, busy=0.99),
        "w/one_run": entry([10.0], [10.0] * 3, busy=0.99),
        "w/runs_apart": entry([10.0, 11.0, 12.0], [10.0] * 3 + [11.0] * 3 + [12.0] * 3, busy=0.99),
        "w/busy_host": entry([10.0, 10.0, 10.0], ([8.0] * 4 + [12.0] * 4) * 3, busy=0.5),
    }
    cases["w/busy_host"]["host_calls"] = [1200, 1200, 1200]  # counted in each run, the same count
    frame = noise_frame(cases)
    assert list(frame["case"]) == ["w/busy_host", "w/runs_apart", "w/one_run", "w/steady"]
    assert list(frame["set by"]) == [
        "iterations within a run; its time awaits calibration: its GPU waited for the host",
        "run medians",
        "fallback: fewer than 3 runs",
        "floor",
    ]
    assert frame["threshold"][0] == pytest.approx(6.965 * (4 / 1.349 / 10) * (4 / 3) ** 0.5, rel=1e-3)  # IQR 8-12 ms
    assert frame["threshold"].tolist()[2:] == [pytest.approx(0.10), pytest.approx(0.03)]
    assert frame["threshold"][1] == pytest.approx(6.965 * 0.0909 * (4 / 3) ** 0.5, rel=1e-3)  # t(0.99, 2) x stdev
    assert frame["caught 9/10"][1] == pytest.approx(frame["threshold"][1] + 1.632 * 0.0909, rel=1e-3)  # z(0.9 ** 0.5)
    assert frame["caught 9/10"].isna().tolist() == [False, False, True, False]  # unknown without measured noise
    assert frame["host work"].isna().tolist() == [False, True, True, True]  # only the case whose GPU waited
    assert frame["host work"][0] == pytest.approx(0.03)  # three equal counts: the floor
    calibrated = {"w/busy_host": {**cases["w/busy_host"], "history_ms": [10.0, 10.0, 10.0]}}
    assert list(noise_frame(calibrated)["set by"]) == ["iterations within a run"]  # runs of 3 later sessions


def test_the_committed_h100_file_shows_its_blind_cases_first(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["noise", str(H100)]) == 0
    lines = capsys.readouterr().out.splitlines()
    count = len(json.loads(H100.read_text(encoding="utf-8"))["cases"])  # the file's own cases, whatever they are
    assert lines[0] == f"{H100}: {count} case(s), the gate's default floor 3% (a case's own raises it)"
    assert lines[1].split()[:3] == ["case", "runs", "accepted"] and len(lines) == 2 + count
    widest, narrowest = lines[2].split(), lines[-1].split()
    assert float(widest[6].rstrip("%")) > 50 and widest[-1] == "+3.0%"  # launch-bound: its host work is judged
    assert narrowest[6] == "3.0%" and narrowest[8] == "floor"
    assert float(narrowest[7].rstrip("%")) > 3.0  # a slowdown at the floor is caught half the time


def test_a_missing_file_or_a_selection_of_no_case_is_one_line(tmp_path: Path, capsys) -> None:
    assert main(["noise", str(tmp_path / "none.json")]) == 2
    assert capsys.readouterr().err == f"trainperf: {tmp_path / 'none.json'}: no such baseline file\n"
    assert main(["noise", str(H100), "-k", "no_such_case"]) == 2
    assert capsys.readouterr().err == f"trainperf: {H100}: no case whose name contains 'no_such_case'\n"
    assert main(["noise", str(H100), "-k", "digits/amp"]) == 0
    assert "digits/amp_bf16" in capsys.readouterr().out


def test_a_threshold_change_is_listed_with_its_runs_and_an_unchanged_or_removed_case_is_not() -> None:
    before = {
        "w/steady": entry([10.0, 10.0, 10.0], [10.0] * 9),
        "w/widened": entry([10.0, 10.0, 10.0], [10.0] * 9),
        "w/removed": entry([10.0, 10.0, 10.0], [10.0] * 9),
    }
    after = {
        "w/steady": {**before["w/steady"], "history_ms": [10.0]},
        "w/widened": {**before["w/widened"], "history_ms": [13.0]},
        "w/new": entry([10.0], [10.0] * 3),
    }
    lines = threshold_changes(before, after)
    assert len(lines) == 2
    assert lines[0] == "w/new: threshold - -> 10.0% (- -> 1 runs)"
    assert lines[1].startswith("w/widened: threshold 3.0% -> ") and lines[1].endswith("(3 -> 4 runs)")
