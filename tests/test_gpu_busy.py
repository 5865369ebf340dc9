"""The GPU's busy share from NVML's utilization samples, read against a capture from an H200: one spin
kernel kept the GPU busy for each window, after 1.5 s idle (research/studies/nvml_busy_window.py at commit
8f6de94, lease AX)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from trainperf.measure.gpu_busy import Sample, busy_share, inside, sample_period

CAPTURE = json.loads((Path(__file__).parent / "data" / "h200_nvml_busy_window.json").read_text())
SAMPLES = [Sample(sample["t"], sample["busy_percent"]) for sample in CAPTURE["samples"]]
WINDOWS = {window["window_s"]: window for window in CAPTURE["windows"]}


def share_of(window_s: float) -> float | None:
    window = WINDOWS[window_s]
    return busy_share(SAMPLES, window["started"], window["ended"])


def test_the_h200_samples_every_fifth_of_a_second() -> None:
    assert sample_period(SAMPLES) == pytest.approx(0.2, abs=0.005)


@pytest.mark.parametrize("window_s", [0.6, 1.0, 2.0])
def test_a_window_of_whole_sample_periods_reads_the_spin_as_busy(window_s: float) -> None:
    """Where averaging NVML's latest readings read 67% to 90% (the capture's ClockWatch column)."""
    assert WINDOWS[window_s]["clock_watch_busy"] < 0.95
    assert share_of(window_s) == pytest.approx(1.0, abs=0.01)


@pytest.mark.parametrize("window_s", [0.005, 0.03, 0.1, 0.3])
def test_a_window_holding_no_whole_sample_has_no_busy_share(window_s: float) -> None:
    """The 0.3 s spin's two samples read 72% and 77%: each mixed idle time before or after it in."""
    window = WINDOWS[window_s]
    overlapping = [s for s in SAMPLES if window["started"] < s.ended < window["ended"] + 0.2]
    assert overlapping and all(s.busy_percent < 95 for s in overlapping)
    assert share_of(window_s) is None and inside(SAMPLES, window["started"], window["ended"]) == []


def test_samples_before_the_window_are_left_out() -> None:
    window = WINDOWS[1.0]
    earlier = window["started"] - 0.5
    assert busy_share(SAMPLES, earlier, window["ended"]) < share_of(1.0)  # idle periods now count


def test_fewer_than_two_samples_give_no_period_and_no_share() -> None:
    assert sample_period(SAMPLES[:1]) is None
    assert busy_share(SAMPLES[:1], 0.0, 1e12) is None
