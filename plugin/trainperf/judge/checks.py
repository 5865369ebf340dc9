"""Verdicts of one case: accuracy, time against the stored baseline, speedup, memory.

Pure functions from figures to ``Check`` results; no torch, no pytest. A failing check's message
names the case, the figures and the threshold, so that it can be shown to the user as it is.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from trainperf.judge import stats

# The smallest slowdown the gate judges, whatever the measured noise: above the run-to-run spread of
# GPU-bound cases and below the 5% a gate must catch (research/evidence/h100-trust.md). A case may declare a
# larger floor, with its reason, up to case.MAX_SLOWDOWN_FLOOR.
DEFAULT_FLOOR = 0.03
# A baseline of fewer than stats.MIN_RUNS runs has no measured noise: it judges only slowdowns this large,
# and only when the iterations tell them apart (Mann-Whitney U, p < DEFAULT_ALPHA).
FALLBACK_THRESHOLD = 0.10
DEFAULT_ALPHA = 0.01
# GPU busy share below which a case waits for the host: it parts GPU-bound cases from launch-bound ones
# (research/evidence/h200-calibration.md); it only words a failure's hint
HOST_BOUND_BUSY = 0.9
# a host this many times slower at issuing an op than the recorded one, whose GPU waits for it, sets a
# case's pace (``paced_by_a_slower_host``); fixed before the A/A runs that test it
SLOWER_HOST = 1.25
# A run whose iterations spread this many times as widely as the recorded runs' (and beyond the floor)
# was disturbed while it ran, as by a host stall (research/evidence/h200-examples-gate.md); it only words a
# failure's hint
DISTURBED_SPREAD_FACTOR = 5.0
# Runs of later sessions (--perf-calibrate) whose medians a host-paced case's time needs in its baseline
# before it is judged: as many as a recording makes
CALIBRATION_RUNS = stats.MIN_RUNS
# NVML's clock event reason of a GPU held to its power limit: its clock then depends on the chip
POWER_CAP = "software power cap"
# NVML clock event reasons that slow every kernel: a time measured under them says little about the code
UNRELIABLE_THROTTLES = ("hardware slowdown", "software thermal slowdown", "hardware thermal slowdown",
                        "hardware power brake")  # fmt: skip


class CheckName(enum.StrEnum):
    """Every check a case is judged on, by the name its reports and run documents give it."""

    ACCURACY = "accuracy"  # the held-out metric against the reference case of the same run
    TIME = "baseline"  # the time per iteration against the stored baseline
    HOST_WORK = "host work"  # the host's calls per iteration against the stored ones
    WORK = "work"  # the ATen ops, synchronizations, copies and kernels per iteration against the recorded
    KERNEL_TIME = "kernel time"  # the GPU's kernel time per iteration against the recorded
    SPEEDUP = "speedup"  # over the reference case of the same run, against the declared minimum
    MEMORY = "memory"  # peak memory over the reference's, against the declared maximum
    CLOCKS = "clocks"  # a note: the GPU throttled while the case ran (the verdict is then "unreliable")


@dataclass(frozen=True)
class Check:
    """Outcome of one gate: ``passed`` is None when the check could not be made (a note). ``noted``: a
    passed check the terminal still shows, as a speedup short of its minimum within the measured noise.
    ``awaits_calibration``: a time measured against its baseline but not judged (``host_paced``), which
    ``--perf-calibrate`` still adds to the history."""

    name: CheckName
    passed: bool | None
    message: str
    noted: bool = False
    awaits_calibration: bool = False  # a time not judged until runs of later sessions measure its noise


def accuracy_check(
    case: str,
    value: float,
    *,
    reference: float | None,
    tolerance: float,
    higher_is_better: bool,
    floor: float | None = None,
    metric: str = "accuracy",
    losses: Sequence[float] = (),
    initial: float | None = None,
    min_gain: float | None = None,
) -> Check:
    """The training loss must stay finite; the case's held-out metric must be finite, past the
    workload's floor, better than the untrained model's ``initial`` value by ``min_gain`` (a fraction
    of it), and within ``tolerance`` (absolute) of the reference case of the same run."""
    diverged = next((i for i, loss in enumerate(losses) if not math.isfinite(loss)), None)
    if diverged is not None:
        message = f"{case}: training loss became {losses[diverged]} at iteration {diverged} (diverged)"
        return Check(CheckName.ACCURACY, False, message)
    if not math.isfinite(value):
        return Check(CheckName.ACCURACY, False, f"{case}: {metric} is {value} (diverged)")
    if floor is not None:
        beyond = value >= floor if higher_is_better else value <= floor
        if not beyond:
            side = "at least" if higher_is_better else "at most"
            return Check(CheckName.ACCURACY, False, f"{case}: {metric} {value:.4f} must be {side} {floor:.4f}")
    if min_gain is not None and initial is not None:
        gain = (value - initial if higher_is_better else initial - value) / abs(initial)
        if gain < min_gain:
            return Check(
                CheckName.ACCURACY,
                False,
                f"{case}: {metric} {value:.4f} improved on the untrained {initial:.4f} by {gain:.1%}, "
                f"less than the required {min_gain:.0%}",
            )
    if reference is None:
        return Check(CheckName.ACCURACY, None, f"{case}: no reference {metric} to compare with")
    loss = reference - value if higher_is_better else value - reference
    if loss > tolerance:
        return Check(
            CheckName.ACCURACY,
            False,
            f"{case}: {metric} {value:.4f} vs reference {reference:.4f} "
            f"({-loss:+.4f}) is beyond the tolerance of {tolerance:.4f}",
        )
    return Check(
        CheckName.ACCURACY, True, f"{case}: {metric} {value:.4f} (reference {reference:.4f}, tolerance {tolerance:.4f})"
    )


@dataclass(frozen=True)
class Baseline:
    """A case's stored times: every timed iteration and the median of each independent run recorded,
    the medians of runs accepted since (``--perf-history``), how fast the recording host issued an op
    and the mean SM clock the recording ran at."""

    samples_ms: Sequence[float]
    run_medians_ms: Sequence[float]
    history_ms: Sequence[float] = ()
    host_dispatch_us: float | None = None
    sm_clock_mhz: float | None = None

    @functools.cached_property
    def iteration_spread(self) -> float:
        """The recorded runs' own spread (``stats.iteration_spread``), computed once per baseline."""
        return stats.iteration_spread(self.samples_ms, len(self.run_medians_ms))

    def noise(self, floor: float = DEFAULT_FLOOR) -> stats.RunNoise:
        return stats.run_noise(self.run_medians_ms, floor, FALLBACK_THRESHOLD, self.iteration_spread, self.history_ms)


