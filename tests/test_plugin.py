"""End-to-end: the plugin drives a toy suite through pytester on the CPU."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from xml.etree import ElementTree

import pytest
from trainperf.cli.main import main

BASE = ("-p", "no:cacheprovider", "--perf-device=cpu", "--baseline-dir=bl")
# a baseline file where the test needs one but not its measured noise: one run, in the test process
RECORD_ONCE = ("--update-baselines", "--perf-runs=1")


def baseline_file(pytester: pytest.Pytester):
    files = list((pytester.path / "bl").glob("*.json"))
    assert len(files) == 1, files
    return files[0]


def test_passing_case_prints_summary_and_missing_baseline_note(toy_suite) -> None:
    result = toy_suite().runpytest(*BASE)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*trainperf: *(tiny)*", "*toy/reference*pass*", "*toy/variant*pass*"])
    result.stdout.fnmatch_lines(
        ["note: no stored baseline in */bl/cpu-*.json for 2 case(s): toy/reference, toy/variant; record them*"]
    )


def test_strict_fails_without_baseline(toy_suite) -> None:
    result = toy_suite().runpytest(*BASE, "--perf-strict")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["*toy/reference: no stored baseline for this device (--perf-strict)*"])
    assert "second measurement" not in result.stdout.str()  # no measurement can supply a missing baseline


@pytest.mark.slow
def test_update_writes_file_and_prints_diff_then_gate_passes(toy_suite) -> None:
    pytester = toy_suite()
    first = pytester.runpytest(*BASE, "--update-baselines")
    first.assert_outcomes(passed=2)
    first.stdout.fnmatch_lines(
        [
            "baselines written to *",
            "  toy/reference: new -> * ms, runs *, *, * ms, threshold *.*%",
            "  toy/variant: new -> * ms, runs *, threshold *.*%",
        ]
    )
    stored = json.loads(baseline_file(pytester).read_text())
    assert stored["schema_version"] == 2
    assert set(stored["cases"]) == {"toy/reference", "toy/variant"}
    assert len(stored["cases"]["toy/reference"]["samples_ms"]) == 3 * 15  # three independent runs
    assert len(stored["cases"]["toy/reference"]["run_medians_ms"]) == 3
    assert stored["cases"]["toy/reference"]["host"]["host_dispatch_us"] > 0  # the host it was recorded on

    again = pytester.runpytest(*BASE, "--perf-strict")
    again.assert_outcomes(passed=2)

    second = pytester.runpytest(*BASE, *RECORD_ONCE, "--perf-report=out")
    second.stdout.fnmatch_lines(
        ["  toy/reference: * ms -> * ms (*%), threshold *.*% -> 10.0%", "note: baseline changes written to out/*"]
    )  # one run: the fallback threshold
    body = (pytester.path / "out" / "baseline-changes.md").read_text()  # the refresh pull request's body
    assert f"in `{baseline_file(pytester).name}`:" in body
    assert re.search(
        r"\| toy/reference +\| +\d+\.\d{3} +\| +\d+\.\d{3} +\| [+-]\d+\.\d% .*\| \d+\.\d% -> 10\.0% +\|", body
    )
    assert body.endswith(
        "*threshold*: the smallest slowdown the gate fails at the entry's measured noise and the "
        "default floor (a case's own `slowdown_floor` raises it).\n"
    )


@pytest.mark.slow
def test_slower_case_fails_naming_case_and_delta(toy_suite) -> None:
    pytester = toy_suite(sleep_ms=10.0, variant_sleep_ms=10.0)
    pytester.runpytest(*BASE, "--update-baselines").assert_outcomes(passed=2)
    slowed = toy_suite(sleep_ms=10.0, variant_sleep_ms=40.0).runpytest(*BASE)
    slowed.assert_outcomes(passed=1, failed=1)
    slowed.stdout.fnmatch_lines(
        [
            "*toy/variant: slower than baseline: median * ms vs baseline * ms (+*%); noise *% over 3 runs*: "
            "a slowdown counts beyond *%;*this host issued an op in * µs, * µs where recorded (*)* "
            "(first measurement: toy/variant: slower than baseline: *)",
            "note: toy/variant: confirmed by a second measurement at the end of the session (* s, * s after the "
            "first), median * ms (+*% against the baseline), speedup *x; the first: toy/variant: slower than *",
        ]
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
def test_a_case_slower_once_is_measured_again_in_a_fresh_process_and_passes(pytester: pytest.Pytester) -> None:
    toy = (Path(__file__).parent / "toy_workload.py").read_text(encoding="utf-8")
    pytester.makepyfile(toy_workload=toy, test_toy=ONCE_SLOW.replace("OPTIONS", '{"sleep_ms": 10.0}'))
    pytester.runpytest(*BASE, *RECORD_ONCE).assert_outcomes(passed=1)
    once = ONCE_SLOW.replace("OPTIONS", '{"sleep_ms": 10.0, "slow_once": "slow-once"}')
    pytester.makepyfile(test_toy=once)
    (pytester.path / "slow-once").touch()  # the test process's build finds it, the fresh process's does not
    result = pytester.runpytest(*BASE, "--perf-report=out")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "note: toy/reference: not confirmed by a second measurement at the end of the session (*), "
            "median * ms (*% against the baseline), speedup 1.00x; the first: toy/reference: slower than *"
        ]
    )
    case = json.loads((pytester.path / "out" / "run.json").read_text())["benchmarks"][0]["extra_info"]
    assert case["confirmation"]["first"][0].startswith("toy/reference: slower than baseline")
    assert case["confirmation"]["after_first_s"] >= 0  # taken at the end of the session
    assert case["summary_ms"]["median"] < 1.5 * case["baseline_median_ms"]  # the second measurement is kept
    (pytester.path / "slow-once").touch()
    without = pytester.runpytest(*BASE, "--perf-confirmations=0")
    without.assert_outcomes(failed=1)
    assert "measured again" not in without.stdout.str() and "second measurement" not in without.stdout.str()


@pytest.mark.slow
def test_a_recording_whose_fresh_process_fails_writes_nothing_and_keeps_the_stored_entry(
    pytester: pytest.Pytester,
) -> None:
    """Runs of one process agree more closely than fresh processes': a baseline of them would understate
    the case's noise (on an H100, GPT-2's stack ran out of GPU memory in its fresh processes)."""
    toy = (Path(__file__).parent / "toy_workload.py").read_text(encoding="utf-8")
    pytester.makepyfile(toy_workload=toy, test_toy=ONCE_SLOW.replace("OPTIONS", '{"build_once": "build-once"}'))
    (pytester.path / "build-once").touch()
    pytester.runpytest(*BASE, *RECORD_ONCE).assert_outcomes(passed=1)
    stored = baseline_file(pytester).read_text()
    (pytester.path / "build-once").touch()  # the test process's build finds it, the fresh processes' do not
    result = pytester.runpytest(*BASE, "--update-baselines")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*toy/reference: not recorded: each of its 3 runs must be fresh: case measured in a fresh process: "
            "* (log: *child.log)*"
        ]
    )
    assert "measured in the test process instead" not in result.stdout.str()
    assert baseline_file(pytester).read_text() == stored


@pytest.mark.slow
def test_a_fresh_process_keeps_the_case_time_limit_and_fails_as_a_child(pytester: pytest.Pytester) -> None:
    """A case run afresh is held to its own time limit (``--perf-timeout``), not the profilers' one; past
    it, the recording fails naming the fresh process and its log."""
    toy = (Path(__file__).parent / "toy_workload.py").read_text(encoding="utf-8")
    options = '{"hang_s": 30.0, "calm_once": "calm-once"}'
    pytester.makepyfile(toy_workload=toy, test_toy=ONCE_SLOW.replace("OPTIONS", options))
    (pytester.path / "calm-once").touch()  # the test process's run does not hang, its fresh processes do
    result = pytester.runpytest(*BASE, "--update-baselines", "--perf-timeout=5")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*toy/reference: not recorded: each of its 3 runs must be fresh: case measured in a fresh process: *"]
    )
    (log,) = re.findall(r"\(log: (\S+child\.log)\)", result.stdout.str())[:1]
    assert "toy/reference: stopped after 5 s, its time limit" in Path(log).read_text(encoding="utf-8")


TWO_CASES_FIRST_SLOW_ONCE = """
import pytest
from toy_workload import Toy
from trainperf import Optimization

