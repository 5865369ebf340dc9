"""The work checks: a case must not ask the machine for more work per iteration than its recorded runs
did (``measure/work.py``): more ATen ops, more synchronizations with the device, more copies between
host and device, more kernel launches, more FLOPs in the forward and backward pass (the work check), or
more GPU kernel time (the kernel-time check).

Counts hold still where the code does: the same code dispatches the same ops on a fast or a slow host,
so the check needs no allowance for the host's noise. Where the counted iterations of a run, or the
recorded runs, differ (data-dependent paths, batches arriving from worker processes), that spread is
the allowance. Kernel time is not a count: it is judged at the larger of the floor and its own measured
spread (between the recorded runs, and within each run's counted iterations), after taking out the
slowdown of a GPU whose SM clock ran below the recorded one. A failure names what rose, as
``+600 aten::add`` or ``+1.35 ms in sleep_kernel``. Synchronizations are judged against runs of the
same counter only (``counter``: the first read one more an iteration, the profiler's own). Pure: no
torch, no pytest.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from trainperf.judge.checks import DEFAULT_FLOOR, Check, CheckName

# the counts judged, with the words a message uses for them
COUNTS = {"ops": "ATen ops", "syncs": "synchronizations", "copies": "host-device copies", "kernels": "kernels"}
# what torch.compile did, counted over the case's run (``measure/compile_counts.py``), with their words
COMPILE_COUNTS = {"graphs": "compiled graphs", "graph_breaks": "graph breaks", "recompiles": "recompilations"}
NAME_SHOWN = 60  # characters of a kernel's name in a message: templated names run to hundreds


def work_check(case: str, now: Mapping[str, Any] | None, recorded: Sequence[Mapping[str, Any]]) -> Check | None:
    """The case's counts per iteration against its recorded runs' (None where this run counted none)."""
    if now is None:
        return None
    counted = _counted_text(now)
    if not recorded:
        return Check(CheckName.WORK, None, f"{case}: {counted}; none counted where recorded: record again")
    judged = {key: words for key, words in COUNTS.items() if key != "syncs" or _same_counter(now, recorded)}
    risen = [text for key, words in judged.items() if (text := _rise(key, words, now, recorded)) is not None]
    more_flops = _flops_rise(now, recorded)
    compiled = [text for key, words in COMPILE_COUNTS.items() if (text := _rise(key, words, now, recorded)) is not None]
    if risen or more_flops or compiled:
        moved = [
            *rises(now.get("ops_by_name") or {}, recorded[0].get("ops_by_name") or {}),
            *rises(_launches(now), _launches(recorded[0])),
        ]
        what = f" ({', '.join(moved)} per iteration)" if moved else ""
        counts = "; ".join(risen) + what if risen else ""
        flops = f"{more_flops} ({'; '.join(flop_rises(now, recorded[0]))})" if more_flops else ""
        compile_text = "; ".join(compiled) + compile_changes(now, recorded[0]) if compiled else ""
        text = "; ".join(part for part in (counts, flops, compile_text) if part)
        return Check(CheckName.WORK, False, f"{case}: more work per iteration than recorded: {text}")
    if len(judged) < len(COUNTS):
        counted += f"; {COUNTS['syncs']} not judged: recorded by an earlier counter, record again to judge them"
    if now.get("flops") and not any(run.get("flops") for run in recorded):
        counted += "; FLOPs not judged: none recorded, record again to judge them"
    return Check(CheckName.WORK, True, f"{case}: {counted}, as recorded")


def compile_changes(now: Mapping[str, Any], stored: Mapping[str, Any]) -> str:
    """' (a graph break at model.py:42 in forward: Failed to trace builtin operator...; a guard failed:
    ...)': the break sites and reasons, and the failed guards, that the recording did not have."""
    sites = [site for site in now.get("break_sites") or [] if site not in (stored.get("break_sites") or [])]
    reasons = [why for why in now.get("break_reasons") or [] if why not in (stored.get("break_reasons") or [])]
    guards = [why for why in now.get("recompile_reasons") or [] if why not in (stored.get("recompile_reasons") or [])]
    found = [f"a graph break at {site}" for site in sites[:2]]
    if reasons:
        found = [f"{found[0] if found else 'a graph break'}: {reasons[0]}", *found[1:]]
    found += [f"a guard failed: {guard}" for guard in guards[:1]]
    return f" ({'; '.join(found)})" if found else ""


def _flops_rise(now: Mapping[str, Any], recorded: Sequence[Mapping[str, Any]]) -> str | None:
    """'FLOPs 9.437e+06 against 4.194e+06 recorded (+125.0%)', or None where they did not rise beyond the
    recorded runs' spread (none: the same model on the same batch counts the same FLOPs anywhere)."""
    stored = [run["flops"] for run in recorded if run.get("flops")]
    if not now.get("flops") or not stored:
        return None
    if now["flops"] - max(stored) <= max(stored) - min(stored):
        return None
    return f"FLOPs {now['flops']:.4g} against {max(stored):.4g} recorded ({now['flops'] / max(stored) - 1:+.1%})"


