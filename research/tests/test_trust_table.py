"""The A/A table of research/studies/trust_table.py: each case's spread of run medians, in time and in SM cycles."""

from __future__ import annotations

import math

import pandas as pd

from research.studies.trust_table import aa_table, markdown


def runs(case: str, medians: list[float], clocks: list[float | None]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "case": case,
            "median_ms": medians,
            "baseline_ms": 100.0,
            "delta": [m / 100.0 - 1 for m in medians],
            "iqr_ms": 1.0,
            "min_sm_mhz": [c and c - 200 for c in clocks],
            "mean_sm_mhz": clocks,
            "events": "software power cap",
            "verdict": "pass",
            "failed": "",
        }
    )


def test_a_case_whose_time_follows_its_clock_spreads_less_in_cycles() -> None:
    capped = runs("w/capped", [100.0, 102.0, 98.0], [1632.0, 1600.0, 1665.3])  # time times clock nearly fixed
    unwatched = runs("w/cpu", [10.0, 10.5, 9.5], [None, None, None])  # no clock kept
    table = aa_table(pd.concat([capped, unwatched], ignore_index=True), {})
    assert table.loc["w/capped", "cv"] > 0.015 and table.loc["w/capped", "cv_in_cycles"] < 0.001
    assert table.loc["w/capped", "mean_sm_mhz"] == 1632.0
    assert math.isnan(table.loc["w/cpu", "cv_in_cycles"])
    shown = cells(markdown(table, pd.DataFrame()))
    assert shown["w/capped"]["mean_sm_mhz"] == "1632" and shown["w/capped"]["cv_in_cycles"].endswith("%")
    assert shown["w/cpu"]["cv_in_cycles"] == "-" and shown["w/cpu"]["mean_sm_mhz"] == "-"


def cells(text: str) -> dict[str, dict[str, str]]:
    """The A/A Markdown table's cells, by case and column."""
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in text.splitlines() if line.startswith("|")]
    header, body = rows[0], rows[2:]
    return {row[0]: dict(zip(header[1:], row[1:], strict=True)) for row in body}