def baseline_check(
    case: str,
    current: Sequence[float],
    baseline: Baseline | None,
    *,
    strict: bool,
    floor: float = DEFAULT_FLOOR,
    alpha: float = DEFAULT_ALPHA,
) -> Check:
    """This run's median must not exceed the stored runs' by more than their measured noise allows
    (``stats.RunNoise.threshold``, at least ``floor``). Without measured noise (a baseline of fewer than
    ``stats.MIN_RUNS`` runs) only a slowdown beyond ``FALLBACK_THRESHOLD`` that Mann-Whitney U confirms
    over the iterations (p < alpha) fails."""
    if baseline is None:
        message = f"{case}: no stored baseline for this device"
        if strict:
            return Check(CheckName.TIME, False, message + " (--perf-strict); record one with --update-baselines")
        return Check(CheckName.TIME, None, message + "; record one with --update-baselines")
    noise = baseline.noise(floor)
    now = stats.summarize(current).median
    delta = stats.relative_change(now, noise.center_ms)
    figures = f"median {now:.3f} ms vs baseline {noise.center_ms:.3f} ms ({delta:+.1%})"
    if noise.measured:
        allowance = f"{_noise_text(noise, len(baseline.history_ms))}: a slowdown counts beyond {noise.threshold:.1%}"
        allowance += _center_text(len(baseline.run_medians_ms))
        slower = delta > noise.threshold
    else:
        p_value = stats.slower_p_value(current, baseline.samples_ms)
        allowance = (
            f"p={p_value:.2g}; the baseline holds {noise.runs} run, its noise unmeasured: a slowdown counts beyond "
            f"{noise.threshold:.0%} (re-record with --update-baselines to measure it)"
        )
        slower = delta > noise.threshold and p_value < alpha
    if slower:
        return Check(
            CheckName.TIME,
            False,
            f"{case}: slower than baseline: {figures}; {allowance}{_disturbed_text(current, baseline, floor)}",
        )
    return Check(CheckName.TIME, True, f"{case}: {figures}; {allowance}")