CASES = [Optimization("reference", options=FIRST), Optimization("variant", options={"sleep_ms": 40.0})]

@pytest.mark.parametrize("optimization", CASES, ids=lambda o: o.name)
def test_toy(trainperf, optimization):
    trainperf.run(Toy(), optimization)
    print("TEST BODY DONE", optimization.name)
"""


def two_cases(pytester: pytest.Pytester, first: str) -> None:
    toy = (Path(__file__).parent / "toy_workload.py").read_text(encoding="utf-8")
    pytester.makepyfile(toy_workload=toy, test_toy=TWO_CASES_FIRST_SLOW_ONCE.replace("FIRST", first))


@pytest.mark.slow
def test_a_case_that_looks_slower_is_measured_again_after_the_other_cases(pytester: pytest.Pytester) -> None:
    """Its test stops after the first measurement and runs again at the end: one report, one entry."""
    two_cases(pytester, '{"sleep_ms": 10.0}')
    pytester.runpytest(*BASE, *RECORD_ONCE).assert_outcomes(passed=2)
    two_cases(pytester, '{"sleep_ms": 10.0, "slow_once": "slow-once"}')
    (pytester.path / "slow-once").touch()
    result = pytester.runpytest(*BASE, "-s", "-v", "--perf-report=out", "--junitxml=j.xml")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "*toy/reference: measured again at the end of the session (toy/reference: slower than baseline*",
            "*TEST BODY DONE variant",
            "*TEST BODY DONE reference",
        ]
    )
    assert result.stdout.str().count("TEST BODY DONE reference") == 1  # the first run stopped in trainperf.run
    documents = json.loads((pytester.path / "out" / "run.json").read_text())["benchmarks"]
    assert [case["name"] for case in documents] == ["toy/variant", "toy/reference"]
    junit = (pytester.path / "j.xml").read_text()
    assert junit.count('name="test_toy[reference]"') == 1 and junit.count('name="test_toy[variant]"') == 1


@pytest.mark.slow
def test_a_case_still_slower_at_the_end_fails_once_with_both_measurements(pytester: pytest.Pytester) -> None:
    two_cases(pytester, '{"sleep_ms": 10.0}')
    pytester.runpytest(*BASE, *RECORD_ONCE).assert_outcomes(passed=2)
    two_cases(pytester, '{"sleep_ms": 40.0}')
    result = pytester.runpytest(*BASE, "--perf-report=out")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*toy/reference: slower than baseline: *(first measurement: toy/reference: slower than baseline*",
            "note: toy/reference: confirmed by a second measurement at the end of the session (*",
        ]
    )
    case = json.loads((pytester.path / "out" / "run.json").read_text())["benchmarks"][-1]
    assert case["name"] == "toy/reference" and case["extra_info"]["verdict"] == "fail"


@pytest.mark.slow
def test_a_session_stopped_before_the_end_names_the_cases_left_unjudged(pytester: pytest.Pytester) -> None:
    """The variant has no baseline, so no stall of a loaded host can hold it for a second measurement too:
    it finishes in order, and the interrupt comes before the reference's second measurement."""
    two_cases(pytester, '{"sleep_ms": 10.0}')
    pytester.runpytest(*BASE, *RECORD_ONCE, "-k", "reference").assert_outcomes(passed=1, deselected=1)
    two_cases(pytester, '{"sleep_ms": 40.0}')
    pytester.makeconftest(
        "def pytest_runtest_logreport(report):\n"
        "    if report.when == 'call' and 'variant' in report.nodeid:\n"
        "        raise KeyboardInterrupt\n"
    )
    result = pytester.runpytest_subprocess(*BASE, "--perf-report=out")  # in-process, it would stop this test
    result.stdout.fnmatch_lines(
        [
            "toy/reference: not judged: first measurement: toy/reference: slower than baseline: *",
            "note: not judged: the session ended before their second measurement: *test_toy[[]reference]",
        ]
    )
    (unjudged,) = json.loads((pytester.path / "out" / "run.json").read_text())["unfinished"]
    assert unjudged["name"] == "toy/reference" and unjudged["verdict"] == "not judged"
    assert unjudged["reason"].startswith("first measurement: toy/reference: slower than baseline: median")


@pytest.mark.slow
def test_a_session_stopped_before_the_profiles_reports_the_cases_held_for_them(pytester: pytest.Pytester) -> None:
    """The reference's reports wait for the profiles at the session's end; an interrupt at the variant's
    start logs them without a profile, and says so."""
    two_cases(pytester, '{"sleep_ms": 10.0}')
    pytester.makeconftest(
        "def pytest_runtest_logstart(nodeid, location):\n    if 'variant' in nodeid:\n        raise KeyboardInterrupt\n"
    )
    args = ("--profile=torch", "--perf-report=out", "--junitxml=j.xml")
    result = pytester.runpytest_subprocess(*BASE, *args)  # in-process, the interrupt would stop this test
    result.stdout.fnmatch_lines(
        ["test_toy.py .", "note: not profiled: the session ended before the profiles of toy/reference", "*1 passed*"]
    )
    names = [case.get("name") for case in ElementTree.parse(pytester.path / "j.xml").iter("testcase")]
    assert names == ["test_toy[reference]"]  # its reports were logged
    (entry,) = json.loads((pytester.path / "out" / "run.json").read_text())["benchmarks"]
    assert entry["name"] == "toy/reference" and entry["extra_info"]["profile"] is None


