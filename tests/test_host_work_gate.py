"""The host-work check on figures alone: which cases it judges, against what, and what it says."""

from __future__ import annotations

import pytest
from trainperf.judge.host_work_check import StoredCalls, history_figures, host_work_check, threshold

STEADY = StoredCalls(recorded=(5552, 5552, 5551), gpu_busy_shares=(0.74,))


def test_a_gpu_bound_case_is_not_judged_on_its_host_work() -> None:
    gpu_bound = StoredCalls(recorded=(5552, 5552, 5552), gpu_busy_shares=(0.99,))
    assert host_work_check("w/c", [9000], gpu_bound, busy_now=0.98) is None
    assert threshold(gpu_bound, busy_now=0.98) is None


def test_a_case_that_waited_for_the_host_now_or_where_recorded_is_judged() -> None:
    recorded_gpu_bound = StoredCalls(recorded=(100, 100, 100), gpu_busy_shares=(0.99,))
    assert host_work_check("w/c", [100], recorded_gpu_bound, busy_now=0.8) is not None
    assert host_work_check("w/c", [100], STEADY, busy_now=0.99) is not None
    assert host_work_check("w/c", [100], recorded_gpu_bound, busy_now=None) is not None  # the CPU


def test_a_case_that_waited_for_the_host_in_any_accepted_run_is_judged_on_a_host_where_it_did_not() -> None:
    near_the_line = StoredCalls(recorded=(3294, 3294, 3294), gpu_busy_shares=(0.95, 0.94, 0.895))
    check = host_work_check("w/c", [4000], near_the_line, busy_now=0.94)
    assert check is not None and check.passed is False
    never_waited = StoredCalls(recorded=(3294, 3294, 3294), gpu_busy_shares=(0.95, 0.94, 0.91))
    assert host_work_check("w/c", [4000], never_waited, busy_now=0.94) is None


def test_a_failure_says_why_the_case_is_judged_on_its_host_work() -> None:
    waits_now = host_work_check("w/c", [6000], STEADY, busy_now=0.7)
    assert waits_now is not None and "its GPU was busy 70% of the time: it waits for the host" in waits_now.message
    once_low = StoredCalls(recorded=(59, 59, 59), gpu_busy_shares=(0.99, 0.66, 0.98))
    busy_now = host_work_check("w/c", [63], once_low, busy_now=0.99)
    assert busy_now is not None and busy_now.passed is False
    assert "its GPU waited for the host in 1 of its 3 stored runs" in busy_now.message
    assert "busy 99%" not in busy_now.message
    unmeasured = host_work_check("w/c", [63], StoredCalls(recorded=(59, 59, 59)), busy_now=None)
    assert unmeasured is not None and "this run's GPU busy share was not measured" in unmeasured.message


def test_an_accepted_run_adds_its_calls_and_busy_share_where_it_has_them() -> None:
    assert history_figures([5552, 5553, 5552], 0.74) == {"host_calls_history": 5552.0, "gpu_busy_history": 0.74}
    assert history_figures([], 0.74) == {"gpu_busy_history": 0.74}
    assert history_figures([672], None) == {"host_calls_history": 672.0}
    assert history_figures([18324], 0.6, [819, 820]) == {
        "host_calls_history": 18324.0,
        "host_step_calls_history": 819.5,
        "gpu_busy_history": 0.6,
    }


def test_equal_counts_judge_at_the_floor_and_a_rise_beyond_it_fails_with_both_counts() -> None:
    assert threshold(STEADY, busy_now=0.7) == pytest.approx(0.03)
    passed = host_work_check("w/c", [5600], STEADY, busy_now=0.7)
    assert passed is not None and passed.passed is True
    failed = host_work_check("w/c", [5900], STEADY, busy_now=0.7)
    assert failed is not None and failed.passed is False
    assert "5900 host calls per iteration vs 5552 stored (+6.3%)" in failed.message
    assert "more counts beyond 3.0%" in failed.message


def test_counts_that_vary_widen_the_threshold() -> None:
    varying = StoredCalls(recorded=(1000, 1040, 980), history=(1010, 1050), gpu_busy_shares=(0.5,))
    wide = threshold(varying, busy_now=0.5)
    assert wide is not None and wide > 0.05
    check = host_work_check("w/c", [1070], varying, busy_now=0.5)
    assert check is not None and check.passed is True


