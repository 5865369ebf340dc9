"""How much of the host's CPU time the hypervisor gave to other guests while a case was timed.

On a shared virtual machine, a launch-bound case slows when other guests hold the host's cores, and the
steal counter of /proc/stat shows part of it (docs/evidence/h200-noise-sources.md). The share is kept
beside each case's clocks so that a slow run can be told from slow code. Reads nothing off Linux.
"""

from __future__ import annotations

from pathlib import Path

PROC_STAT = Path("/proc/stat")
STEAL = 7  # index of steal among the counters after "cpu": user nice system idle iowait irq softirq steal


def cpu_times(stat: Path = PROC_STAT) -> tuple[int, int] | None:
    """(steal, total) clock ticks of all cores since boot; None where /proc/stat cannot tell."""
    try:
        fields = stat.read_text().split("\n", 1)[0].split()
    except OSError:
        return None
    if len(fields) < STEAL + 2 or fields[0] != "cpu":
        return None
    counters = [int(value) for value in fields[1 : STEAL + 2]]  # guest time is counted in user already
    return counters[STEAL], sum(counters)


class StealWatch:
    """``share``: steal over all CPU time of the host's cores between entering and leaving; None where
    /proc/stat cannot tell or no clock tick (10 ms) was counted in between."""

    def __init__(self, stat: Path = PROC_STAT) -> None:
        self.stat = stat
        self.share: float | None = None
        self._start: tuple[int, int] | None = None

    def __enter__(self) -> StealWatch:
        self._start = cpu_times(self.stat)
        return self

    def __exit__(self, *exc: object) -> None:
        end = cpu_times(self.stat)
        if self._start is not None and end is not None and end[1] > self._start[1]:
            self.share = (end[0] - self._start[0]) / (end[1] - self._start[1])