def flop_rises(now: Mapping[str, Any], stored: Mapping[str, Any], shown: int = 2) -> list[str]:
    """The ops whose FLOPs rose most, with the shapes of their largest call where those changed, as
    '+125% FLOPs in aten.mm: shapes (256, 64)x(64, 64) -> (256, 96)x(96, 96)'."""
    before, shapes_before = stored.get("flops_by_name") or {}, stored.get("flop_shapes") or {}
    shapes_now = now.get("flop_shapes") or {}
    risen = sorted(((n - before.get(op, 0), op) for op, n in (now.get("flops_by_name") or {}).items()), reverse=True)
    shown_rises = []
    for delta, op in risen[:shown]:
        if delta <= 0:
            continue
        text = f"+{delta / before[op]:.0%} FLOPs in {op}" if before.get(op) else f"new FLOPs in {op}"
        old, new = shapes_before.get(op), shapes_now.get(op)
        if new and old != new:
            text += f": shapes {old} -> {new}" if old else f": shapes {new}"
        shown_rises.append(text)
    return shown_rises


def _same_counter(now: Mapping[str, Any], recorded: Sequence[Mapping[str, Any]]) -> bool:
    return all(run.get("counter", 1) == now.get("counter", 1) for run in recorded)


def kernel_time_check(
    case: str, now: Mapping[str, Any] | None, recorded: Sequence[Mapping[str, Any]], floor: float = DEFAULT_FLOOR
) -> Check | None:
    """The case's GPU kernel time per iteration against its recorded runs' (None where either has none:
    off the GPU, or recorded before kernels were counted)."""
    stored = [run["kernel_ms"] for run in recorded if run.get("kernel_ms")]
    if now is None or not now.get("kernel_ms") or not stored:
        return None
    center = statistics.median(stored)
    clocks = [run["sm_clock_mhz"] for run in recorded if run.get("sm_clock_mhz")]
    clock_now = now.get("sm_clock_mhz")
    scale = min(1.0, clock_now / statistics.fmean(clocks)) if clocks and clock_now else 1.0
    judged = now["kernel_ms"] * scale
    allowed = kernel_time_allowed(now, recorded, floor)
    rise = judged / center - 1
    at_clock = f" at the recorded SM clock ({now['kernel_ms']:.2f} ms at {clock_now:.0f} MHz)" if scale < 1 else ""
    figures = (
        f"kernel time {judged:.2f} ms{at_clock} against {center:.2f} ms recorded ({rise:+.1%}, allowed +{allowed:.1%})"
    )
    if rise <= allowed:
        return Check(CheckName.KERNEL_TIME, True, f"{case}: {figures}")
    moved = kernel_time_rises(now, recorded[0])
    what = f" ({', '.join(moved)} per iteration)" if moved else ""
    return Check(CheckName.KERNEL_TIME, False, f"{case}: {figures}{what}")


def _rise(key: str, words: str, now: Mapping[str, Any], recorded: Sequence[Mapping[str, Any]]) -> str | None:
    """'ATen ops 1758 against 1157 recorded (+601, allowed +0)', or None where the count did not rise
    beyond the spread of the recorded runs and of the counted iterations."""
    stored = [run[key] for run in recorded if run.get(key) is not None]
    if now.get(key) is None or not stored:
        return None
    spreads = [max(stored) - min(stored), *(run.get(f"{key}_spread") or 0 for run in [*recorded, now])]
    allowed = max(spreads)
    if now[key] - max(stored) <= allowed:
        return None
    return f"{words} {now[key]} against {max(stored)} recorded (+{now[key] - max(stored)}, allowed +{allowed})"


def kernel_time_allowed(now: Mapping[str, Any], recorded: Sequence[Mapping[str, Any]], floor: float) -> float:
    """The rise in kernel time judged a change of the code: the floor, or the measured spread where it is
    wider, of the recorded runs' kernel times and of each run's counted iterations, over their median."""
    stored = [float(run["kernel_ms"]) for run in recorded if run.get("kernel_ms")]
    center = statistics.median(stored)
    spreads = [max(stored) - min(stored), *(float(run.get("kernel_ms_spread") or 0) for run in [*recorded, now])]
    return max(floor, max(spreads) / center)


def _launches(work: Mapping[str, Any]) -> dict[str, int]:
    return {name: int(launches) for name, (launches, _) in (work.get("kernels_by_name") or {}).items()}


def kernel_time_rises(now: Mapping[str, Any], stored: Mapping[str, Any], shown: int = 2) -> list[str]:
    """The kernels whose time rose most, as '+1.35 ms in sleep_kernel'."""
    before = {name: ms for name, (_, ms) in (stored.get("kernels_by_name") or {}).items()}
    risen = sorted(((ms - before.get(name, 0.0), name) for name, (_, ms) in (now.get("kernels_by_name") or {}).items()))
    return [f"+{delta:.2f} ms in {_short(name)}" for delta, name in reversed(risen[-shown:]) if delta >= 0.005]


def _counted_text(work: Mapping[str, Any]) -> str:
    parts = [f"{work[key]} {words}" for key, words in COUNTS.items() if work.get(key) is not None]
    if work.get("flops"):
        parts.append(f"{work['flops']:.4g} FLOPs")
    parts += [f"{work[key]} {words}" for key, words in COMPILE_COUNTS.items() if work.get(key) is not None]
    if work.get("kernel_ms") is not None:
        parts.append(f"{work['kernel_ms']:.2f} ms in kernels")
    return ", ".join(parts) + " per iteration"


def rises(now: Mapping[str, int], stored: Mapping[str, int], shown: int = 3) -> list[str]:
    """The names whose count rose most, as '+600 aten::add': what a failure says moved."""
    risen = sorted(((n - stored.get(name, 0), name) for name, n in now.items()), reverse=True)
    return [f"+{delta} {_short(name)}" for delta, name in risen[:shown] if delta > 0]


def _short(name: str) -> str:
    return name if len(name) <= NAME_SHOWN else name[: NAME_SHOWN - 3] + "..."
