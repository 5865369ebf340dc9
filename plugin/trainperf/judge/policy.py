"""The verdict policy, in one place: which checks judge a case, which of them only note, which failures
are measured again before they stand, and which cases count as judged.

Every check reads the same ``Figures`` and returns a ``Check`` (or None where it does not apply), as
``CHECKS`` lists them. A case is judged on accuracy, on its work and kernel time, and on time against its
stored baseline (on a GPU that waited for the host where recorded, only once runs of later sessions
measured that time's noise; not where a host slower than the recorded one kept its GPU waiting), and
where its GPU waits for the host on its host work; a case other than the reference also on its speedup
(a shortfall within the measured noise of the case and its reference passes) and its peak memory. Under
``--update-baselines`` a slower time or more host work is reported, not failed; on a throttled GPU
neither the time nor the speedup is judged. Pure: no torch, no pytest.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from trainperf.judge import checks, host_work_check, reference_checks, stats, versions, work_check
from trainperf.judge.checks import Check, CheckName
from trainperf.judge.verdict import Verdict
from trainperf.measure.measurement import Measurement
from trainperf.spec.optimization import REFERENCE, Metric, Optimization

# reported, not failed, while baselines are recorded (--update-baselines): they are what is being recorded
NOTED_WHEN_RECORDING = frozenset({CheckName.TIME, CheckName.HOST_WORK, CheckName.WORK, CheckName.KERNEL_TIME})
# reported, not failed, when the GPU throttled while the case ran: its times say little about the code
NOTED_WHEN_THROTTLED = frozenset({CheckName.TIME, CheckName.SPEEDUP, CheckName.KERNEL_TIME})
# failures a second measurement in a fresh process may undo; the time only where a baseline is stored
# (no measurement supplies a missing one), and a speedup with its reference measured again too
MEASURED_AGAIN = frozenset({CheckName.TIME, CheckName.SPEEDUP, CheckName.KERNEL_TIME})
# on a GPU the accuracy too: its kernels (atomics in backward passes, algorithms picked by timing) do not
# repeat a training bit for bit, so one run's metric is one draw of it; the CPU repeats a seeded training
# (research/evidence/h200-accuracy-draws.md)
MEASURED_AGAIN_ON_GPU = MEASURED_AGAIN | {CheckName.ACCURACY}
REFERENCE_AGAIN = frozenset({CheckName.SPEEDUP})
# not judged where other pytest-xdist workers train cases on the same cores and GPU at once (-n N without
# --perf-gpu-per-worker): each of these times counts the other workers' work too; the work does not
NOT_JUDGED_BESIDE_WORKERS = {CheckName.TIME: "time", CheckName.SPEEDUP: "speedup", CheckName.KERNEL_TIME: "kernel time"}


@dataclasses.dataclass(frozen=True)
class Figures:
    """What every check reads: the case's measured figures, its reference's of the same run, and the
    figures stored for this device."""

    key: str
    optimization: Optimization
    metric: Metric
    measurement: Measurement
    reference: Measurement
    speedup: float
    stored: checks.Baseline | None
    stored_calls: host_work_check.StoredCalls | None
    reference_stored: checks.Baseline | None
    device_type: str
    strict: bool
    stored_work: Sequence[Mapping[str, Any]] = ()  # the work counted in each recorded run
    workers_at_once: int = 1  # pytest-xdist workers training cases on this host's cores and GPU at once
    version_changes: Mapping[str, tuple[str, str]] = dataclasses.field(default_factory=dict)  # since the recording
    upgrade_fails: bool = False  # a count that moved with those changes fails the case (else a note)

    @property
    def floor(self) -> float:
        return slowdown_floor(self.optimization)

    @property
    def is_reference(self) -> bool:
        return self.optimization.name == REFERENCE

    @property
    def host_paced_shares(self) -> list[float]:
        """Where this is not empty, the case's time awaits calibration (``host_paced_shares``); on the CPU
        the host is the device, and its time is judged."""
        return host_paced_shares(self.stored, self.stored_calls) if self.device_type == "cuda" else []


def _accuracy(f: Figures) -> Check:
    tolerance = f.optimization.accuracy_tolerance
    return checks.accuracy_check(
        f.key,
        f.measurement.metric,
        reference=None if f.is_reference else f.reference.metric,
        tolerance=f.metric.default_tolerance if tolerance is None else tolerance,
        higher_is_better=f.metric.higher_is_better,
        floor=f.metric.floor,
        metric=f.metric.name,
        losses=f.measurement.losses,
        initial=f.measurement.initial_metric,
        min_gain=f.metric.min_gain,
    )


def _time(f: Figures) -> Check:
    found = checks.baseline_check(f.key, f.measurement.samples_ms, f.stored, strict=f.strict, floor=f.floor)
    waited = f.host_paced_shares
    if waited:
        return checks.host_paced(f.key, found, waited)
    during = f.measurement.clocks.get("during") or {}
    if f.device_type == "cuda":
        found = checks.paced_by_a_slower_host(f.key, found, during, f.stored)
    return checks.with_host(found, during, f.stored)


def host_paced_shares(stored: checks.Baseline | None, stored_calls: host_work_check.StoredCalls | None) -> list[float]:
    """The stored GPU busy shares below ``HOST_BOUND_BUSY`` of a baseline with fewer than
    ``CALIBRATION_RUNS`` runs of later sessions: where this is not empty, the case's time awaits
    calibration (``checks.host_paced``). A CPU's baselines keep no busy share."""
    if stored is None or stored_calls is None or len(stored.history_ms) >= checks.CALIBRATION_RUNS:
        return []
    return [busy for busy in stored_calls.gpu_busy_shares if busy < checks.HOST_BOUND_BUSY]


