"""A/A run documents read into the rows of the committed examples' A/A table: the run document of an
A/A run of all four examples captured on an H200 (lease P, run aa-045039, of
research/evidence/h200-examples-gate.md), in which the gate failed two cases after measuring them again."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from research.studies import aa_rows

DATA = Path(__file__).parent / "data"
CAPTURED = DATA / "h200_examples_aa.run.json"
TABLE = Path(__file__).parents[1] / "evidence" / "data" / "h200-examples-aa.csv"


@pytest.fixture
def run_document(placed_run) -> Path:
    """The captured document where trust_runs.sh leaves it: in a folder named by the run."""
    return placed_run(CAPTURED, "aa-045039")


def test_each_judged_case_is_a_row_with_its_threshold_and_verdict(run_document: Path) -> None:
    rows = aa_rows.rows("P", [run_document])
    assert len(rows) == 16 and set(rows["run"]) == {"aa-045039"}
    failed = rows[rows["verdict"] == "fail"]
    assert sorted(failed["case"]) == ["hf_llama/compile", "timm_resnet50/amp_bf16"]
    assert failed["confirmed"].all() and not rows[rows["verdict"] == "pass"]["confirmed"].any()
    assert (rows["detects"] >= 0.03).all()


def test_the_rows_are_those_the_committed_table_holds_for_this_run(run_document: Path) -> None:
    made = aa_rows.rows("P", [run_document])
    found = made.merge(pd.read_csv(TABLE), how="left", indicator=True)
    assert (found["_merge"] == "both").all(), found[found["_merge"] != "both"]


def test_rows_are_appended_under_the_tables_header(run_document: Path, tmp_path: Path) -> None:
    table = tmp_path / "aa.csv"
    table.write_text(",".join(aa_rows.COLUMNS) + "\n")
    assert aa_rows.main(["P", str(run_document), "--append", str(table)]) == 0
    assert len(pd.read_csv(table)) == 16


def test_a_run_without_judged_cases_says_so(tmp_path: Path) -> None:
    """The captured run as a first run would write it: no case had a stored baseline."""
    document = json.loads(CAPTURED.read_text())
    for case in document["benchmarks"]:
        case["extra_info"].pop("baseline_median_ms")
    run = tmp_path / "aa-000000" / "run.json"
    run.parent.mkdir()
    run.write_text(json.dumps(document))
    with pytest.raises(SystemExit, match="no case judged"):
        aa_rows.rows("X", [run])
