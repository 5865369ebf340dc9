"""Cases that started and did not finish: each is listed once, and one stopped while it was measured
again keeps its first measurement's figures, the only ones the session took."""

from __future__ import annotations

from pathlib import Path

from tests.test_session_baseline import session


def test_a_case_stopped_in_its_second_measurement_keeps_the_first(tmp_path: Path) -> None:
    perf = session(tmp_path, {})
    perf.record_waiting("w/a", "test_w[a]", "w/a: slower than baseline: median 12.0 ms vs baseline 10.0 ms")
    perf.record_unfinished("w/a", "test_w[a]", "interrupted", "the session was stopped while it ran")
    perf.leave_unjudged()  # the session's end: nothing is listed twice
    (case,) = perf.unfinished
    assert (case["name"], case["verdict"]) == ("w/a", "interrupted")
    assert case["reason"] == (
        "the session was stopped while it ran; first measurement: w/a: slower than baseline: median 12.0 ms"
        " vs baseline 10.0 ms"
    )


def test_a_case_stopped_in_its_first_measurement_has_no_figures(tmp_path: Path) -> None:
    perf = session(tmp_path, {})
    perf.record_unfinished("w/b", "test_w[b]", "timeout", "w/b: ran past its 60 s limit")
    assert perf.unfinished == [
        {"name": "w/b", "fullname": "test_w[b]", "verdict": "timeout", "reason": "w/b: ran past its 60 s limit"}
    ]