def _host_work(f: Figures) -> Check | None:
    m = f.measurement
    return host_work_check.host_work_check(
        f.key,
        m.host_calls,
        f.stored_calls,
        m.gpu_busy_share,
        floor=f.floor,
        step_calls=m.host_step_calls,
        fetch_calls=m.host_fetch_calls,
    )


def _work(f: Figures) -> Check | None:
    found = work_check.work_check(f.key, f.measurement.work[0] if f.measurement.work else None, f.stored_work)
    return None if found is None else versions.moved_with_upgrade(f.key, found, f.version_changes, f.upgrade_fails)


def _kernel_time(f: Figures) -> Check | None:
    now = f.measurement.work[0] if f.measurement.work else None
    if now is not None and f.optimization.ddp is not None:
        return Check(CheckName.KERNEL_TIME, None, f"{f.key}: {DATA_PARALLEL_KERNEL_TIME}")
    return work_check.kernel_time_check(f.key, now, f.stored_work, f.floor)


# a rank's compute kernels run beside communication kernels that wait, holding SMs, for the other ranks
# (research/evidence/h200x2-work-and-torchrun.md)
DATA_PARALLEL_KERNEL_TIME = (
    "kernel time not judged: a data-parallel rank's kernels share the GPU with communication kernels that "
    "wait for the other ranks, so their time moves with how far the ranks drift apart"
)


def _speedup(f: Figures) -> Check | None:
    if f.is_reference:
        return None
    noise = reference_checks.speedup_noise(f.stored, f.reference_stored, f.floor)
    return reference_checks.speedup_check(f.key, f.speedup, f.optimization.min_speedup.get(f.device_type), noise)


def _memory(f: Figures) -> Check | None:
    if f.is_reference:
        return None
    ratio = f.optimization.max_memory_ratio.get(f.device_type)
    return reference_checks.memory_check(f.key, f.measurement.peak_memory_bytes, f.reference.peak_memory_bytes, ratio)


def _clocks(f: Figures) -> Check | None:
    return checks.clock_check(f.key, f.measurement.clocks)