SHORT_OF_SPEEDUP = """
from toy_workload import Toy
from trainperf import Optimization

def test_toy(trainperf):
    trainperf.run(Toy(), Optimization("variant", options={"sleep_ms": 10.0}, min_speedup={"cpu": 100.0}))
"""


@pytest.mark.slow
def test_a_recording_short_of_its_speedup_keeps_its_three_runs(pytester: pytest.Pytester) -> None:
    """Recording measures each case in 3 runs already: one more would replace their median with one run's."""
    toy = (Path(__file__).parent / "toy_workload.py").read_text(encoding="utf-8")
    pytester.makepyfile(toy_workload=toy, test_toy=SHORT_OF_SPEEDUP)
    result = pytester.runpytest(*BASE, "--update-baselines")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["note: toy/variant: not measured again: its figures are already the median of 3 runs"])
    assert "second measurement" not in result.stdout.str()
    stored = json.loads(baseline_file(pytester).read_text())
    assert len(stored["cases"]["toy/variant"]["run_medians_ms"]) == 3


SHORT_WITHIN_NOISE = """
import pytest
from toy_workload import Toy
from trainperf import Optimization

# the reference's own time is not judged here: at the largest floor, a busy host's stall does not fail it
REFERENCE = Optimization("reference", options={"sleep_ms": 10.0}, slowdown_floor=0.10)
CASES = [REFERENCE] + [
    Optimization(name, options={"sleep_ms": 10.0}, min_speedup={"cpu": 1.5}) for name in ("noisy", "steady")
]

@pytest.mark.parametrize("optimization", CASES, ids=lambda o: o.name)
def test_toy(trainperf, optimization):
    trainperf.run(Toy(), optimization, reference=REFERENCE)
"""


def test_a_speedup_short_within_measured_noise_is_not_judged_beyond_it_fails(pytester: pytest.Pytester) -> None:
    """Both variants run as fast as the reference, a third short of their 1.5x: the one whose stored runs
    spread threefold is not judged, and says so (terminal, run.json, JUnit); the steady one fails, each
    message giving the noise it was held to."""
    toy = (Path(__file__).parent / "toy_workload.py").read_text(encoding="utf-8")
    pytester.makepyfile(toy_workload=toy, test_toy=SHORT_WITHIN_NOISE)
    pytester.runpytest(*BASE, *RECORD_ONCE).assert_outcomes(passed=1, failed=2)  # short, and nothing stored yet
    path = baseline_file(pytester)
    stored = json.loads(path.read_text())
    for name, spread in (("reference", (1, 1, 1)), ("noisy", (1, 2, 3)), ("steady", (1, 1, 1))):
        entry = stored["cases"][f"toy/{name}"]
        median = entry["summary"]["median"]
        entry["run_medians_ms"] = [median * factor for factor in spread]
        # no spread within a run either: a busy host's recording must not widen the steady bound
        entry["samples_ms"] = [median] * len(entry["samples_ms"])
    path.write_text(json.dumps(stored))
    result = pytester.runpytest(*BASE, "--perf-confirmations=0", "--perf-report=out", "--junitxml=junit.xml")
    # per case: the reference's own time is not this test's, and a host busy with the other tests' sessions
    # once slowed it beyond even the largest floor
    cases = ElementTree.parse(pytester.path / "junit.xml").iter("testcase")
    passed = {case.get("name"): case.find("failure") is None for case in cases}
    assert passed["test_toy[noisy]"] and not passed["test_toy[steady]"]
    result.stdout.fnmatch_lines(
        [
            "*toy/steady: speedup *x over reference is below the minimum 1.50x by *%, beyond *%, the noise measured*",
            "note: toy/noisy: not judged: speedup *x is below the minimum 1.50x by *%, within *%, the noise *",
        ]
    )
    run = json.loads((pytester.path / "out" / "run.json").read_text())
    (noisy,) = [case["extra_info"]["checks"] for case in run["benchmarks"] if case["name"] == "toy/noisy"]
    (speedup,) = [check for check in noisy if check["name"] == "speedup"]
    assert speedup["passed"] is None
    within = r"toy/noisy: not judged: speedup \S+x is below the minimum 1.50x by \S+%, within \S+%, the noise"
    assert re.match(within, speedup["message"])
    junit = (pytester.path / "junit.xml").read_text()
    assert '<property name="trainperf_check_speedup" value="not judged"' in junit
    assert '<property name="trainperf_check_speedup" value="fail"' in junit


THROTTLED = """
import pytest
from trainperf.measure import device


def pytest_configure(config):
    # NVML as a GPU in thermal slowdown would report it (the CPU has none to read); undone with the session,
    # which may run in the test's own process
    patch = pytest.MonkeyPatch()
    throttled = {"sm_clock_mhz": 1200, "throttle": ["hardware thermal slowdown"]}
    patch.setattr(device, "clock_state", lambda device: throttled)
    config.add_cleanup(patch.undo)
"""


def test_a_throttled_case_is_unreliable_not_failed(toy_suite) -> None:
    pytester = toy_suite(sleep_ms=10.0, variant_sleep_ms=10.0)
    pytester.runpytest(*BASE, *RECORD_ONCE).assert_outcomes(passed=2)
    pytester.makeconftest(THROTTLED)
    slowed = toy_suite(sleep_ms=10.0, variant_sleep_ms=40.0).runpytest(*BASE, "--perf-report=out")
    slowed.assert_outcomes(passed=2)
    slowed.stdout.fnmatch_lines(
        ["note: toy/variant: timing unreliable: hardware thermal slowdown; its time was not judged"]
    )
    document = json.loads((pytester.path / "out" / "run.json").read_text())
    assert {case["extra_info"]["verdict"] for case in document["benchmarks"]} == {"unreliable"}


def test_accuracy_drop_fails(toy_suite) -> None:
    result = toy_suite(shuffle=True).runpytest(*BASE)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*toy/variant: accuracy * must be at least 0.6000*"])


def test_a_case_failing_its_accuracy_on_the_cpu_is_not_measured_again(toy_suite) -> None:
    """A seeded training repeats on the CPU: a failed accuracy stands there, even beside a slower time
    (on a GPU, whose trainings are draws, it is measured again: ``policy.again_on``)."""
    toy_suite(sleep_ms=10.0, variant_sleep_ms=10.0).runpytest(*BASE, *RECORD_ONCE).assert_outcomes(passed=2)
    result = toy_suite(sleep_ms=10.0, variant_sleep_ms=40.0, shuffle=True).runpytest(*BASE)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        ["note: toy/variant: not measured again: it fails on its accuracy, which a second measurement cannot undo"]
    )
    assert "second measurement at the end" not in result.stdout.str()


def test_corrupt_baseline_is_one_clear_error_and_stays_untouched(toy_suite) -> None:
    pytester = toy_suite()
    pytester.runpytest(*BASE, *RECORD_ONCE).assert_outcomes(passed=2)
    path = baseline_file(pytester)
    path.write_text('{"schema_version": 1, "cases": {')
    for extra in ((), ("--update-baselines",)):
        result = pytester.runpytest(*BASE, *extra)
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines([f"ERROR: {path}: not a valid baseline file*"])
        assert path.read_text() == '{"schema_version": 1, "cases": {'


