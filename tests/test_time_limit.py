"""Every case has a time limit: a hung case fails alone, named, and later cases run; iteration counts
are bounded."""

from __future__ import annotations

import json
import re
import threading
import time
from pathlib import Path

import pytest
from trainperf.measure import time_limit

BASE = ("-p", "no:cacheprovider", "--perf-device=cpu", "--baseline-dir=bl", "--perf-report=out")
HUNG = """
import pytest
import torch._dynamo  # the first optimizer imports it: not inside the 3 s limit, which would cut the import short
from toy_workload import Toy
from trainperf import Optimization

CASES = [
    Optimization("hung", options={"hang_s": 600.0}),
    Optimization("after", options={"sleep_ms": 1.0}),
]

@pytest.mark.parametrize("optimization", CASES, ids=lambda o: o.name)
MARKER
def test_toy(trainperf, optimization):
    trainperf.run(Toy(), optimization)
"""


def _suite(pytester: pytest.Pytester, marker: str = "") -> None:
    pytester.makepyfile(toy_workload=(Path(__file__).parent / "toy_workload.py").read_text(encoding="utf-8"))
    pytester.makepyfile(test_toy=HUNG.replace("MARKER\n", marker))


@pytest.mark.parametrize(
    ("args", "marker"),
    [
        pytest.param(("--perf-timeout=3",), "", id="option"),
        pytest.param((), "@pytest.mark.trainperf(timeout=3)\n", id="marker", marks=pytest.mark.slow),
    ],
)
def test_a_hung_case_is_stopped_failed_in_one_line_and_later_cases_run(
    pytester: pytest.Pytester, args: tuple[str, ...], marker: str
) -> None:
    _suite(pytester, marker)
    started = time.monotonic()
    result = pytester.runpytest(*BASE, *args)
    assert time.monotonic() - started < 120  # not the 600 s the case sleeps
    result.assert_outcomes(passed=1, failed=1)
    limit = "toy/hung: stopped after 3 s, its time limit (raise it with --perf-timeout=S or *); it had not finished"
    result.stdout.fnmatch_lines([f"*{limit}", f"toy/hung: timeout: {limit}"])
    assert "During handling of the above exception" not in result.stdout.str()  # the failure says it once
    run = json.loads((pytester.path / "out" / "run.json").read_text())
    assert [case["name"] for case in run["benchmarks"]] == ["toy/after"]
    assert run["unfinished"][0]["name"] == "toy/hung" and run["unfinished"][0]["verdict"] == "timeout"


def test_iteration_counts_beyond_the_bound_are_a_usage_error(pytester: pytest.Pytester) -> None:
    _suite(pytester)
    result = pytester.runpytest(*BASE, "--perf-iters=1000000000")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*invalid value '1000000000' for iters from command line --perf-iters: expected an integer from 1 to 100000*"]
    )


def test_no_limit_is_set_off_the_main_thread_and_the_reason_is_given() -> None:
    seen: list[str | None] = []
    thread = threading.Thread(target=lambda: seen.append(time_limit.unavailable()))
    thread.start()
    thread.join()
    assert seen == ["the case runs off the main thread"]
    assert time_limit.unavailable() is None


def test_the_limit_raises_in_the_block_and_is_cleared_after_it() -> None:
    expected = re.escape("w/c: stopped after 0.2 s, its time limit (how)")
    with pytest.raises(time_limit.CaseTimeout, match=expected), time_limit.time_limit(0.2, "w/c", "how"):
        time.sleep(5)
    with time_limit.time_limit(0.2, "w/c", "how"):
        pass
    time.sleep(0.4)  # the timer was cleared: nothing fires here
    assert time_limit.default_limit_s(10, 50) == 300 + 2 * 60