CHECKS: Mapping[CheckName, Callable[[Figures], Check | None]] = {
    CheckName.ACCURACY: _accuracy,
    CheckName.TIME: _time,
    CheckName.HOST_WORK: _host_work,
    CheckName.WORK: _work,
    CheckName.KERNEL_TIME: _kernel_time,
    CheckName.SPEEDUP: _speedup,
    CheckName.MEMORY: _memory,
    CheckName.CLOCKS: _clocks,
}


def judge(figures: Figures, *, update_baselines: bool) -> list[Check]:
    """Every check of the case, after the policy."""
    found = [check for run in CHECKS.values() if (check := run(figures)) is not None]
    if figures.workers_at_once > 1:
        found = [beside_other_workers(figures, check) for check in found]
    noted = set(NOTED_WHEN_RECORDING) if update_baselines else set()
    if any(check.name == CheckName.CLOCKS for check in found):
        noted |= NOTED_WHEN_THROTTLED
    return [as_note(check) if check.name in noted else check for check in found]


def beside_other_workers(f: Figures, check: Check) -> Check:
    """A time, speedup or kernel time measured while other pytest-xdist workers trained cases on the same
    cores and GPU: not judged, its figures kept in the message. A time without a stored baseline keeps its
    check: what is missing is the file's, not the clock's."""
    what = NOT_JUDGED_BESIDE_WORKERS.get(check.name)
    if what is None or check.passed is None or (check.name == CheckName.TIME and f.stored is None):
        return check
    figures = check.message.removeprefix(f"{f.key}: ")
    return Check(check.name, None, f"{f.key}: {what} not judged beside other workers ({figures})")


def workers_note(count: int) -> str:
    """The session's note where ``count`` pytest-xdist workers share this host's cores and GPU."""
    return (
        f"time, speedup and kernel time not judged: {count} pytest-xdist workers train cases at once on this "
        "host's cores and GPU, so each time counts the other workers' work too; accuracy, work and host calls "
        "are judged (--perf-gpu-per-worker gives each worker a GPU of its own)"
    )


def again_on(device_type: str) -> frozenset[CheckName]:
    """The checks whose failure a second measurement in a fresh process may undo on this device type."""
    return MEASURED_AGAIN_ON_GPU if device_type == "cuda" else MEASURED_AGAIN


def measured_again(found: Sequence[Check], *, has_baseline: bool, device_type: str) -> dict[str, str]:
    """The failed checks (name: message) that a second measurement in a fresh process may undo."""
    again = again_on(device_type)
    if not has_baseline:
        again -= {CheckName.TIME}
    return {check.name: check.message for check in found if check.passed is False and check.name in again}


def reference_again(suspect: Mapping[str, str]) -> bool:
    """Whether the reference is measured again with the case: where its speedup fell short."""
    return any(name in REFERENCE_AGAIN for name in suspect)


def standing(found: Sequence[Check], *, device_type: str) -> list[str]:
    """The failed checks that no second measurement may undo (its work, host work, memory; on the CPU its
    accuracy): where one fails the case, measuring it again would change nothing but the session's length."""
    again = again_on(device_type)
    return [check.name for check in found if check.passed is False and check.name not in again]


def why_not_again(
    *, standing: Sequence[str], used: int, budget: int, launched_data_parallel: bool, runs: int
) -> str | None:
    """Why a case that looks worse is not measured again (None: it is): it fails anyway on a check a second
    measurement cannot undo (``standing``), the session's budget of second measurements is spent
    (silently), a launched group's ranks train each case once, or its figures are already the median of
    several fresh runs (recording baselines)."""
    if standing:
        return f"not measured again: it fails on its {' and '.join(standing)}, which a second measurement cannot undo"
    if used >= budget:
        return ""
    if launched_data_parallel:
        return "not measured again: a launched group's ranks train each case once"
    if runs > 1:
        return f"not measured again: its figures are already the median of {runs} runs"
    return None