def test_a_baseline_folder_that_is_a_file_is_named_with_where_it_was_given(
    toy_suite, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The error said "(--baseline-dir)" when the folder came from the environment or the ini file."""
    pytester = toy_suite()
    (pytester.path / "a-file").write_text("")
    monkeypatch.setenv("TRAINPERF_BASELINE_DIR", "a-file")
    result = pytester.runpytest("-p", "no:cacheprovider", "--perf-device=cpu")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: *a-file: a file is there, not a folder of baseline files "
                                 "(environment TRAINPERF_BASELINE_DIR)"])  # fmt: skip


def test_a_baseline_write_that_fails_loses_nothing_else_and_is_one_line(toy_suite) -> None:
    """The summary, run.json and the report are written whatever the baseline write meets; its failure
    is one line and the usage status."""
    pytester = toy_suite()
    pytester.runpytest(*BASE, *RECORD_ONCE).assert_outcomes(passed=2)
    lock = baseline_file(pytester).with_name(baseline_file(pytester).name + ".lock")
    lock.unlink(missing_ok=True)
    lock.mkdir()  # the write's lock cannot be opened
    result = pytester.runpytest(*BASE, *RECORD_ONCE, "--perf-report=out")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    run_file = pytester.path / "out" / "run.json"
    failed = (
        f"baselines not written: {lock}: Is a directory; the recorded cases are kept in out/run.json: trainperf record"
    )
    result.stdout.fnmatch_lines(["*toy/reference*pass*", f"note: {failed}*"])
    assert run_file.is_file() and (pytester.path / "out" / "report.html").is_file()
    run = json.loads(run_file.read_text())
    assert any(note.startswith(failed) for note in run["notes"])  # run.json says so too
    lock.rmdir()  # the cause fixed, the night's recording is written from its run document
    baseline_file(pytester).unlink()
    assert main(["record", str(run_file), "--baseline-dir", str(pytester.path / "bl")]) == 0
    stored = json.loads(baseline_file(pytester).read_text())["cases"]
    assert set(stored) == {"toy/reference", "toy/variant"}
    assert stored["toy/variant"] == run["recorded_baselines"]["cases"]["toy/variant"]


def test_a_recording_killed_after_its_first_case_keeps_that_case(toy_suite) -> None:
    """Each recorded case is written when it finishes: a run cut short by a kill (a CI job's time limit)
    loses only the cases it had not finished."""
    pytester = toy_suite()
    pytester.makeconftest(
        """
import os

def pytest_runtest_logfinish(nodeid):
    if "reference" in nodeid:
        os._exit(9)  # killed: no session end, nothing written at the end
"""
    )
    result = pytester.runpytest_subprocess(*BASE, *RECORD_ONCE)
    assert result.ret == 9
    stored = json.loads(baseline_file(pytester).read_text())["cases"]
    assert set(stored) == {"toy/reference"} and stored["toy/reference"]["run_medians_ms"]


def test_unknown_schema_version_is_refused(toy_suite) -> None:
    pytester = toy_suite()
    pytester.runpytest(*BASE, *RECORD_ONCE).assert_outcomes(passed=2)
    path = baseline_file(pytester)
    path.write_text(json.dumps({"schema_version": 99, "cases": {}}))
    result = pytester.runpytest(*BASE)
    result.stderr.fnmatch_lines([f"ERROR: {path}: unknown schema_version 99*"])


def test_invalid_values_name_their_source(toy_suite, monkeypatch) -> None:
    pytester = toy_suite()
    result = pytester.runpytest(*BASE, "--perf-iters=zero")
    result.stderr.fnmatch_lines(["ERROR: invalid value 'zero' for iters from command line --perf-iters*"])
    monkeypatch.setenv("TRAINPERF_PROFILE", "gprof")
    result = pytester.runpytest(*BASE)
    result.stderr.fnmatch_lines(["ERROR: invalid value 'gprof' for profile from environment TRAINPERF_PROFILE*"])
    monkeypatch.delenv("TRAINPERF_PROFILE")
    pytester.makeini("[pytest]\ntrainperf_warmup = -1\n")
    result = pytester.runpytest(*BASE)
    result.stderr.fnmatch_lines(["ERROR: invalid value '-1' for warmup from ini trainperf_warmup*"])


MARKED = """
import pytest
from toy_workload import Toy
from trainperf import Optimization

@pytest.mark.trainperf(MARKER)
def test_toy(trainperf):
    trainperf.run(Toy(), Optimization("reference"))
"""


@pytest.mark.parametrize(
    ("marker", "message"),
    [
        ("iter=3", "@pytest.mark.trainperf takes iters=N, warmup=N, timeout=N; got iter"),
        (
            "3, 1",
            "@pytest.mark.trainperf takes iters=N, warmup=N, timeout=N, by name only; "
            "got the positional argument(s) 3, 1",
        ),
        ("iters=0", "invalid value 0 for iters from marker trainperf(iters=...): expected an integer from 1 to 100000"),
    ],
)
def test_a_bad_marker_is_a_usage_error_before_any_case_runs(toy_suite, marker: str, message: str) -> None:
    pytester = toy_suite()
    pytester.makepyfile(test_toy=MARKED.replace("MARKER", marker))
    result = pytester.runpytest(*BASE)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: test_toy.py::test_toy: {message}"])


@pytest.mark.slow
def test_precedence_command_line_over_environment_over_marker(toy_suite, monkeypatch) -> None:
    pytester = toy_suite()
    pytester.makeconftest(
        "import pytest\n"
        "def pytest_collection_modifyitems(items):\n"
        "    for item in items:\n"
        "        item.add_marker(pytest.mark.trainperf(iters=4))\n"
    )
    report = pytester.path / "report"

    def iters_seen(*args: str) -> int:
        pytester.runpytest(*BASE, f"--perf-report={report}", *args).assert_outcomes(passed=2)
        return json.loads((report / "run.json").read_text())["benchmarks"][0]["extra_info"]["iters"]

    assert iters_seen() == 4
    monkeypatch.setenv("TRAINPERF_ITERS", "6")
    assert iters_seen() == 6
    assert iters_seen("--perf-iters=7") == 7


def test_junit_properties_and_run_document(toy_suite) -> None:
    pytester = toy_suite()
    result = pytester.runpytest(*BASE, "--junitxml=junit.xml", "--perf-report=out")
    result.assert_outcomes(passed=2)
    junit = (pytester.path / "junit.xml").read_text()
    for name in ("trainperf_case", "trainperf_median_ms", "trainperf_speedup", "trainperf_accuracy"):
        assert f'name="{name}"' in junit
    document = json.loads((pytester.path / "out" / "run.json").read_text())
    names = [b["name"] for b in document["benchmarks"]]
    assert names == ["toy/reference", "toy/variant"]
    first = document["benchmarks"][0]
    assert first["stats"]["rounds"] == 15 and len(first["stats"]["data"]) == 15
    assert first["stats"]["median"] == pytest.approx(first["extra_info"]["summary_ms"]["median"] / 1000)


@pytest.mark.slow
def test_profile_torch_attaches_each_cases_top5_to_terminal_junit_and_run_document(toy_suite) -> None:
    pytester = toy_suite()
    result = pytester.runpytest(*BASE, "--profile=torch", "--perf-report=out", "--junitxml=junit.xml")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "toy/reference: Top-5 operators of one iteration (* ms), torch.profiler *, * s to profile (its part of 2*)",
            "*#*operator*phase*calls*ms*share",
            "   1 * *.* *%",  # its top operator: an ATen op, or an innermost event such as autograd's detach
            "toy/variant: Top-5 operators*",
            f"note: profiles written under {pytester.path / 'out' / 'profiles'}",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "trainperf: 2 cases together: profiling with torch (files in *profiles)",
            "trainperf: 2 cases together: torch done in * s",
        ]
    )
    document = json.loads((pytester.path / "out" / "run.json").read_text())
    profile = document["benchmarks"][0]["extra_info"]["profile"]
    assert profile["error"] is None and profile["unit"] == "operator"
    assert len(profile["top"]) == 5 and profile["bottleneck"] is None  # no GPU kernels on the CPU
    assert {row["phase"] for row in profile["top"]} <= {"data", "forward", "backward", "optimizer", "other"}
    assert any(row["name"].startswith("aten::") for row in profile["top"])  # ATen ops, whichever ranks first
    assert sum(row["share"] for row in profile["top"]) <= 1.0
    trace = pytester.path / "out" / "profiles" / "toy-reference" / "trace.json"
    assert profile["files"] == [str(trace)] and json.loads(trace.read_text())["traceEvents"]
    assert profile["tool"].endswith("(test process)")  # the counted iterations' trace: no child started
    assert not (trace.parent / "torch.log").exists()
    junit = (pytester.path / "junit.xml").read_text()
    assert f'name="trainperf_top1_kernel" value="{profile["top"][0]["name"]}' in junit
    assert 'name="trainperf_profile_tool" value="torch.profiler' in junit
    report = (pytester.path / "out" / "report.html").read_text()
    variant = next(case for case in document["benchmarks"] if case["name"] == "toy/variant")
    role = "best" if variant["extra_info"]["speedup"] >= 1.0 else "fastest after the reference"  # equal sleeps
    assert "toy/reference: reference" in report and f"toy/variant: {role} (" in report
    assert (pytester.path / "out" / "report.md").is_file()
    result.stdout.fnmatch_lines(["note: report written to out/report.html (and report.md)*"])


@pytest.mark.slow
def test_pytest_html_rows_carry_the_top5(toy_suite) -> None:
    pytest.importorskip("pytest_html", reason="pytest-html not installed")
    pytester = toy_suite()
    result = pytester.runpytest(*BASE, "--profile=torch", "--html=page.html", "--self-contained-html")
    result.assert_outcomes(passed=2)
    page = (pytester.path / "page.html").read_text()
    assert page.count("trainperf-top5") == 2  # one Top-5 table per case row
    assert "Top-5 operators of one iteration" in page


def test_profiler_failure_is_one_note_and_never_a_verdict(toy_suite) -> None:
    pytester = toy_suite()
    blocked = pytester.path / ".trainperf" / "profiles" / "toy-reference"  # a file where its folder goes
    blocked.parent.mkdir(parents=True)
    blocked.write_text("")
    result = pytester.runpytest(*BASE, "--profile=nsys", "--perf-profile-timeout=0.01")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "toy/reference: no profile (torch: python: its log cannot be written: FileExistsError: *toy-reference*)",
            "toy/variant: Top-5 operators of one iteration *",  # the other case of the batch keeps its profile
            "note: --profile=nsys profiles CUDA kernels; this run is on cpu: torch.profiler used instead",
            "note: toy/reference: profile not attached: torch: python: its log cannot be written: FileExistsError: *",
        ]
    )
    assert "toy/variant: profile not attached" not in result.stdout.str()  # its own folder held its trace


def test_no_trainperf_cases_leave_the_session_alone(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_plain():\n    assert True\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert "trainperf:" not in result.stdout.str()


@pytest.mark.slow
def test_xdist_workers_write_their_own_run_documents_and_the_controller_merges_them(toy_suite) -> None:
    pytest.importorskip("xdist", reason="pytest-xdist not installed")
    pytester = toy_suite()
    result = pytester.runpytest(*BASE, "-n", "2", "--perf-report=out")
    result.assert_outcomes(passed=2)
    out = pytester.path / "out"
    assert sorted(p.name for p in out.glob("run-gw*.json")) == ["run-gw0.json", "run-gw1.json"]
    merged = json.loads((out / "run.json").read_text())
    assert sorted(case["name"] for case in merged["benchmarks"]) == ["toy/reference", "toy/variant"]
    assert sorted(worker["file"] for worker in merged["workers"]) == ["run-gw0.json", "run-gw1.json"]
    assert "toy/variant" in (out / "report.html").read_text()
    result.stdout.fnmatch_lines(
        [
            "*trainperf: the xdist workers' cases*",
            "*toy/reference*",
            "note: run documents of 2 workers (run-gw0.json, run-gw1.json) merged into out/run.json",
        ]
    )


@pytest.mark.slow
def test_xdist_workers_updating_baselines_at_once_lose_no_entry(toy_suite, monkeypatch) -> None:
    """Two workers, a GPU each, rewrite the same device file at the same time: the lock keeps both cases."""
    pytest.importorskip("xdist", reason="pytest-xdist not installed")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")  # two GPUs by name: the toy cases run on the CPU
    pytester = toy_suite()
    pytester.runpytest(*BASE, "-n", "2", "--perf-gpu-per-worker", *RECORD_ONCE).assert_outcomes(passed=2)
    files = list((pytester.path / "bl").glob("*.json"))
    assert len(files) == 1
    assert sorted(json.loads(files[0].read_text())["cases"]) == ["toy/reference", "toy/variant"]
    pytester.runpytest(*BASE, "--perf-strict").assert_outcomes(passed=2)  # both gate against what was kept


@pytest.mark.slow
def test_xdist_workers_without_a_report_folder_show_their_cases(toy_suite) -> None:
    """The controller's summary shows every worker's cases, which they sent with their results."""
    pytest.importorskip("xdist", reason="pytest-xdist not installed")
    pytester = toy_suite()
    result = pytester.runpytest(*BASE, "-n", "2")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*trainperf: the xdist workers' cases*", "*case*ms/iter*verdict", "*toy/*", "*toy/*"])
    assert "baseline ms" not in result.stdout.str()  # no baseline: the summary leaves out its empty columns
    assert not list(pytester.path.glob("run*.json"))  # no report folder: nothing written


@pytest.mark.slow
def test_xdist_workers_sharing_the_host_leave_the_time_unjudged_and_cannot_record(toy_suite) -> None:
    """Workers sharing the host's cores: a case's time is a note however slow it ran, said once for all
    workers, and a recording is refused before any worker starts."""
    pytest.importorskip("xdist", reason="pytest-xdist not installed")
    pytester = toy_suite()
    pytester.runpytest(*BASE, *RECORD_ONCE).assert_outcomes(passed=2)
    slowed = toy_suite(variant_sleep_ms=30)  # a fourfold slowdown of toy/variant, which alone would fail
    result = slowed.runpytest(*BASE, "-n", "2", "--perf-confirmations=0")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "*trainperf: the xdist workers' cases*",
            "*case*ms/iter*verdict",
            "*toy/*pass",
            "*toy/*pass",
            "note: time, speedup and kernel time not judged: 2 pytest-xdist workers train cases at once *",
        ]
    )
    assert result.stdout.str().count("not judged: 2 pytest-xdist workers") == 1  # one note for both workers
    assert not list(slowed.path.glob("run*.json"))  # no report folder: nothing written
    refused = slowed.runpytest(*BASE, "-n", "2", "--update-baselines")
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    refused.stderr.fnmatch_lines(["ERROR: --update-baselines under pytest-xdist: 2 workers would record times *"])


def test_gpu_per_worker_needs_a_gpu_for_each_worker(toy_suite) -> None:
    pytest.importorskip("xdist", reason="pytest-xdist not installed")
    result = toy_suite().runpytest(*BASE, "-n", "2", "--perf-gpu-per-worker", "--perf-report=out")
    result.stdout.fnmatch_lines(["*--perf-gpu-per-worker: no GPU is visible (the driver reports none*"])
    assert result.ret != 0


WHERE_TEST = """
import os, pathlib, time, pytest

@pytest.mark.parametrize("k", range(16))
def test_where(k):
    if k == 0:
        os._exit(3)  # the worker dies; pytest-xdist starts another in its place
    worker = os.environ["PYTEST_XDIST_WORKER"]
    pathlib.Path(f"gpu-{worker}.txt").write_text(os.environ["CUDA_VISIBLE_DEVICES"])
    time.sleep(0.5)
"""


def test_a_crashed_workers_replacement_claims_the_gpu_it_left(pytester: pytest.Pytester, monkeypatch) -> None:
    pytest.importorskip("xdist", reason="pytest-xdist not installed")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")  # two GPUs by name: no CUDA starts in these tests
    pytester.makepyfile(test_where=WHERE_TEST)
    result = pytester.runpytest(*BASE, "-n", "2", "--perf-gpu-per-worker")
    result.assert_outcomes(passed=15, failed=1)
    # which first worker takes test_where[0], and which claims GPU 0 first, is up to the scheduler
    crashed = re.search(r"worker '(gw[01])' crashed while running '\S*test_where", result.stdout.str())
    assert crashed is not None, result.stdout.str()
    survivor = "gw1" if crashed.group(1) == "gw0" else "gw0"
    gpus = {path.stem.removeprefix("gpu-"): path.read_text() for path in pytester.path.glob("gpu-*.txt")}
    assert {survivor, "gw2"} <= set(gpus) <= {"gw0", "gw1", "gw2"}
    assert sorted([gpus[survivor], gpus["gw2"]]) == ["0", "1"]  # the replacement holds the GPU the crash left
    assert gpus.get(crashed.group(1), gpus["gw2"]) == gpus["gw2"]


OOM_TEST = """
import pytest
from toy_workload import Toy
from trainperf import Optimization

CASES = [
    Optimization("reference"),
    Optimization("hungry", options={"out_of_memory": True}),
    Optimization("after"),
]

@pytest.mark.parametrize("optimization", CASES, ids=lambda o: o.name)
def test_toy(trainperf, optimization):
    trainperf.run(Toy(), optimization)
"""


def test_out_of_memory_fails_that_case_alone(pytester: pytest.Pytester) -> None:
    toy = (Path(__file__).parent / "toy_workload.py").read_text(encoding="utf-8")
    pytester.makepyfile(toy_workload=toy, test_toy=OOM_TEST)
    result = pytester.runpytest(*BASE)
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        ["*toy/hungry: ran out of cpu memory: CUDA out of memory. Tried to allocate 20.00 GiB (toy) (memory freed)"]
    )
    assert "Traceback" not in result.stdout.str()


DATA_PARALLEL_AND_IMAGES_TEST = """
import pytest
from toy_workload import Toy
from trainperf import Optimization

CASES = [
    Optimization("reference", options={"images": True}),
    Optimization("ddp", ddp={}, options={"images": True}),
    Optimization("broken_ddp", ddp={}, options={"fail_on_ranks": (1,)}),
    Optimization("gpu_only", needs_cuda="a CUDA-only kernel"),
]

@pytest.mark.parametrize("optimization", CASES, ids=lambda o: o.name)
def test_toy(trainperf, optimization):
    trainperf.run(Toy(), optimization)
"""


@pytest.mark.slow
def test_image_cases_log_their_costs_and_data_parallel_ones_their_scaling(pytester: pytest.Pytester) -> None:
    toy = (Path(__file__).parent / "toy_workload.py").read_text(encoding="utf-8")
    pytester.makepyfile(toy_workload=toy, test_toy=DATA_PARALLEL_AND_IMAGES_TEST)
    result = pytester.runpytest(*BASE, "--junitxml=junit.xml", "-v")  # -v: the per-case cost lines too
    result.assert_outcomes(passed=2, failed=1, skipped=1)
    assert not [line for line in result.stdout.lines if " MFU " in line]  # no peak FLOP/s on this CPU: no column
    result.stdout.fnmatch_lines(
        [
            "*toy/broken_ddp: data-parallel run failed: *rank 1: RuntimeError: toy failure on rank 1",
            "note: no MFU: no peak FLOP/s is known for *",
            "note: 1 case(s) ran slower than their reference on the CPU (toy/ddp): most optimizations target *",
            "note: toy/reference: batch_cost 0.0* s, reader_cost 0.0* s (*%), ips * images/s",
            "note: toy/ddp: 2 gloo processes, no scaling efficiency: CPU processes share this machine's cores, "
            "all-reduce bus bandwidth * GB/s",
            "skipped: test_toy.py::test_toy[[]gpu_only[]]: toy/gpu_only runs on CUDA only: a CUDA-only kernel",
        ]
    )
    junit = (pytester.path / "junit.xml").read_text()
    assert 'name="trainperf_processes" value="2"' in junit and "trainperf_scaling_efficiency" not in junit


DATA_PARALLEL_TEST = """
import pytest
from toy_workload import Toy
from trainperf import Optimization

# once slowed far beyond what one spawn of two gloo processes differs from the next by (cpu-timing-noise.md)
CASE = Optimization("ddp", ddp={}, options={"sleep_ms": 10.0, "slow_once": "slow-once", "slow_once_ms": 40.0})

@pytest.mark.parametrize("optimization", [CASE], ids=lambda o: o.name)
def test_toy(trainperf, optimization):
    trainperf.run(Toy(), optimization)
"""


@pytest.mark.slow
def test_a_data_parallel_case_is_recorded_in_independent_runs_and_judged_on_their_noise(
    pytester: pytest.Pytester,
) -> None:
    toy = (Path(__file__).parent / "toy_workload.py").read_text(encoding="utf-8")
    pytester.makepyfile(toy_workload=toy, test_toy=DATA_PARALLEL_TEST)
    pytester.runpytest(*BASE, "--update-baselines").assert_outcomes(passed=1)
    stored = json.loads(baseline_file(pytester).read_text())["cases"]["toy/ddp"]
    assert len(stored["run_medians_ms"]) == 3  # each run spawned its two gloo processes afresh
    # judged on that noise, whatever this CPU's timing makes of the verdict (no second measurement to wait for)
    pytester.runpytest(*BASE, "--perf-report=out", "--perf-confirmations=0")
    checks = json.loads((pytester.path / "out" / "run.json").read_text())["benchmarks"][0]["extra_info"]["checks"]
    baseline = next(check for check in checks if check["name"] == "baseline")
    assert " over 3 runs" in baseline["message"] and "re-record" not in baseline["message"]


@pytest.mark.slow
def test_a_data_parallel_case_slower_once_is_measured_again_in_freshly_spawned_ranks(pytester: pytest.Pytester) -> None:
    toy = (Path(__file__).parent / "toy_workload.py").read_text(encoding="utf-8")
    pytester.makepyfile(toy_workload=toy, test_toy=DATA_PARALLEL_TEST)
    pytester.runpytest(*BASE, *RECORD_ONCE).assert_outcomes(passed=1)
    (pytester.path / "slow-once").touch()  # the first measurement's ranks find it, the second's do not
    result = pytester.runpytest(*BASE)
    # its verdict is the second measurement's, of whatever this CPU's timing makes of a fresh spawn
    result.stdout.fnmatch_lines(["note: toy/ddp: * by a second measurement at the end of the session *"])
    assert "measured in the test process instead" not in result.stdout.str()  # no child tried to train it alone


@pytest.mark.slow
def test_history_adds_passing_runs_whose_spread_the_gate_then_judges_by(toy_suite) -> None:
    pytester = toy_suite()
    pytester.runpytest(*BASE, *RECORD_ONCE).assert_outcomes(passed=2)
    for _night in range(2):
        night = pytester.runpytest(*BASE, "--perf-history")
        night.assert_outcomes(passed=2)
        night.stdout.fnmatch_lines(["note: history: 2 passing case(s) added to */bl/cpu-*.json"])
    stored = json.loads(baseline_file(pytester).read_text())["cases"]
    assert [len(stored[name]["history_ms"]) for name in sorted(stored)] == [2, 2]
    assert [len(stored[name]["host_step_calls_history"]) for name in sorted(stored)] == [2, 2]
    third = pytester.runpytest(*BASE, "--perf-report=out")
    third.assert_outcomes(passed=2)
    checks = json.loads((pytester.path / "out" / "run.json").read_text())["benchmarks"][0]["extra_info"]["checks"]
    baseline = next(check for check in checks if check["name"] == "baseline")
    assert "over 3 runs (2 accepted since the recording)" in baseline["message"]
    assert "the baseline's center is 1 recorded run: re-record it with --update-baselines" in baseline["message"]
    assert "note: history" not in third.stdout.str()  # without --perf-history nothing is added


@pytest.mark.slow
def test_calibration_adds_every_judged_case_to_the_history_failed_ones_too(toy_suite) -> None:
    """The reference must pass each run against its one-run baseline (a 10% threshold): its step sleeps
    30 ms, so that the toy's compute (about 20 ms, slowed by the other tests' processes) moves it less."""
    toy_suite(sleep_ms=30.0, variant_sleep_ms=30.0).runpytest(*BASE, *RECORD_ONCE).assert_outcomes(passed=2)
    slowed = toy_suite(sleep_ms=30.0, variant_sleep_ms=120.0)
    history_only = slowed.runpytest(*BASE, "--perf-history", "--perf-confirmations=0")
    history_only.assert_outcomes(passed=1, failed=1)
    stored = json.loads(baseline_file(slowed).read_text())["cases"]
    assert [len(stored[name].get("history_ms", [])) for name in ("toy/reference", "toy/variant")] == [1, 0]
    calibrating = slowed.runpytest(*BASE, "--perf-calibrate", "--perf-confirmations=0")
    calibrating.assert_outcomes(passed=1, failed=1)  # the verdicts stay the gate's
    calibrating.stdout.fnmatch_lines(
        ["note: history: 2 judged case(s), passed or failed (--perf-calibrate), added to */bl/cpu-*.json"]
    )
    stored = json.loads(baseline_file(slowed).read_text())["cases"]
    assert [len(stored[name]["history_ms"]) for name in ("toy/reference", "toy/variant")] == [2, 1]
    assert stored["toy/variant"]["history_ms"][0] > 2 * stored["toy/variant"]["summary"]["median"]


@pytest.mark.slow
def test_xdist_update_merges_every_workers_changes_into_one_table_and_the_terminal(toy_suite, monkeypatch) -> None:
    pytest.importorskip("xdist", reason="pytest-xdist not installed")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")  # two GPUs by name: the toy cases run on the CPU
    result = toy_suite().runpytest(*BASE, "-n", "2", "--perf-gpu-per-worker", "--update-baselines", "--perf-report=out")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["baselines written to */bl/cpu-*.json:"])
    result.stdout.fnmatch_lines(["  toy/reference: new -> * ms, runs *, threshold *.*%"])
    result.stdout.fnmatch_lines(["  toy/variant: new -> * ms, runs *, threshold *.*%"])
    table = (Path("out") / "baseline-changes.md").read_text()  # pytester runs in its own folder
    assert "| toy/reference" in table and "| toy/variant" in table
    assert table.count("*threshold*:") == 1  # said once, under every worker's table


INTERRUPTED = """
import pytest
from toy_workload import Toy
from trainperf import Optimization

CASES = [Optimization("reference", options={}), Optimization("later", options={"raise_in": "interrupt"})]

@pytest.mark.parametrize("optimization", CASES, ids=lambda o: o.name)
def test_toy(trainperf, optimization):
    trainperf.run(Toy(), optimization)
"""


def test_an_interrupted_update_writes_the_cases_that_finished_and_says_so(pytester: pytest.Pytester) -> None:
    toy = (Path(__file__).parent / "toy_workload.py").read_text(encoding="utf-8")
    pytester.makepyfile(toy_workload=toy, test_toy=INTERRUPTED)
    result = pytester.runpytest_subprocess(*BASE, *RECORD_ONCE)  # in-process, the interrupt would stop this test
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(
        ["note: interrupted: the 1 case(s) that finished are written to the baselines; the others keep *"]
    )
    assert sorted(json.loads(baseline_file(pytester).read_text())["cases"]) == ["toy/reference"]


def test_an_interrupted_run_names_the_case_it_cut_off(pytester: pytest.Pytester) -> None:
    """A nightly stopped by Ctrl-C or a time limit must not read as a whole run with one case fewer."""
    toy = (Path(__file__).parent / "toy_workload.py").read_text(encoding="utf-8")
    pytester.makepyfile(toy_workload=toy, test_toy=INTERRUPTED)
    result = pytester.runpytest_subprocess(*BASE, "--perf-report=out")  # in-process, it would stop this test
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(
        [
            "toy/later: interrupted: the session was stopped while it ran",
            "note: interrupted (Ctrl-C or SIGINT): the cases that finished are reported",
        ]
    )
    document = json.loads((pytester.path / "out" / "run.json").read_text())
    assert [case["name"] for case in document["benchmarks"]] == ["toy/reference"]
    (cut_off,) = document["unfinished"]
    assert (cut_off["name"], cut_off["verdict"]) == ("toy/later", "interrupted")


def test_a_failing_case_keeps_torch_trace_records_out_of_its_captured_log(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import logging

        def test_traced(trainperf):
            trace = logging.getLogger("torch.__trace")
            trace.setLevel(logging.DEBUG)  # as torch sets it
            trace.propagate = True  # as a compiled case on a GPU left it: to torch's stderr handler
            trace.debug("")
            logging.getLogger("toy").warning("kept")
            assert False
        """
    )
    result = pytester.runpytest(*BASE)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*Captured log call*", "WARNING *toy*kept*"])
    assert not [line for line in result.stdout.lines if line.startswith("V") and line.endswith("] ")]