def _disturbed_text(current: Sequence[float], baseline: Baseline, floor: float) -> str:
    """A note where this run's iterations spread far more widely than the recorded runs' did: something
    stalled while it ran, so its median says less about the code than a steady run's would."""
    now = stats.iteration_spread(current, 1)
    if now <= max(floor, DISTURBED_SPREAD_FACTOR * baseline.iteration_spread):
        return ""
    return (
        f"; its iterations spread {now:.1%} in this run against {baseline.iteration_spread:.1%} where recorded: "
        "something stalled while it ran (another process, the host, or the code itself)"
    )


def with_host(check: Check, during: Mapping[str, Any], stored: Baseline | None) -> Check:
    """A failed time check with the machine's figures added: a host that issues ops slower, or whose
    cores other guests (steal) or other processes hold, slows launch-bound cases (the GPU waits, its
    busy share below 100%) with the same code; a GPU at its power cap runs as fast as its clock there,
    which differs from chip to chip. Where a launch-bound case's noise comes from one recording session
    alone, the message says how to measure it wider."""
    now_us = during.get("host_dispatch_us")
    if check.passed is not False or now_us is None:
        return check
    text = f"this host issued an op in {now_us:.2f} µs"
    recorded_us = None if stored is None else stored.host_dispatch_us
    if recorded_us:
        text += f", {recorded_us:.2f} µs where recorded ({now_us / recorded_us - 1:+.0%})"
    thread_steal, steal = during.get("thread_steal_share"), during.get("host_steal_share")
    if thread_steal is not None and steal is not None:
        text += (
            f"; the hypervisor gave {thread_steal:.1%} of the timing thread's cores to other guests "
            f"({steal:.1%} of all cores)"
        )
    others = during.get("other_processes_share")
    if others is not None:
        text += f"; processes the case did not start used {others:.1%} of this machine's cores"
    busy = during.get("gpu_busy_share")
    if busy is not None:
        text += f"; the GPU was busy {busy:.0%} of the time"
        if busy < HOST_BOUND_BUSY and stored is not None and not stored.history_ms:
            text += (
                "; this case waits for the host, whose speed differs between machines and nights more than "
                "within the one session its noise was measured in: run the recorded code on a few of them "
                "with --perf-calibrate"
            )
    text += _power_cap_text(during, stored)
    return dataclasses.replace(check, message=f"{check.message}; {text}")


def paced_by_a_slower_host(case: str, check: Check, during: Mapping[str, Any], stored: Baseline | None) -> Check:
    """A failed time of a case whose GPU waited for the host in this run (busy below ``HOST_BOUND_BUSY``),
    on a host that issued ops at least ``SLOWER_HOST`` times slower than the one it was recorded on: not
    judged. The op time is measured before the case runs, apart from its code, and such a host sets the
    case's pace: unchanged code failed its time there with its work and kernel time as recorded
    (research/evidence/h200-ncu-cost.md). Its work, kernel time and host calls are judged instead; on a
    host about as fast as the recorded one, a slower step stays a failure."""
    now_us, busy = during.get("host_dispatch_us"), during.get("gpu_busy_share")
    recorded_us = None if stored is None else stored.host_dispatch_us
    if check.passed is not False or now_us is None or busy is None or not recorded_us:
        return check
    if busy >= HOST_BOUND_BUSY or now_us < SLOWER_HOST * recorded_us:
        return check
    figures = check.message.removeprefix(f"{case}: ")
    message = (
        f"{case}: time not judged: this host issued an op in {now_us:.2f} µs, {recorded_us:.2f} µs where recorded "
        f"({now_us / recorded_us - 1:+.0%}), and the GPU waited for it (busy {busy:.0%}): the host set its pace; "
        f"judged on its work, kernel time and host calls instead ({figures})"
    )
    return Check(CheckName.TIME, None, message)


