"""The checks of what a case declares against its workload's reference case of the same run: its
speedup (``min_speedup``) and its peak memory (``max_memory_ratio``).

Pure. A declared speedup is a claim, not a measured bound: a shortfall that the measured noise of the
case and its reference explains is not judged, and the verdict says so, never a silent pass.
"""

from __future__ import annotations

from trainperf.judge.checks import DEFAULT_FLOOR, Baseline, Check, CheckName

_SPEEDUP_NOISE = "the noise measured in its and its reference's runs"  # what the speedup's bound is


def speedup_check(case: str, speedup: float | None, minimum: float | None, noise: float | None = None) -> Check:
    """Speedup over the workload's reference case of the same run must reach the declared minimum.

    ``noise`` (``speedup_noise``) is how far the measured run-to-run noise of the case and its reference
    can lower their ratio: a shortfall within it is not judged (a note that says so), for a launch-bound
    case's speedup moves with the host as much as its time does. Without baselines (None) the minimum is
    strict."""
    if minimum is None:
        shown = "n/a" if speedup is None else f"{speedup:.2f}x"
        return Check(CheckName.SPEEDUP, None, f"{case}: speedup {shown} (no minimum declared for this device)")
    if speedup is None:
        return Check(
            CheckName.SPEEDUP, False, f"{case}: no reference time to compute the speedup (minimum {minimum:.2f}x)"
        )
    if speedup >= minimum:
        return Check(CheckName.SPEEDUP, True, f"{case}: speedup {speedup:.2f}x (minimum {minimum:.2f}x)")
    short = f"{case}: speedup {speedup:.2f}x over reference is below the minimum {minimum:.2f}x"
    if noise is None:
        return Check(CheckName.SPEEDUP, False, short)
    shortfall = minimum / speedup - 1
    if shortfall <= noise:
        return Check(
            CheckName.SPEEDUP,
            None,
            f"{case}: not judged: speedup {speedup:.2f}x is below the minimum {minimum:.2f}x by {shortfall:.1%}, "
            f"within {noise:.1%}, {_SPEEDUP_NOISE}",
            noted=True,
        )
    return Check(CheckName.SPEEDUP, False, f"{short} by {shortfall:.1%}, beyond {noise:.1%}, {_SPEEDUP_NOISE}")


def speedup_noise(case: Baseline | None, reference: Baseline | None, floor: float = DEFAULT_FLOOR) -> float | None:
    """How far unchanged code can lower a case's speedup, ``(1 + case) * (1 + reference) - 1``: its time
    rising by its threshold while its reference's falls by a factor of its own; None without both."""
    if case is None or reference is None:
        return None
    return (1 + case.noise(floor).threshold) * (1 + reference.noise().threshold) - 1


def memory_check(case: str, peak_bytes: int | None, reference_bytes: int | None, max_ratio: float | None) -> Check:
    """For memory optimizations: peak memory at most ``max_ratio`` of the reference case's."""
    if max_ratio is None:
        return Check(CheckName.MEMORY, None, f"{case}: no memory target declared")
    if peak_bytes is None or reference_bytes is None:
        return Check(CheckName.MEMORY, None, f"{case}: peak memory not measured on this device")
    ratio = peak_bytes / reference_bytes
    figures = f"peak {peak_bytes / 2**20:.1f} MiB = {ratio:.2f}x reference {reference_bytes / 2**20:.1f} MiB"
    if ratio > max_ratio:
        return Check(CheckName.MEMORY, False, f"{case}: {figures}, above the maximum {max_ratio:.2f}x")
    return Check(CheckName.MEMORY, True, f"{case}: {figures} (maximum {max_ratio:.2f}x)")
