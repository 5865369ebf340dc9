"""What a case states it can catch: its threshold, the slowdown caught nine times in ten, its host work."""

from __future__ import annotations

import pytest
from trainperf import gate, host_work_gate, stats, verdict
from trainperf.case import Optimization
from trainperf.measurement import Measurement

CASE = Optimization("amp")
SAMPLES = [10.0, 10.2, 9.9, 10.1, 10.3, 10.0]


def measured(busy: float | None) -> Measurement:
    during = {} if busy is None else {"gpu_busy_share": busy}
    return Measurement(SAMPLES, [0.1] * 6, [1.0], 0.9, 0.5, None, 1.0, 0.5, 8, None, 6, 1, clocks={"during": during})


def test_a_case_with_measured_noise_catches_nine_in_ten_a_slowdown_beyond_its_threshold() -> None:
    stored = gate.Baseline(SAMPLES, [10.0, 10.4, 9.7])  # runs that spread 3.5%
    found = verdict.detection(CASE, stored, None, measured(0.99))
    noise = stored.noise(gate.DEFAULT_FLOOR)
    assert found.slowdown == pytest.approx(noise.threshold)
    assert found.slowdown_9_in_10 == pytest.approx(stats.reliably_caught(noise))
    assert found.slowdown_9_in_10 is not None and found.slowdown_9_in_10 > found.slowdown
    assert stats.caught_share(noise, found.slowdown_9_in_10) == pytest.approx(0.9)
    assert found.host_work is None  # a busy GPU: its host calls are not judged


def test_a_case_without_measured_noise_states_its_fallback_and_no_nine_in_ten() -> None:
    one_run = verdict.detection(CASE, gate.Baseline(SAMPLES, [10.0]), None, measured(0.99))
    assert one_run.slowdown == gate.FALLBACK_THRESHOLD and one_run.slowdown_9_in_10 is None
    assert verdict.detection(CASE, None, None, measured(0.99)) == verdict.Detection()


def test_a_case_whose_gpu_waits_states_the_rise_in_host_calls_it_catches() -> None:
    calls = host_work_gate.StoredCalls(recorded=[5000, 5000, 5000], gpu_busy_shares=[0.6])
    found = verdict.detection(CASE, None, calls, measured(0.6))
    assert found == verdict.Detection(host_work=pytest.approx(gate.DEFAULT_FLOOR))
