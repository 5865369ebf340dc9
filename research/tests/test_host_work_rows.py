"""Run documents read into the rows of the committed host-work table: the run document of ten runs of
``gpt2/no_host_sync`` slowed by tiny GPU ops issued from the host, captured on an H200 (lease AN of
research/evidence/h200-host-work.md), each failed by the host-work check and passed by the time check; the
reference it was measured against on demand is not one of the document's cases."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from research.studies import host_work_rows

DATA = Path(__file__).parent / "data"
CAPTURED = DATA / "h200_host_work_slowed.run.json"
TABLE = Path(__file__).parents[1] / "evidence" / "data" / "h200-host-work.csv"


def test_each_case_run_is_a_row_with_both_checks(placed_run) -> None:
    path = placed_run(CAPTURED, "ops-slowed")
    table = host_work_rows.rows("AN", [path])
    slowed = table[table["case"] == "gpt2/no_host_sync"]
    assert len(table) == len(slowed) == 10 and (slowed["run"] == "ops-slowed").all()
    assert (slowed["stored_calls"] == 3218).all() and (slowed["calls_detects"] == 0.03).all()
    assert (slowed["host_calls"] > 1.1 * 3218).all() and not slowed["calls_passed"].any()
    assert slowed["time_passed"].all() and (slowed["verdict"] == "fail").all()


def test_the_committed_table_holds_these_rows(placed_run) -> None:
    path = placed_run(CAPTURED, "ops-slowed")
    committed = pd.read_csv(TABLE)
    assert committed.columns.tolist() == host_work_rows.COLUMNS
    lease = committed[(committed["lease"] == "AN") & (committed["run"] == "ops-slowed")]
    assert lease["host_calls"].tolist() == host_work_rows.rows("AN", [path])["host_calls"].tolist()


def test_the_steps_calls_into_torch_show_the_ops_the_total_hides(placed_run) -> None:
    """Lease AW: two runs unslowed, then two with ops costing 10% of the step, of the two cases whose
    total count hid them (timm_resnet50/compile, gpt2_medium/optimizer_memory)."""
    path = placed_run(DATA / "h200_torch_calls_slowed.run.json", "slowed")
    table = host_work_rows.rows("AW", [path])
    for case in ("timm_resnet50/compile", "gpt2_medium/optimizer_memory"):
        runs = table[table["case"] == case]
        unslowed, slowed = runs.iloc[:2], runs.iloc[2:]
        assert len(runs) == 4 and unslowed["torch_calls"].nunique() == 1  # the same code, the same count
        total_rise = slowed["host_calls"].min() / unslowed["host_calls"].max() - 1
        torch_rise = slowed["torch_calls"].min() / unslowed["torch_calls"].max() - 1
        assert total_rise < 0.03 < 0.10 < torch_rise  # hidden in the total at its 3% floor, plain in torch's


def test_a_run_that_read_no_busy_share_leaves_its_cell_empty(tmp_path: Path) -> None:
    """Not 0: a GPU idle all along and a share not read are different findings."""
    document = json.loads(CAPTURED.read_text())
    del document["benchmarks"][0]["extra_info"]["clocks"]["during"]["gpu_busy_share"]
    path = tmp_path / "no-share" / "run.json"
    path.parent.mkdir()
    path.write_text(json.dumps(document))
    busy = host_work_rows.rows("AN", [path])["gpu_busy"]
    assert pd.isna(busy.iloc[0]) and busy.iloc[1:].between(0.0, 1.0).all()
