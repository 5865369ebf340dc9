import math
import statistics

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from trainperf.judge import stats

samples_strategy = st.lists(st.floats(min_value=0.001, max_value=1e4, allow_nan=False), min_size=1, max_size=200)


def test_summary_of_known_samples() -> None:
    summary = stats.summarize([1.0, 2.0, 3.0, 4.0, 100.0])
    assert summary.median == 3.0
    assert summary.min == 1.0 and summary.max == 100.0
    assert summary.rounds == 5
    assert summary.cv == pytest.approx(summary.stddev / summary.mean)


@given(samples_strategy)
def test_median_inside_its_confidence_interval(samples: list[float]) -> None:
    summary = stats.summarize(samples)
    assert summary.min <= summary.ci_low <= summary.median <= summary.ci_high <= summary.max
    assert summary.q1 <= summary.median <= summary.q3


def test_confidence_interval_narrows_with_more_samples() -> None:
    values = [float(i % 17) for i in range(1000)]
    wide = stats.median_confidence_interval(values[:20])
    narrow = stats.median_confidence_interval(values)
    assert narrow[1] - narrow[0] <= wide[1] - wide[0]


def test_the_medians_ranks_are_scipys_binomial_quantiles() -> None:
    from scipy.stats import binom

    for n in range(1, 1001):
        for q in (0.005, 0.025, 0.975, 0.995):
            assert stats.median_rank(q, n) == binom.ppf(q, n, 0.5), (q, n)
        assert stats.median_rank(1 - 0.025, n) == binom.isf(0.025, n, 0.5), n


@pytest.mark.parametrize("bad", [[], [1.0, math.nan], [math.inf]])
def test_summarize_rejects_bad_input(bad: list[float]) -> None:
    with pytest.raises(ValueError):
        stats.summarize(bad)


def test_slower_p_value_separates_shifted_samples() -> None:
    base = [10.0 + 0.01 * (i % 7) for i in range(30)]
    assert stats.slower_p_value([x * 1.1 for x in base], base) < 1e-6
    assert stats.slower_p_value(base, base) > 0.4
    assert stats.slower_p_value([x * 0.9 for x in base], base) > 0.99


def test_summary_round_trips_through_dict() -> None:
    summary = stats.summarize([3.0, 1.0, 2.0])
    assert stats.summary_from_dict(summary.as_dict()) == summary


def test_relative_change() -> None:
    assert stats.relative_change(105.0, 100.0) == pytest.approx(0.05)
    with pytest.raises(ValueError):
        stats.relative_change(1.0, 0.0)


def test_run_noise_is_a_prediction_interval_of_the_run_medians() -> None:
    noise = stats.run_noise([100.0, 102.0, 98.0, 101.0, 99.0], floor=0.01, fallback=0.10)
    assert noise.runs == 5 and noise.center_ms == 100.0
    assert noise.spread == pytest.approx(statistics.stdev([100, 102, 98, 101, 99]) / 100)
    t = 3.7469  # Student's t at 0.99 with 4 degrees of freedom
    assert noise.threshold == pytest.approx(t * noise.spread * math.sqrt(1.2), rel=1e-3)


def test_run_noise_never_below_the_floor_and_falls_back_with_too_few_runs() -> None:
    assert stats.run_noise([10.0, 10.0, 10.0], floor=0.03, fallback=0.10).threshold == 0.03
    two = stats.run_noise([10.0, 11.0], floor=0.03, fallback=0.10)
    assert not two.measured and two.threshold == 0.10 and two.center_ms == 10.5
    with pytest.raises(ValueError, match="no run medians"):
        stats.run_noise([], floor=0.03, fallback=0.10)


@given(st.lists(st.floats(min_value=1.0, max_value=1e3), min_size=3, max_size=20))
def test_more_spread_never_lowers_the_threshold(medians: list[float]) -> None:
    center = statistics.fmean(medians)
    wider = [center + 2 * (m - center) for m in medians]
    if min(wider) <= 0:
        return
    assert stats.run_noise(wider, 0.0, 0.1).threshold >= stats.run_noise(medians, 0.0, 0.1).threshold * 0.999


def test_iteration_spread_is_the_median_run_robust_spread() -> None:
    steady = [10.0, 10.0, 10.0, 10.0]
    wobbly = [9.0, 10.0, 11.0, 12.0]  # IQR 2.0 (pytest-benchmark's quartiles), median 10.5
    assert stats.iteration_spread(steady * 3, 3) == 0.0
    assert stats.iteration_spread(wobbly * 3, 3) == pytest.approx(2.0 / 1.349 / 10.5)
    assert stats.iteration_spread(steady + wobbly + wobbly, 3) == pytest.approx(2.0 / 1.349 / 10.5)
    assert stats.iteration_spread([*wobbly, 10.0], 2) == 0.0  # 5 samples do not split into 2 runs
    assert stats.iteration_spread([], 1) == 0.0


def test_run_noise_takes_the_iterations_spread_where_the_run_medians_agree_more() -> None:
    agreeing = stats.run_noise([100.0, 100.5, 99.5], floor=0.03, fallback=0.10, iteration_spread=0.06)
    t = 6.9646  # Student's t at 0.99 with 2 degrees of freedom
    assert agreeing.spread == pytest.approx(0.005)
    assert agreeing.threshold == pytest.approx(t * 0.06 * math.sqrt(1 + 1 / 3), rel=1e-3)
    spread_out = stats.run_noise([90.0, 100.0, 110.0], floor=0.03, fallback=0.10, iteration_spread=0.01)
    assert spread_out.threshold == pytest.approx(t * 0.10 * math.sqrt(1 + 1 / 3), rel=1e-3)


def test_later_runs_widen_the_noise_around_the_recorded_center_without_moving_it() -> None:
    recorded = [12.3, 12.2, 12.4]  # three runs in one fast sitting
    alone = stats.run_noise(recorded, floor=0.03, fallback=0.10)
    later = stats.run_noise(recorded, floor=0.03, fallback=0.10, history_ms=[14.7, 15.4, 16.9])
    assert later.center_ms == alone.center_ms == pytest.approx(12.3)
    assert later.runs == 6 and later.spread is not None and alone.spread is not None
    assert later.spread > 10 * alone.spread and later.threshold > alone.threshold
    one_recorded = stats.run_noise([10.0], floor=0.03, fallback=0.10, history_ms=[10.2, 9.9])
    assert one_recorded.measured and one_recorded.runs == 3  # nights measure what one run could not


def test_a_slowdown_reliably_caught_is_caught_nine_times_in_ten_by_simulation() -> None:
    """Run medians drawn about a slowed mean with the case's noise: past the threshold in both measurements
    90% of the time at the confirmed figure, in one measurement 90% of the time at the unconfirmed one."""
    noise = stats.RunNoise(runs=10, center_ms=100.0, spread=0.012, threshold=0.04, iteration_spread=0.008)
    confirmed, alone = stats.reliably_caught(noise), stats.reliably_caught(noise, confirmed=False)
    assert confirmed is not None and alone is not None and noise.threshold < alone < confirmed
    draws = np.random.default_rng(0).normal(size=(2, 400_000)) * noise.spread
    assert np.mean((confirmed + draws[0] > noise.threshold) & (confirmed + draws[1] > noise.threshold)) == (
        pytest.approx(0.9, abs=0.003)
    )
    assert np.mean(alone + draws[0] > noise.threshold) == pytest.approx(0.9, abs=0.003)


def test_nothing_is_reliably_caught_without_measured_noise() -> None:
    assert stats.reliably_caught(stats.run_noise([10.0], floor=0.03, fallback=0.10)) is None
