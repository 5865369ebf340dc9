"""Whether a recording's runs may become a baseline. Runs whose medians depart from each other far
beyond what their own iterations' spread explains (a run slowed by a competing process, a stall) would
set a baseline that passes anything: such a run is measured again, and where the runs still disagree the
case is refused. A host busy with other processes while it recorded is named. Pure: no torch, no pytest.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any

# A run departs from the recording's median by more than this share, and more than WILD_SPREADS times
# the iterations' own spread within a run: fresh processes differ by a few percent, a disturbed run by
# multiples
WILD_MIN = 0.5
WILD_SPREADS = 5.0
# the share of the machine's CPU time that other processes used, or the hypervisor stole, while a run
# was timed, from which a recording is said to be taken on a busy host
BUSY_OTHERS = 0.25
BUSY_STEAL = 0.05


def tolerance(spreads: Sequence[float]) -> float:
    """How far a run's median may depart from the recording's median, and how widely a run's iterations
    may spread: ``WILD_MIN``, or ``WILD_SPREADS`` times the case's own spread where that is wider. The
    case's own is its quietest run's: a run disturbed throughout spreads as widely as the disturbance."""
    return max(WILD_MIN, WILD_SPREADS * min(spreads, default=0.0))


def wild_runs(medians: Sequence[float], spreads: Sequence[float]) -> list[int]:
    """The runs (indexes) whose median departs from the median of all the runs, or whose iterations
    spread, beyond ``tolerance``."""
    center = statistics.median(medians)
    allowed = tolerance(spreads)
    return [i for i, (median, spread) in enumerate(zip(medians, spreads, strict=True))
            if abs(median / center - 1) > allowed or spread > allowed]  # fmt: skip


def refusal(case: str, medians: Sequence[float], again: Mapping[int, float], spreads: Sequence[float]) -> str:
    """'w/c: not recorded: its runs disagree: ...': the runs, those measured again, and the bound."""
    runs = ", ".join(f"{median:.3f}" for median in medians)
    redone = ", ".join(f"{again[i]:.3f}" for i in sorted(again))
    return (
        f"{case}: not recorded: its runs disagree: {runs} ms, measured again {redone} ms, beyond "
        f"{tolerance(spreads):.0%} of their median, more than the spread of the quietest run's iterations "
        f"({min(spreads, default=0.0):.1%}) explains; record it again on a quiet host"
    )


def remeasured_note(case: str, medians: Sequence[float], again: Mapping[int, float]) -> str:
    """'w/c: run 2 of 3 measured again: 613.860 -> 15.020 ms, far from the others'."""
    redone = "; ".join(f"run {i + 1} of {len(medians)}: {medians[i]:.3f} -> {again[i]:.3f} ms" for i in sorted(again))
    return f"{case}: measured again, far from the recording's other runs ({redone})"


def busy_host(during: Sequence[Mapping[str, Any]]) -> str | None:
    """'other processes used 45% of the host's CPU time' (and its steal) where a recorded run's host was
    busy; None where every run's was quiet or unmeasured."""
    others = max((d.get("other_processes_share") or 0.0 for d in during), default=0.0)
    steal = max((d.get("host_steal_share") or 0.0 for d in during), default=0.0)
    found = []
    if others >= BUSY_OTHERS:
        found.append(f"other processes used {others:.0%} of its CPU time")
    if steal >= BUSY_STEAL:
        found.append(f"the hypervisor stole {steal:.0%} of it")
    return None if not found else "recorded on a busy host: " + " and ".join(found)
