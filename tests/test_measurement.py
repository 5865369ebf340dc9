"""Independent runs of a case combined into one measurement, and the floor a case may declare."""

from __future__ import annotations

import pytest
from trainperf import Optimization
from trainperf.measure.measurement import Measurement, combined


def run(
    samples: list[float], peak: int, throttle: list[str], steal: float = 0.0, host_us: float = 5.0, mhz: float = 1980.0
) -> Measurement:
    reading = {
        "throttle": throttle,
        "min_sm_clock_mhz": 1980,
        "mean_sm_clock_mhz": mhz,
        "mean_power_w": mhz / 3,
        "host_steal_share": steal,
        "thread_steal_share": 10 * steal,
        "other_processes_share": 5 * steal,
        "host_dispatch_us": host_us,
    }
    return Measurement(
        samples_ms=samples,
        reader_ms=[0.1] * len(samples),
        losses=[1.0, 0.5],
        metric=0.9,
        initial_metric=0.5,
        peak_memory_bytes=peak,
        warmup_s=3.0,
        first_step_s=2.0,
        samples_per_iteration=64,
        flops_per_iteration=None,
        iters=len(samples),
        warmup=1,
        clocks={"before": {"throttle": []}, "during": reading, "after": {"throttle": []}},
    )


def test_runs_keep_every_iteration_each_median_every_throttle_and_the_most_steal() -> None:
    first, second = run([10.0, 11.0, 12.0], 100, [], 0.03), run([20.0, 21.0, 22.0], 300, ["hardware slowdown"], 0.01)
    together = combined([first, second])
    assert together.samples_ms == [10.0, 11.0, 12.0, 20.0, 21.0, 22.0]
    assert together.run_medians_ms == [11.0, 21.0]
    assert together.peak_memory_bytes == 300
    assert together.clocks["during"]["throttle"] == ["hardware slowdown"]
    assert together.clocks["during"]["host_steal_share"] == 0.03  # the worst run's
    assert together.clocks["during"]["thread_steal_share"] == 0.3
    assert together.clocks["during"]["other_processes_share"] == 0.15
    assert together.first_step_s == 2.0  # compilation shows in the first run


def test_runs_keep_the_median_host_dispatch_time() -> None:
    runs = [run([10.0], 100, [], host_us=us) for us in (4.0, 9.0, 5.0)]
    assert combined(runs).clocks["during"]["host_dispatch_us"] == 5.0


def test_runs_keep_the_mean_clock_and_power_over_all_of_them() -> None:
    runs = [run([10.0], 100, [], mhz=mhz) for mhz in (1980.0, 1500.0, 1620.0)]
    during = combined(runs).clocks["during"]
    assert during["mean_sm_clock_mhz"] == 1700.0 and during["mean_power_w"] == pytest.approx(1700.0 / 3)


def test_a_declared_floor_stays_at_or_below_ten_percent() -> None:
    assert Optimization("x", slowdown_floor=0.10).slowdown_floor == 0.10
    with pytest.raises(ValueError, match="slowdown_floor must be above 0 and at most 10%"):
        Optimization("x", slowdown_floor=0.25)
