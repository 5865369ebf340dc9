"""The detection table counted by check, on the committed H200 table (leases CO-CQ of
research/evidence/h200-five-percent-again.md) and on rows made here."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from research.studies import detection_counts

TABLE = Path(__file__).parents[1] / "evidence" / "data" / "h200-detection.csv"


def committed() -> pd.DataFrame:
    return pd.read_csv(TABLE, keep_default_na=False)


def test_a_gpu_slowdown_caught_by_its_launch_alone_counts_for_host_work_not_time() -> None:
    table = detection_counts.selected(committed(), ["matmul/reference"], ["CO", "CP"])
    rows = detection_counts.counts(table, by_lease=True)
    slow_board, fast_board = rows.loc[("matmul/reference", 0.05, "CO")], rows.loc[("matmul/reference", 0.05, "CP")]
    assert (slow_board["runs"], slow_board["by_time"], slow_board["by_host_work"]) == (10, 10, 10)
    assert (fast_board["runs"], fast_board["by_time"], fast_board["by_host_work"], fast_board["caught"]) == (
        10,
        0,
        10,
        10,
    )
    assert fast_board["got_max"] < 0.03 < slow_board["got_min"]


def test_counts_add_the_leases_and_keep_each_slowdown_apart() -> None:
    table = pd.DataFrame(
        {
            "lease": ["A", "A", "B", "B"],
            "case": ["w/c"] * 4,
            "slowdown": [0.0, 0.05, 0.05, 0.05],
            "got": [0.001, 0.052, 0.048, 0.061],
            "caught": [False, True, False, True],
            "caught_by": ["none", "time", "none", "time and host work"],
        }
    )
    rows = detection_counts.counts(table)
    assert list(rows.index) == [("w/c", 0.0), ("w/c", 0.05)]
    five = rows.loc[("w/c", 0.05)]
    assert (five["runs"], five["by_time"], five["by_host_work"], five["caught"]) == (3, 2, 1, 2)
    assert (five["got_min"], five["got_max"]) == (0.048, 0.061)


def test_a_case_or_lease_the_table_lacks_is_named_in_the_error() -> None:
    with pytest.raises(SystemExit, match="no lease ZZ"):
        detection_counts.selected(committed(), None, ["ZZ"])
    with pytest.raises(SystemExit, match="no case w/none"):
        detection_counts.selected(committed(), ["w/none"], None)


def test_the_command_prints_a_markdown_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert detection_counts.main([str(TABLE), "--cases", "gpt2/stack", "--leases", "CO"]) == 0
    out = capsys.readouterr().out
    assert "| gpt2/stack |" in out and "+3.72%" in out and "+4.82%" in out
