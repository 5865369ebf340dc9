"""research/studies/busy_time_spread.py over the committed rows of the host-work leases."""

from __future__ import annotations

import pandas as pd

from research.studies import busy_time_spread


def test_slowed_runs_and_cases_of_few_machines_are_left_out() -> None:
    rows = pd.read_csv(busy_time_spread.ROWS)
    table = busy_time_spread.spreads(rows)
    slowed = rows[rows["case"] == "matmul/reference"].assign(run="ops-gpt2", median_ms=lambda r: r["median_ms"] * 2)
    assert busy_time_spread.spreads(pd.concat([rows, slowed])).equals(table)
    assert (table["machines"] >= busy_time_spread.MIN_MACHINES).all()
    assert (table["busy"] >= busy_time_spread.MIN_BUSY).all()
    assert "matmul/reference" in table.index


def test_a_steady_busy_time_shows_as_a_narrower_spread() -> None:
    """Runs whose time varies while the GPU's busy time stays put: the busy time's spread is zero."""
    times = [100.0, 105.0, 110.0, 120.0, 100.0, 108.0]
    rows = pd.DataFrame({
        "lease": list(busy_time_spread.WINDOWED_LEASES[:6]), "run": "gpt2", "case": "toy/reference", "median_ms": times,
        "gpu_busy": [95.0 / time for time in times],
    })  # fmt: skip
    row = busy_time_spread.spreads(rows).loc["toy/reference"]
    assert row["time_spread"] > 0.05
    assert row["busy_time_spread"] < 1e-12
