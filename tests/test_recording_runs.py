"""A recording never keeps a wild run: runs far apart are measured again, and refused where they still
disagree; a recording on a busy host says so."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from trainperf.judge import recording

BASE = ("-p", "no:cacheprovider", "--perf-device=cpu", "--baseline-dir=bl")


def test_a_run_far_beyond_the_others_and_its_iterations_is_wild() -> None:
    """The runs a digits recording kept at 215 ms: one of them 36 times the others."""
    assert recording.wild_runs([17.078, 613.860, 14.624], [0.01, 0.02, 0.01]) == [1]
    assert recording.wild_runs([17.078, 18.2, 14.624], [0.01, 0.02, 0.01]) == []  # fresh processes differ so
    assert recording.wild_runs([10.0, 16.0, 10.2], [0.02] * 3) == [1]
    assert recording.wild_runs([10.0, 16.0, 10.2], [0.15] * 3) == []  # iterations that spread 15% explain it
    # a competing process throughout two runs: their iterations spread as widely as it stalls them
    assert recording.wild_runs([37.1, 636.0, 636.0], [0.02, 0.9, 0.9]) == [0, 1, 2]
    text = recording.refusal("digits/pinned", [17.078, 613.860, 14.624], {1: 590.5}, [0.01, 0.02, 0.01])
    assert text == (
        "digits/pinned: not recorded: its runs disagree: 17.078, 613.860, 14.624 ms, measured again 590.500 ms, "
        "beyond 50% of their median, more than the spread of the quietest run's iterations (1.0%) explains; "
        "record it again on a quiet host"
    )


def test_a_busy_host_is_named_from_the_busiest_run() -> None:
    quiet = {"other_processes_share": 0.02, "host_steal_share": 0.0}
    busy = {"other_processes_share": 0.46, "host_steal_share": 0.07}
    assert recording.busy_host([quiet, {}]) is None
    assert recording.busy_host([quiet, busy]) == (
        "recorded on a busy host: other processes used 46% of its CPU time and the hypervisor stole 7% of it"
    )


ONCE_SLOW = """
import pytest
from toy_workload import Toy
from trainperf import Optimization

@pytest.mark.parametrize("optimization", [Optimization("reference", options=OPTIONS)], ids=lambda o: o.name)
def test_toy(trainperf, optimization):
    trainperf.run(Toy(), optimization)
"""


@pytest.mark.slow
def test_a_recording_with_one_run_slowed_measures_it_again_and_keeps_the_agreeing_runs(
    pytester: pytest.Pytester,
) -> None:
    """The run in the test process sleeps 200 ms more a step; the fresh processes do not."""
    toy = (Path(__file__).parent / "toy_workload.py").read_text(encoding="utf-8")
    options = '{"sleep_ms": 10.0, "slow_once": "slow-once", "slow_once_ms": 200.0}'
    pytester.makepyfile(toy_workload=toy, test_toy=ONCE_SLOW.replace("OPTIONS", options))
    (pytester.path / "slow-once").touch()
    result = pytester.runpytest(*BASE, "--update-baselines")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["note: toy/reference: measured again, far from the recording's other runs "
                                 "(run 1 of 3: 2*.* -> *.* ms)"])  # fmt: skip
    stored = json.loads(next((pytester.path / "bl").glob("*.json")).read_text())["cases"]["toy/reference"]
    assert max(stored["run_medians_ms"]) < 1.5 * min(stored["run_medians_ms"])