def host_paced(case: str, check: Check, busy_shares: Sequence[float]) -> Check:
    """The time of a case whose GPU waited for the host where recorded, against a baseline whose noise
    one recording session measured: not judged. Such a case runs at the pace of the host, which moves
    between machines and nights by more than one session's runs show, so its threshold there would fail
    unchanged code (research/evidence/h200-counter-2-recording.md); its work, kernel time and host calls
    are judged instead. Runs of later sessions under ``--perf-calibrate`` measure its noise wider."""
    if check.passed is None:
        return check
    busy = min(busy_shares)
    figures = check.message.removeprefix(f"{case}: ")
    message = (
        f"{case}: time not judged: its GPU waited for the host where recorded (busy {busy:.0%}), whose pace "
        f"moves between machines beyond the noise of one recording session; judged on its work instead until "
        f"its baseline holds {CALIBRATION_RUNS} runs of other sessions (--perf-calibrate) ({figures})"
    )
    return Check(CheckName.TIME, None, message, awaits_calibration=True)


def _power_cap_text(during: Mapping[str, Any], stored: Baseline | None) -> str:
    """'; at its power cap the GPU's SM clock averaged 1606 MHz, 1632 MHz where recorded (-1.6%)', where
    the GPU ran at its power cap while the case was timed; nothing otherwise."""
    now_mhz = during.get("mean_sm_clock_mhz")
    if now_mhz is None or POWER_CAP not in during.get("throttle", []):
        return ""
    text = f"; at its power cap the GPU's SM clock averaged {now_mhz:.0f} MHz"
    recorded_mhz = None if stored is None else stored.sm_clock_mhz
    if recorded_mhz:
        text += f", {recorded_mhz:.0f} MHz where recorded ({now_mhz / recorded_mhz - 1:+.1%})"
    return text


def _center_text(recorded: int) -> str:
    """A note where the baseline's center stands on fewer recorded runs than a recording makes (files
    written before baselines kept three): later runs widen the noise but never move that center."""
    if recorded >= stats.MIN_RUNS:
        return ""
    return (
        f"; the baseline's center is {recorded} recorded run{'s' * (recorded > 1)}: "
        f"re-record it with --update-baselines to center it on {stats.MIN_RUNS}"
    )


def _noise_text(noise: stats.RunNoise, later: int) -> str:
    """'noise 2.4% over 3 runs', naming the runs accepted later and the iterations' spread where it set
    the threshold."""
    assert noise.spread is not None
    runs = f"{noise.runs} runs" + (f" ({later} accepted since the recording)" if later else "")
    if noise.iteration_spread > noise.spread:
        return f"noise {noise.iteration_spread:.1%} within a run (run medians {noise.spread:.1%} over {runs})"
    return f"noise {noise.spread:.1%} over {runs}"


def failures(checks: Sequence[Check]) -> list[Check]:
    return [check for check in checks if check.passed is False]


def unreliable_throttles(clocks: Mapping[str, Any]) -> list[str]:
    """The slowing throttles among the clock readings (``before``, ``during``, ``after``) of a case."""
    seen = [text for reading in clocks.values() if reading for text in reading.get("throttle", [])]
    return [text for text in UNRELIABLE_THROTTLES if text in seen]


def clock_check(case: str, clocks: Mapping[str, Any]) -> Check | None:
    """A note when the GPU throttled while the case ran: its time is not judged, the verdict says so."""
    throttles = unreliable_throttles(clocks)
    if not throttles:
        return None
    during = clocks.get("during") or {}
    lowest = during.get("min_sm_clock_mhz")
    clock = "" if lowest is None else f", SM clock down to {lowest} MHz"
    return Check(
        CheckName.CLOCKS, None, f"{case}: timing unreliable: {', '.join(throttles)}{clock}; its time was not judged"
    )
