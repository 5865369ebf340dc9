"""Cases that started and did not finish: each is listed once, and one stopped while it was measured
again keeps its first measurement's figures, the only ones the session took."""

from __future__ import annotations

from pathlib import Path

from trainperf.judge import stats
from trainperf.measure.measurement import Measurement
from trainperf.record.result import CaseResult

from tests.test_session_baseline import session


def measurement() -> Measurement:
    return Measurement([12.0], [0.0], [1.0], 0.9, 0.5, None, 1.0, 0.5, 32, None, 1, 1)


def test_a_case_stopped_in_its_second_measurement_keeps_the_first(tmp_path: Path) -> None:
    perf = session(tmp_path, {})
    first = CaseResult(
        "w/a", "test_w[a]", "w", "a", {}, "loss", measurement(), stats.summarize([12.0]), 1.0, 10.0, [], None
    )
    perf.hold("w/a", "test_w[a]", first, {"baseline": "w/a: slower than baseline: median 12.0 ms vs baseline 10.0 ms"})
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