@pytest.mark.slow
def test_a_test_file_outside_the_rootdir_is_recorded_in_fresh_processes(pytester: pytest.Pytester) -> None:
    """Its node id is "::test_toy[reference]", with which pytest refuses to start the fresh processes:
    they are started from the file's path and the test's name."""
    toy = (Path(__file__).parent / "toy_workload.py").read_text(encoding="utf-8")
    elsewhere = pytester.mkdir("elsewhere")
    (elsewhere / "toy_workload.py").write_text(toy)
    (elsewhere / "test_toy.py").write_text(ONCE_SLOW.replace("OPTIONS", '{"sleep_ms": 1.0}'))
    project = pytester.mkdir("project")
    result = pytester.runpytest(
        str(elsewhere / "test_toy.py"), "--rootdir", str(project), "-p", "no:cacheprovider", "--perf-device=cpu",
        f"--baseline-dir={project / 'bl'}", "--update-baselines", "--perf-runs=2",
    )  # fmt: skip
    result.assert_outcomes(passed=1)
    stored = json.loads(next((project / "bl").glob("*.json")).read_text())["cases"]["toy/reference"]
    assert len(stored["run_medians_ms"]) == 2  # two fresh processes


TWO_SHUFFLED = """
import pytest
from toy_workload import Toy
from trainperf import Optimization

CASES = [
    Optimization("reference", options={"sleep_ms": 10.0}),
    Optimization("shuffled", options={"sleep_ms": 10.0, "shuffle_labels": True}),
    Optimization("shuffled_too", options={"sleep_ms": 12.0, "shuffle_labels": True}),
]

@pytest.mark.parametrize("optimization", CASES, ids=lambda o: o.name)
def test_toy(trainperf, optimization):
    trainperf.run(Toy(), optimization)
"""


