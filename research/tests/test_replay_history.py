"""research/studies/replay_history.py: stored runs judged against what the file held before each of them."""

from __future__ import annotations

import pytest

from research.studies.replay_history import per_case, replay

# Three recorded runs whose iterations spread about 2% (IQR 2.8 ms about 100 ms) while their medians
# agree within 0.5%; then five later runs as close, and a sixth 4% slower.
RUN = [97.0, 98.5, 100.0, 100.0, 101.5, 103.0]
ENTRY = {
    "samples_ms": RUN * 3,
    "run_medians_ms": [100.0, 100.4, 99.6],
    "history_ms": [100.2, 99.8, 100.5, 99.5, 100.1, 104.0],
}


def test_the_gates_rule_takes_the_iterations_spread_as_the_least_noise() -> None:
    runs = replay({"w/case": ENTRY})
    assert list(runs["run"]) == [0, 1, 2, 3, 4, 5]
    assert runs["threshold"].iloc[-1] > 0.05  # t (8 runs) times about 2%
    assert not runs["failed"].any()


def test_without_it_after_five_later_runs_the_slower_run_fails() -> None:
    runs = replay({"w/case": ENTRY}, floor_until=5)
    assert runs["threshold"].iloc[-1] == 0.03  # the run medians' 0.4% leaves the floor
    assert list(runs["failed"]) == [False] * 5 + [True]
    table = per_case(runs)
    assert table.loc["w/case", "failed"] == 1 and table.loc["w/case", "most_used"] > 1.0


def test_a_case_without_history_is_not_judged() -> None:
    quiet = {"samples_ms": RUN, "run_medians_ms": [100.0], "history_ms": []}
    runs = replay({"w/case": ENTRY, "w/new": quiet})
    assert set(runs["case"]) == {"w/case"}


def test_a_file_without_cases_replays_no_run() -> None:
    assert replay({}).empty


def test_a_median_center_leaves_one_recorded_run_off_the_others_out_of_the_center() -> None:
    """One recorded run 5% off the two others: the mean moves with it, the median does not."""
    skewed = {**ENTRY, "run_medians_ms": [100.0, 100.2, 105.0]}
    by_mean, by_median = replay({"w/case": skewed}), replay({"w/case": skewed}, median_center=True)
    assert by_median["change"].iloc[0] == pytest.approx(100.2 / 100.2 - 1)  # history[0] against the median
    assert by_mean["change"].iloc[0] == pytest.approx(100.2 / ((100.0 + 100.2 + 105.0) / 3) - 1)
    # the spread is taken about each center: the off run lies farther from the median, so it widens there
    assert by_median["threshold"].iloc[0] > by_mean["threshold"].iloc[0]
