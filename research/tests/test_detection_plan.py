"""research/studies/detection_plan.py: the runs the detection study still lacks, per case and slowdown, from the
H100's committed baseline file and JUnit captured there (lease CC of research/evidence/h100-detection.md:
digits/dataloader_workers, 10 runs unslowed and 6 judged at 5%)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from trainperf.store import baselines

from research.studies import detection_plan, detection_rows

ROOT = Path(__file__).parents[2]
H100 = ROOT / "baselines" / "nvidia-h100-80gb-hbm3.json"
CAPTURED = Path(__file__).parent / "data" / "h100_dataloader_workers.detection.xml"
BUSY = "digits/dataloader_workers"  # its GPU busy 95% of its recording
WAITS = "lstm_lm/reference"  # a launch-bound LSTM: its GPU waits for the host


@pytest.fixture
def empty_ledger(tmp_path: Path) -> Path:
    ledger = tmp_path / "detection.csv"
    ledger.write_text(",".join(detection_rows.COLUMNS) + "\n")
    return ledger


def wanted(ledger: Path, *junit: Path, cases: tuple[str, ...] = (BUSY, WAITS)) -> list[detection_plan.Wanted]:
    stored = {case: baselines.load(H100)[case] for case in cases}
    return detection_plan.plan(stored, detection_plan.judged(ledger, list(junit)))


def test_a_busy_gpu_needs_5_and_10_percent_by_gpu_work_and_a_waiting_one_10_by_host_work(
    empty_ledger: Path,
) -> None:
    assert wanted(empty_ledger) == [
        (BUSY, "gpu", 0.05, 10),
        (BUSY, "gpu", 0.10, 10),
        (WAITS, "host", 0.10, 10),
    ]


def test_judged_runs_of_a_junit_file_count_and_unslowed_ones_do_not(empty_ledger: Path) -> None:
    assert wanted(empty_ledger, CAPTURED)[:2] == [(BUSY, "gpu", 0.05, 4), (BUSY, "gpu", 0.10, 10)]


def test_the_ledgers_rows_count_as_the_junit_files_runs_do(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.csv"
    detection_rows.rows("CC", [CAPTURED]).to_csv(ledger, index=False)
    assert wanted(ledger, cases=(BUSY,)) == [(BUSY, "gpu", 0.05, 4), (BUSY, "gpu", 0.10, 10)]


def test_a_case_with_all_its_runs_is_left_out(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.csv"
    slowed = detection_rows.rows("CC", [CAPTURED]).query("slowdown > 0")  # 6 runs at 5%
    pd.concat([slowed, slowed, slowed.assign(slowdown=0.10)]).to_csv(ledger, index=False)
    assert wanted(ledger, cases=(BUSY,)) == [(BUSY, "gpu", 0.10, 4)]


def test_a_case_without_a_busy_figure_counts_as_busy() -> None:
    assert detection_plan.gpu_busy({"host": {"gpu_busy_share": None}})
    assert detection_plan.gpu_busy({})
    assert not detection_plan.gpu_busy({"host": {"gpu_busy_share": 0.89}})


def test_the_command_prints_a_line_per_case_and_slowdown_left(
    empty_ledger: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    detection_plan.main([str(H100), str(empty_ledger), str(CAPTURED), "--cases", BUSY, WAITS])
    assert capsys.readouterr().out.splitlines() == [
        f"{BUSY} gpu 0.05 4",
        f"{BUSY} gpu 0.10 10",
        f"{WAITS} host 0.10 10",
    ]


def test_every_case_of_the_file_is_planned_where_none_is_named(
    empty_ledger: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    detection_plan.main([str(H100), str(empty_ledger)])
    planned = {line.split()[0] for line in capsys.readouterr().out.splitlines()}
    assert planned == set(baselines.load(H100))


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["baselines/none.json", "LEDGER"], "no baseline file baselines/none.json"),
        ([str(H100), "none.csv"], "no ledger none.csv; start one with the header line lease,case,test,"),
        ([str(H100), "LEDGER", "--cases", "gpt2/nope"], f"{H100} holds no case gpt2/nope"),
    ],
)
def test_bad_input_is_refused_with_what_to_do(empty_ledger: Path, arguments: list[str], message: str) -> None:
    with pytest.raises(SystemExit, match=message.replace("(", r"\(")):
        detection_plan.main([str(empty_ledger) if arg == "LEDGER" else arg for arg in arguments])