def test_an_entry_recorded_before_counting_says_so_then_takes_its_center_from_history() -> None:
    uncounted = StoredCalls(gpu_busy_shares=(0.5,))
    note = host_work_check("w/c", [100], uncounted, busy_now=0.5)
    assert note is not None and note.passed is None and "none counted where recorded" in note.message
    calibrated = StoredCalls(history=(100, 100, 100), gpu_busy_shares=(0.5,))
    check = host_work_check("w/c", [110], calibrated, busy_now=0.5)
    assert check is not None and check.passed is False


def test_too_few_counted_runs_judge_only_large_rises() -> None:
    one = StoredCalls(recorded=(100,), gpu_busy_shares=(0.5,))
    check = host_work_check("w/c", [108], one, busy_now=0.5)
    assert check is not None and check.passed is True and "too few to measure their noise" in check.message
    check = host_work_check("w/c", [111], one, busy_now=0.5)
    assert check is not None and check.passed is False


def test_nothing_counted_or_no_baseline_is_not_judged() -> None:
    assert host_work_check("w/c", [], STEADY, busy_now=0.5) is None
    assert host_work_check("w/c", [100], None, busy_now=0.5) is None


READER_BOUND = StoredCalls(recorded=(18324,) * 3, gpu_busy_shares=(0.6,), step_recorded=(819,) * 3)


def test_a_rise_in_the_steps_calls_fails_where_the_iterations_stays_within_its_noise() -> None:
    check = host_work_check("w/c", [18850], READER_BOUND, busy_now=0.6, step_calls=[1345])
    assert check is not None and check.passed is False
    assert "18850 host calls per iteration vs 18324 stored (+2.9%)" in check.message
    assert "1345 of them in the training step vs 819 stored (+64.2%)" in check.message


def test_the_step_passes_beside_the_iteration_and_a_rise_in_the_reader_alone_fails_on_the_iterations() -> None:
    same = host_work_check("w/c", [18324], READER_BOUND, busy_now=0.6, step_calls=[819])
    assert same is not None and same.passed is True and "819 of them in the training step" in same.message
    reader = host_work_check("w/c", [20000], READER_BOUND, busy_now=0.6, step_calls=[819])
    assert reader is not None and reader.passed is False


def test_the_step_is_judged_only_where_it_was_counted_now_and_stored() -> None:
    uncounted_step = StoredCalls(recorded=(18324,) * 3, gpu_busy_shares=(0.6,))
    check = host_work_check("w/c", [18850], uncounted_step, busy_now=0.6, step_calls=[1345])
    assert check is not None and check.passed is True and "training step" not in check.message
    check = host_work_check("w/c", [18850], READER_BOUND, busy_now=0.6)
    assert check is not None and check.passed is True and "training step" not in check.message
    calibrated = StoredCalls(recorded=(18324,) * 3, gpu_busy_shares=(0.6,), step_history=(819, 819, 819))
    check = host_work_check("w/c", [18324], calibrated, busy_now=0.6, step_calls=[900])
    assert check is not None and check.passed is False


WORKER_FED = StoredCalls(
    recorded=(6614, 6614, 6614), gpu_busy_shares=(0.88,), step_recorded=(6281, 6281, 6281)
)  # fmt: skip


def test_a_rise_no_larger_than_what_this_runs_fetches_differed_by_passes_and_says_so() -> None:
    # a batch received out of order: one fetch takes two batches' calls, the next takes none of them
    check = host_work_check("w/c", [7080], WORKER_FED, busy_now=0.85, step_calls=[6281], fetch_calls=[796, 51, 796])
    assert check is not None and check.passed is True
    assert "7080 host calls per iteration vs 6614 stored (+7.0%)" in check.message
    assert "beyond 745 calls, what this run's fetches differed by" in check.message
    agreeing = host_work_check("w/c", [7080], WORKER_FED, busy_now=0.85, step_calls=[6281], fetch_calls=[799] * 3)
    assert agreeing is not None and agreeing.passed is False and "fetches differed" not in agreeing.message


def test_a_rise_beyond_the_fetches_difference_fails_and_the_step_is_judged_without_it() -> None:
    check = host_work_check("w/c", [7500], WORKER_FED, busy_now=0.85, step_calls=[6281], fetch_calls=[796, 51, 796])
    assert check is not None and check.passed is False
    step = host_work_check("w/c", [7080], WORKER_FED, busy_now=0.85, step_calls=[6800], fetch_calls=[796, 51, 796])
    assert step is not None and step.passed is False
    assert "6800 of them in the training step vs 6281 stored (+8.3%)" in step.message


def test_an_accepted_run_adds_its_calls_and_its_steps() -> None:
    assert history_figures([5552], 0.7, [5381, 5383]) == {
        "host_calls_history": 5552.0,
        "host_step_calls_history": 5382.0,
        "gpu_busy_history": 0.7,
    }
