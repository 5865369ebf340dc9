"""Work-gate run documents read into the rows of its evidence table: the run document of a suite run
with one synchronization injected into each step, captured on an H200 (machine H, run sync4 of
research/evidence/h200-work-gate-sixth-machine.md), in which every case failed on its work."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pandas as pd
import pytest

from research.studies import work_gate_rows

DATA = Path(__file__).parent / "data"
CAPTURED = DATA / "h200_suite_sync.run.json"
TABLE = Path(__file__).parents[1] / "evidence" / "data" / "h200-work-gate-sixth-machine.csv"


@pytest.fixture
def run_document(placed_run) -> Path:
    """The captured document where gate_runs.sh's pack leaves it: in a folder named by the run."""
    return placed_run(CAPTURED, "sync4")


def test_each_case_is_a_row_naming_the_checks_that_failed_it(run_document: Path) -> None:
    rows = work_gate_rows.rows("H", [run_document])
    assert len(rows) == 11 and set(rows["run"]) == {"sync4"} and set(rows["files"]) == {"suite"}
    assert (rows["verdict"] == "fail").all() and rows["failed"].str.contains("work").all()
    assert rows["work_message"].str.contains(r"\+1 aten::item").all()
    assert rows["kernel_time_pct"].str.match(r"^[+-]\d+\.\d$").all()


def test_the_rows_are_those_the_committed_table_holds_for_this_run(run_document: Path) -> None:
    made = pd.read_csv(io.StringIO(work_gate_rows.rows("H", [run_document]).to_csv(index=False)))
    committed = pd.read_csv(TABLE)
    found = made.merge(committed[committed["run"] == "sync4"], how="left", indicator=True)
    assert (found["_merge"] == "both").all(), found[found["_merge"] != "both"]


def test_an_unfinished_case_is_a_row_with_its_verdict_only(tmp_path: Path) -> None:
    """The captured run as a session stopped before its last case would write it."""
    document = json.loads(CAPTURED.read_text())
    last = document["benchmarks"].pop()
    document["unfinished"] = [{"name": last["name"], "verdict": "unfinished", "reason": "stopped"}]
    run = tmp_path / "sync9" / "run.json"
    run.parent.mkdir()
    run.write_text(json.dumps(document))
    rows = work_gate_rows.rows("X", [run])
    unfinished = rows[rows["case"] == last["name"]]
    assert list(unfinished["verdict"]) == ["unfinished"] and unfinished["failed"].eq("").all()


def test_rows_are_appended_under_the_tables_header(run_document: Path, tmp_path: Path) -> None:
    table = tmp_path / "gate.csv"
    table.write_text(",".join(work_gate_rows.COLUMNS) + "\n")
    assert work_gate_rows.main(["H", str(run_document), "--append", str(table)]) == 0
    assert len(pd.read_csv(table)) == 11
