"""What a case states it can catch: its threshold, the slowdown caught nine times in ten, its host work."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest
from trainperf.judge import checks, host_work_check, policy, stats
from trainperf.measure.measurement import Measurement
from trainperf.spec.optimization import Optimization

CASE = Optimization("amp")
SAMPLES = [10.0, 10.2, 9.9, 10.1, 10.3, 10.0]


def measured(busy: float | None) -> Measurement:
    during = {} if busy is None else {"gpu_busy_share": busy}
    return Measurement(SAMPLES, [0.1] * 6, [1.0], 0.9, 0.5, None, 1.0, 0.5, 8, None, 6, 1, clocks={"during": during})


def test_a_case_with_measured_noise_catches_nine_in_ten_a_slowdown_beyond_its_threshold() -> None:
    stored = checks.Baseline(SAMPLES, [10.0, 10.4, 9.7])  # runs that spread 3.5%
    found = policy.detection(CASE, stored, None, measured(0.99))
    noise = stored.noise(checks.DEFAULT_FLOOR)
    assert found.slowdown == pytest.approx(noise.threshold)
    assert found.slowdown_9_in_10 == pytest.approx(stats.reliably_caught(noise))
    assert found.slowdown_9_in_10 is not None and found.slowdown_9_in_10 > found.slowdown
    assert stats.caught_share(noise, found.slowdown_9_in_10) == pytest.approx(0.9)
    assert found.host_work is None  # a busy GPU: its host calls are not judged


def test_a_case_without_measured_noise_states_its_fallback_and_no_nine_in_ten() -> None:
    one_run = policy.detection(CASE, checks.Baseline(SAMPLES, [10.0]), None, measured(0.99))
    assert one_run.slowdown == checks.FALLBACK_THRESHOLD and one_run.slowdown_9_in_10 is None
    assert policy.detection(CASE, None, None, measured(0.99)) == policy.Detection()


def test_a_case_whose_gpu_waits_states_the_rise_in_host_calls_it_catches() -> None:
    calls = host_work_check.StoredCalls(recorded=[5000, 5000, 5000], gpu_busy_shares=[0.6])
    found = policy.detection(CASE, None, calls, measured(0.6))
    assert found == policy.Detection(host_work=pytest.approx(checks.DEFAULT_FLOOR))


def test_a_case_whose_kernels_were_timed_states_the_rise_in_kernel_time_it_catches() -> None:
    recorded = [{"kernel_ms": 10.0, "kernel_ms_spread": 0.1}, {"kernel_ms": 10.5}, {"kernel_ms": 10.2}]
    now = dataclasses.replace(measured(0.99), work=[{"kernel_ms": 10.1, "kernel_ms_spread": 0.2}])
    found = policy.detection(CASE, None, None, now, recorded)
    assert found.kernel_time == pytest.approx(0.5 / 10.2)  # the recorded runs spread 0.5 ms about 10.2: past the floor
    quiet = [{"kernel_ms": 10.0}, {"kernel_ms": 10.0}, {"kernel_ms": 10.0}]
    assert policy.detection(CASE, None, None, now, quiet).kernel_time == pytest.approx(checks.DEFAULT_FLOOR)
    ranks = Optimization("ddp", ddp={})  # a data-parallel case's kernel time is noted, not judged
    assert policy.detection(ranks, None, None, now, recorded).kernel_time is None
    assert policy.detection(CASE, None, None, measured(0.99), recorded).kernel_time is None  # none timed now


def test_no_check_name_is_a_string_outside_the_enum() -> None:
    """Checks are made and compared by ``CheckName`` alone: a literal would drift from the policy."""
    names = {str(name) for name in checks.CheckName}
    found = []
    for path in (Path(__file__).parent.parent / "plugin" / "trainperf").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "Check":
                first = node.args[0] if node.args else None
                if isinstance(first, ast.Constant):
                    found.append(f"{path.name}:{node.lineno}: Check({first.value!r}, ...)")
            if isinstance(node, ast.Compare) and _reads_a_check_name(node.left):
                for other in node.comparators:
                    texts = other.elts if isinstance(other, ast.Tuple | ast.Set | ast.List) else [other]
                    for text in texts:
                        if isinstance(text, ast.Constant) and text.value in names:
                            found.append(f"{path.name}:{node.lineno}: compared with {text.value!r}")
    assert not found, found


def _reads_a_check_name(node: ast.expr) -> bool:
    """``x.name``, ``x["name"]`` or ``x.get("name")``."""
    if isinstance(node, ast.Attribute):
        return node.attr == "name"
    if isinstance(node, ast.Subscript):
        return isinstance(node.slice, ast.Constant) and node.slice.value == "name"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
        return bool(node.args) and isinstance(node.args[0], ast.Constant) and node.args[0].value == "name"
    return False


def test_the_policy_notes_what_is_recorded_and_measures_again_only_what_a_second_run_may_undo() -> None:
    slower = checks.Check(checks.CheckName.TIME, False, "slower")
    short = checks.Check(checks.CheckName.SPEEDUP, False, "short")
    worse = checks.Check(checks.CheckName.ACCURACY, False, "worse")
    found = [worse, slower, short]
    on_cpu = policy.measured_again(found, has_baseline=True, device_type="cpu")
    assert on_cpu == {"baseline": "slower", "speedup": "short"}
    assert policy.measured_again(found, has_baseline=False, device_type="cpu") == {"speedup": "short"}
    # a GPU does not repeat a training bit for bit: its accuracy is one draw, measured again
    on_gpu = policy.measured_again(found, has_baseline=False, device_type="cuda")
    assert on_gpu == {"accuracy": "worse", "speedup": "short"}
    assert policy.reference_again({"speedup": "short"}) and not policy.reference_again({"baseline": "slower"})
    assert policy.why_not_again(standing=[], used=2, budget=2, launched_data_parallel=False, runs=1) == ""
    assert policy.why_not_again(standing=[], used=0, budget=2, launched_data_parallel=False, runs=3) is not None
    assert policy.why_not_again(standing=[], used=0, budget=2, launched_data_parallel=False, runs=1) is None
    assert policy.standing(found, device_type="cpu") == ["accuracy"]
    assert policy.standing(found, device_type="cuda") == []
    assert policy.standing([slower, short], device_type="cpu") == []
    standing = policy.standing(found, device_type="cpu")
    assert (
        policy.why_not_again(standing=standing, used=0, budget=2, launched_data_parallel=False, runs=1)
        == "not measured again: it fails on its accuracy, which a second measurement cannot undo"
    )
    assert not policy.keeps_baseline(found) and policy.keeps_baseline([slower])
    recorded = [{"name": "baseline", "passed": None}], [{"name": "baseline", "passed": False}]
    assert not policy.time_judged(recorded[0]) and policy.time_judged(recorded[1])
    assert policy.accepted([slower], "fail", calibrate=True) and not policy.accepted([slower], "fail", calibrate=False)