@pytest.mark.slow
def test_profile_cases_failed_profiles_only_the_cases_that_failed_in_one_child(toy_suite) -> None:
    """A night explains its regressions without profiling every case: the two cases trained on shuffled
    labels fail their accuracy and alone are profiled, at the session's end, by one child for both; their
    JUnit properties carry their profiles."""
    pytester = toy_suite()
    pytester.makepyfile(test_toy=TWO_SHUFFLED)
    args = ("--profile=torch", "--profile-cases=failed", "--perf-report=out", "--junitxml=junit.xml")
    result = pytester.runpytest(*BASE, *args)
    result.assert_outcomes(passed=1, failed=2)
    document = json.loads((pytester.path / "out" / "run.json").read_text())
    profiles = {case["name"]: case["extra_info"]["profile"] for case in document["benchmarks"]}
    assert profiles["toy/reference"] is None
    for key in ("toy/shuffled", "toy/shuffled_too"):
        assert profiles[key]["error"] is None and profiles[key]["batch"] == 2 and len(profiles[key]["top"]) == 5
    root = pytester.path / "out" / "profiles"
    assert not (root / "toy-reference").exists()  # a case that passed costs no trace
    assert "2 passed" in (root / "torch.log").read_text()  # one child ran both failed cases' nodes
    assert all((root / name / "trace.json").is_file() for name in ("toy-shuffled", "toy-shuffled_too"))
    for key, name in (("toy/shuffled", "toy-shuffled"), ("toy/shuffled_too", "toy-shuffled_too")):
        own = json.loads((root / name / "child.json").read_text())["seconds"]  # its part of the child
        assert 0 < own <= profiles[key]["seconds"]
    cases = {case.get("name"): case for case in ElementTree.parse(pytester.path / "junit.xml").iter("testcase")}
    for name in ("test_toy[shuffled]", "test_toy[shuffled_too]"):
        found = {p.get("name"): p.get("value") for p in cases[name].iter("property")}
        assert found["trainperf_verdict"] == "fail" and found["trainperf_profile_tool"].startswith("torch.profiler")
    assert "trainperf_profile_tool" not in {p.get("name") for p in cases["test_toy[reference]"].iter("property")}


def test_profile_cases_chooses_all_failed_or_cases_by_name() -> None:
    from trainperf.profile.profiler import selected

    assert selected("all", "gpt2/stack", failed=False)
    assert selected("failed", "gpt2/stack", failed=True) and not selected("failed", "gpt2/stack", failed=False)
    assert selected("bert,gpt2/st", "gpt2/stack", failed=False) and not selected("bert", "gpt2/stack", failed=True)


def test_a_recorded_entry_keeps_the_commit_of_the_checkout_it_ran_in(toy_suite) -> None:
    pytester = toy_suite()
    git = ("git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false")
    for command in (("git", "init", "-q"), ("git", "add", "-A"), (*git, "commit", "-q", "-m", "toy")):
        subprocess.run(command, cwd=pytester.path, check=True)
    head = subprocess.run(("git", "rev-parse", "HEAD"), cwd=pytester.path, capture_output=True, text=True).stdout
    pytester.runpytest(*BASE, *RECORD_ONCE).assert_outcomes(passed=2)
    cases = json.loads(baseline_file(pytester).read_text())["cases"]
    assert {entry["commit"] for entry in cases.values()} == {head.strip()}
