"""The verdict policy of one case: which gate checks run and which of them only note.

Pure, beside ``gate.py``: a case is judged on accuracy and on time against its stored baseline, and
where its GPU waits for the host on its host work (``host_work_gate.py``); a case other than the
reference also on its speedup (a shortfall within the measured noise of the case and its reference
passes) and its peak memory. Under ``--update-baselines`` a slower time or more host work is reported,
not failed; on a throttled GPU neither the time nor the speedup is judged.
"""

from __future__ import annotations

import dataclasses

from trainperf import gate, host_work_gate, reference_checks, stats
from trainperf.case import REFERENCE, Metric, Optimization
from trainperf.measurement import Measurement


def judge(
    key: str,
    optimization: Optimization,
    metric: Metric,
    measurement: Measurement,
    reference: Measurement,
    speedup: float,
    stored: gate.Baseline | None,
    stored_calls: host_work_gate.StoredCalls | None,
    *,
    reference_stored: gate.Baseline | None = None,
    device_type: str,
    strict: bool,
    update_baselines: bool,
) -> list[gate.Check]:
    """Every check of the case, after the policy."""
    is_reference = optimization.name == REFERENCE
    tolerance = optimization.accuracy_tolerance
    checks = [
        gate.accuracy_check(
            key,
            measurement.metric,
            reference=None if is_reference else reference.metric,
            tolerance=metric.default_tolerance if tolerance is None else tolerance,
            higher_is_better=metric.higher_is_better,
            floor=metric.floor,
            metric=metric.name,
            losses=measurement.losses,
            initial=measurement.initial_metric,
            min_gain=metric.min_gain,
        ),
        gate.with_host(
            gate.baseline_check(
                key,
                measurement.samples_ms,
                stored,
                strict=strict and not update_baselines,
                floor=slowdown_floor(optimization),
            ),
            measurement.clocks.get("during") or {},
            stored,
        ),
    ]
    calls = host_work_gate.host_work_check(
        key,
        measurement.host_calls,
        stored_calls,
        measurement.gpu_busy_share,
        floor=slowdown_floor(optimization),
        step_calls=measurement.host_step_calls,
        fetch_calls=measurement.host_fetch_calls,
        torch_calls=measurement.host_torch_calls,
    )
    checks += [] if calls is None else [calls]
    if not is_reference:
        noise = reference_checks.speedup_noise(stored, reference_stored, slowdown_floor(optimization))
        checks.append(reference_checks.speedup_check(key, speedup, optimization.min_speedup.get(device_type), noise))
        ratio = optimization.max_memory_ratio.get(device_type)
        checks.append(
            reference_checks.memory_check(key, measurement.peak_memory_bytes, reference.peak_memory_bytes, ratio)
        )
    if update_baselines:
        checks = [as_note(c) if c.name in ("baseline", host_work_gate.NAME) else c for c in checks]
    unreliable = gate.clock_check(key, measurement.clocks)
    if unreliable is not None:  # a throttled GPU: its times are noted, not judged
        checks = [as_note(c) if c.name in ("baseline", "speedup") else c for c in checks] + [unreliable]
    return checks


def slowdown_floor(optimization: Optimization) -> float:
    return gate.DEFAULT_FLOOR if optimization.slowdown_floor is None else optimization.slowdown_floor


@dataclasses.dataclass(frozen=True)
class Detection:
    """What the gate catches of a case at its measured noise: the slowdown it fails (``slowdown``, its
    threshold: one that size is caught about half the time), the slowdown it catches nine times in ten at
    both measurements, and the rise in host calls per iteration it fails where those are judged."""

    slowdown: float | None = None
    slowdown_9_in_10: float | None = None
    host_work: float | None = None


def detection(
    optimization: Optimization,
    stored: gate.Baseline | None,
    stored_calls: host_work_gate.StoredCalls | None,
    measurement: Measurement,
) -> Detection:
    """The case's detection figures, each None where it cannot be told: the slowdowns without a baseline,
    the nine-in-ten one without measured noise, the host work where it is not judged."""
    floor = slowdown_floor(optimization)
    calls = host_work_gate.threshold(stored_calls, measurement.gpu_busy_share, floor)
    if stored is None:
        return Detection(host_work=calls)
    noise = stored.noise(floor)
    return Detection(noise.threshold, stats.reliably_caught(noise), calls)


def as_note(check: gate.Check) -> gate.Check:
    """A slower time reported, not failed (under --update-baselines, or on a throttled GPU)."""
    return dataclasses.replace(check, passed=None if check.passed is False else check.passed)


def with_first(check: gate.Check, first: str | None) -> gate.Check:
    """A check of the second measurement, saying what the first one found when that failed."""
    if first is None:
        return check
    return dataclasses.replace(check, message=f"{check.message} (first measurement: {first})")
