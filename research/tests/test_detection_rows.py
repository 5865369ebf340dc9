"""The detection study's JUnit files, read into the rows of the committed detection table: JUnit
captured on an H200 (lease N of research/evidence/h200-detection.md) and an H100 (lease CE of
research/evidence/h100-detection.md)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from research.studies import detection_rows
from research.studies.trust_table import detection_runs

DATA = Path(__file__).parent / "data"
GEMM = DATA / "h200_stack_fp8_gemm.detection.xml"  # 2 runs unslowed, 2 with 7% of bf16 GEMMs
DDP = DATA / "h200_ddp_reference.detection.xml"  # 10 runs with a 5% spin
HOST_OPS = DATA / "h100_bert_compile_host_ops.detection.xml"  # 5 runs with 10% of tiny GPU ops added
TABLE = Path(__file__).parents[1] / "evidence" / "data" / "h200-detection.csv"
H100_TABLE = TABLE.with_name("h100-detection.csv")


def test_each_run_is_a_row_with_its_verdict_and_whether_a_second_measurement_upheld_it() -> None:
    runs = detection_runs([GEMM, DDP])
    assert len(runs) == 14
    gemm = runs[runs["case"] == "gpt2/stack_fp8"]
    assert list(gemm["slowdown"]) == [0.0, 0.0, 0.07, 0.07]
    assert list(gemm["caught"]) == [False, False, True, True]
    assert list(gemm["upheld"]) == [False, False, True, True]
    ddp = runs[runs["case"] == "gpt2_ddp/reference"]
    assert ddp["caught"].sum() == 1 and ddp["upheld"].sum() == 1
    assert not runs["other_failure"].any()
    assert set(runs["caught_by"]) == {"time", "none"}
    assert runs["got"].tolist() == pytest.approx((runs["median_ms"] / runs["baseline_ms"] - 1).tolist())


def test_a_run_failed_by_its_host_work_is_caught_though_its_time_passed() -> None:
    runs = detection_runs([HOST_OPS])
    assert len(runs) == 5 and (runs["slowdown"] == 0.1).all()
    assert runs["caught"].all() and (runs["caught_by"] == "host work").all()
    assert not runs["upheld"].any() and not runs["other_failure"].any()


def test_the_h100_rows_are_those_the_committed_table_holds_for_these_runs() -> None:
    made = detection_rows.rows("CE", [HOST_OPS])
    found = made.merge(pd.read_csv(H100_TABLE), how="left", indicator=True)
    assert (found["_merge"] == "both").all(), found[found["_merge"] != "both"]


def test_the_rows_are_those_the_committed_table_holds_for_these_runs() -> None:
    made = detection_rows.rows("N", [GEMM, DDP])
    found = made.merge(pd.read_csv(TABLE), how="left", indicator=True)
    assert (found["_merge"] == "both").all(), found[found["_merge"] != "both"]


def test_rows_are_appended_under_the_tables_header(tmp_path: Path) -> None:
    table = tmp_path / "detection.csv"
    table.write_text(",".join(detection_rows.COLUMNS) + "\n")
    assert detection_rows.main(["N", str(GEMM), "--append", str(table)]) == 0
    assert detection_rows.main(["N", str(DDP), "--append", str(table)]) == 0
    assert len(pd.read_csv(table)) == 14


def test_a_table_with_other_columns_is_left_untouched(tmp_path: Path) -> None:
    table = tmp_path / "other.csv"
    table.write_text("case,median_ms\n")
    with pytest.raises(SystemExit, match="its header is"):
        detection_rows.main(["N", str(GEMM), "--append", str(table)])
    assert table.read_text() == "case,median_ms\n"


def test_a_junit_file_without_a_measured_run_says_so(tmp_path: Path) -> None:
    empty = tmp_path / "empty.xml"
    empty.write_text(
        '<testsuites><testsuite><testcase name="test_slowed[x]"><skipped/></testcase></testsuite></testsuites>'
    )
    with pytest.raises(SystemExit, match="no measured run"):
        detection_rows.rows("N", [empty])
