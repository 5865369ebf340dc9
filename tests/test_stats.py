import math
import statistics

import pytest
from hypothesis import given
from hypothesis import strategies as st
from trainperf import stats

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
