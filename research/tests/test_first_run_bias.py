"""research/studies/first_run_bias.py: the recording's first run against its two fresh-process runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from research.studies import first_run_bias


def baseline_file(tmp_path: Path, cases: dict[str, list[float]]) -> Path:
    path = tmp_path / "gpu.json"
    entries = {name: {"run_medians_ms": runs} for name, runs in cases.items()}
    path.write_text(json.dumps({"schema_version": 1, "device": "gpu", "cases": entries}))
    return path


def test_each_case_of_three_runs_gives_its_first_runs_change(tmp_path: Path) -> None:
    path = baseline_file(tmp_path, {"a/slow": [110.0, 100.0, 100.0], "a/fast": [90.0, 95.0, 105.0], "a/one": [5.0]})
    changes = first_run_bias.first_run_changes(path)
    assert list(changes.index) == ["a/fast", "a/slow"]
    assert changes["a/slow"] == pytest.approx(0.10)
    assert changes["a/fast"] == pytest.approx(-0.10)


def test_the_summary_counts_the_slower_first_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = baseline_file(tmp_path, {f"a/{i}": [101.0, 100.0, 100.0] for i in range(8)})
    assert first_run_bias.main([str(path)]) == 0
    assert "8 cases, median +1.00%, first run slower in 8 (sign test p = 0.01)" in capsys.readouterr().out