def keeps_baseline(found: Sequence[Check]) -> bool:
    """Whether a recorded case becomes a baseline: it kept its accuracy."""
    return not any(check.passed is False for check in found if check.name == CheckName.ACCURACY)


def time_judged(
    found: Sequence[Mapping[str, Any]] | Sequence[Check], *, passed_only: bool = False, calibrating: bool = False
) -> bool:
    """Whether a case's time was judged against a stored baseline (passed or failed; not a note), from
    its checks or from their run-document records; with ``passed_only``, judged and passed; with
    ``calibrating``, a time that awaits calibration counts as judged too."""
    for check in found:
        name, passed, awaits = (
            (check.get("name"), check.get("passed"), check.get("awaits_calibration", False))
            if isinstance(check, Mapping)
            else (check.name, check.passed, check.awaits_calibration)
        )
        if name != CheckName.TIME:
            continue
        if (passed is True if passed_only else passed is not None) or (calibrating and awaits):
            return True
    return False


def accepted(found: Sequence[Check], verdict: Verdict, *, calibrate: bool) -> bool:
    """Whether a case's median joins the history (--perf-history): it passed, its time judged against a
    stored baseline (not throttled, not failed); when calibrating (--perf-calibrate), any case whose time
    was judged, passed or failed, or awaits calibration."""
    if calibrate:
        return time_judged(found, calibrating=True)
    return time_judged(found, passed_only=True) and verdict == Verdict.PASS


def slowdown_floor(optimization: Optimization) -> float:
    return checks.DEFAULT_FLOOR if optimization.slowdown_floor is None else optimization.slowdown_floor


@dataclasses.dataclass(frozen=True)
class Detection:
    """What the gate catches of a case at its measured noise: the slowdown it fails (``slowdown``, its
    threshold: one that size is caught about half the time), the slowdown it catches nine times in ten at
    both measurements, the rise in host calls per iteration it fails where those are judged, and the rise
    in GPU kernel time per iteration it fails where that is judged."""

    slowdown: float | None = None
    slowdown_9_in_10: float | None = None
    host_work: float | None = None
    kernel_time: float | None = None


def detection(
    optimization: Optimization,
    stored: checks.Baseline | None,
    stored_calls: host_work_check.StoredCalls | None,
    measurement: Measurement,
    stored_work: Sequence[Mapping[str, Any]] = (),
    *,
    host_paced: bool = False,
) -> Detection:
    """The case's detection figures, each None where it cannot be told: the slowdowns without a baseline
    or where its time awaits calibration (``host_paced``), the nine-in-ten one without measured noise,
    the host work where it is not judged."""
    floor = slowdown_floor(optimization)
    calls = host_work_check.threshold(stored_calls, measurement.gpu_busy_share, floor)
    now = measurement.work[0] if measurement.work else None
    kernels = None  # judged where this run and the recorded ones timed kernels, but not data-parallel (_kernel_time)
    if now and now.get("kernel_ms") and any(run.get("kernel_ms") for run in stored_work) and optimization.ddp is None:
        kernels = work_check.kernel_time_allowed(now, stored_work, floor)
    if stored is None or host_paced:
        return Detection(host_work=calls, kernel_time=kernels)
    noise = stored.noise(floor)
    return Detection(noise.threshold, stats.reliably_caught(noise), calls, kernels)


def as_note(check: checks.Check) -> checks.Check:
    """A slower time reported, not failed (under --update-baselines, or on a throttled GPU)."""
    return dataclasses.replace(check, passed=None if check.passed is False else check.passed)


def with_first(check: checks.Check, first: str | None) -> checks.Check:
    """A check of the second measurement, saying what the first one found when that failed."""
    if first is None:
        return check
    return dataclasses.replace(check, message=f"{check.message} (first measurement: {first})")
