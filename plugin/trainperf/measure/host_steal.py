"""How much CPU time the hypervisor gave to other guests while a case was timed: of all the host's
cores, and of the cores the timing thread itself ran on; and how much of the machine's own CPU time
processes other than the case's own used meanwhile.

On a shared virtual machine, a launch-bound case slows when other guests hold the host's cores, and the
steal counters of /proc/stat show part of it (research/evidence/h200-noise-sources.md). Steal over all cores
does not say whether the one core that issues the GPU's work lost time, so a sampling thread follows
that thread from core to core. Where measured, it stayed near zero while the steal of all cores marked
the runs that neighbours slowed (research/evidence/h200-examples-gate.md).
A slow run with no steal may instead share the machine with other work (another job, daemons): the
third share tells that apart. The processes the case started (DataLoader and compile workers) are its
own, not "other": counted as other, they once read as a busy neighbour
(research/evidence/h200-fresh-host-runs.md). All three are kept beside each case's clocks so
that a slow run can be told from slow code. Reads nothing off Linux.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

PROC = Path("/proc")
PROC_STAT = PROC / "stat"
STEAL = 7  # index of steal among the counters after "cpu": user nice system idle iowait irq softirq steal
BUSY = (0, 1, 2, 5, 6)  # user nice system irq softirq: time the machine's own processes ran
PROCESSOR = 36  # index of "processor" (the core last run on) after the ")" of /proc/<pid>/task/<tid>/stat
PPID = 1  # index of the parent's pid after the ")" of /proc/<pid>/stat
UTIME = 11  # index of utime, stime, cutime, cstime after the ")" of /proc/<pid>/stat, in the same clock ticks
SAMPLE_INTERVAL_S = 0.1  # the counters move in clock ticks of 10 ms: 10 per core per sample

Ticks = tuple[int, int]  # (steal or busy, total) clock ticks since boot


def _counters(fields: list[str]) -> list[int] | None:
    """user nice system idle iowait irq softirq steal of a "cpu" line's fields; None where it is short."""
    if len(fields) < STEAL + 2:
        return None
    return [int(value) for value in fields[1 : STEAL + 2]]  # guest time is counted in user already


def _ticks(fields: list[str]) -> Ticks | None:
    counters = _counters(fields)
    return None if counters is None else (counters[STEAL], sum(counters))


def _all_cores(stat: Path) -> list[str]:
    """The fields of /proc/stat's first line, that of all cores together; empty where it cannot be read."""
    try:
        fields = stat.read_text().split("\n", 1)[0].split()
    except OSError:
        return []
    return fields if fields and fields[0] == "cpu" else []


def cpu_times(stat: Path = PROC_STAT) -> Ticks | None:
    """(steal, total) clock ticks of all cores since boot; None where /proc/stat cannot tell."""
    return _ticks(_all_cores(stat))


def core_times(stat: Path = PROC_STAT) -> dict[int, Ticks]:
    """(steal, total) clock ticks of each core since boot, by core number; empty where /proc/stat cannot tell."""
    try:
        lines = stat.read_text().splitlines()
    except OSError:
        return {}
    cores = {}
    for line in lines:
        if not line.startswith("cpu"):
            break  # the per-core lines come first; the rest (intr, ctxt, ...) is long and not needed
        fields = line.split()
        if fields[0][3:].isdigit() and (ticks := _ticks(fields)):
            cores[int(fields[0][3:])] = ticks
    return cores


def busy_times(stat: Path = PROC_STAT) -> Ticks | None:
    """(busy, total) clock ticks of all cores since boot, busy being the time any process of this
    machine ran; None where /proc/stat cannot tell."""
    return _busy(_all_cores(stat))


def _busy(fields: list[str]) -> Ticks | None:
    counters = _counters(fields)
    return None if counters is None else (sum(counters[i] for i in BUSY), sum(counters))


def family_ticks(pid: int | None = None, proc: Path = PROC) -> int | None:
    """User and system clock ticks of process ``pid`` (this one by default), of its live descendants
    and of the children each has waited for: all the CPU time of the work it started. A child that
    ends in between moves from the live count into its parent's; None where /proc cannot tell."""
    pid = os.getpid() if pid is None else pid
    parents, ticks = {}, {}
    for stat in proc.glob("[0-9]*/stat"):
        fields = _stat_fields(stat)
        if fields is not None:
            number = int(stat.parent.name)
            parents[number] = int(fields[PPID])
            ticks[number] = sum(int(value) for value in fields[UTIME : UTIME + 4])
    if pid not in ticks:
        return None
    family, grew = {pid}, True
    while grew:  # a process's descendants, however deep; /proc lists them in no particular order
        joined = {number for number, parent in parents.items() if parent in family} - family
        family |= joined
        grew = bool(joined)
    return sum(ticks[number] for number in family)


def _stat_fields(process_stat: Path) -> list[str] | None:
    """The fields after the ")" that ends a process's name in its stat file; None where it cannot be read."""
    try:
        fields = process_stat.read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    counted = fields[PPID : UTIME + 4]
    return fields if len(counted) == UTIME + 3 and all(field.lstrip("-").isdigit() for field in counted) else None


def thread_core(task_stat: Path) -> int | None:
    """The core a thread last ran on, from its /proc/<pid>/task/<tid>/stat; None where it cannot tell."""
    fields = _stat_fields(task_stat)
    if fields is None or len(fields) <= PROCESSOR or not fields[PROCESSOR].isdigit():
        return None
    return int(fields[PROCESSOR])


class StealWatch:
    """``share``: steal over all CPU time of the host's cores between entering and leaving.
    ``thread_share``: the same over the cores the entering thread ran on, each stretch of
    ``interval_s`` counted on the core the thread was on at its end (no sampling thread where
    ``interval_s`` is None: the owner calls ``sample``). ``others_share``: the busy time of the
    machine's cores less that of process ``pid`` (this one) and the processes it started
    (``family_ticks``), over all their time. Each is None where /proc cannot
    tell or no clock tick (10 ms) was counted in between."""

    def __init__(
        self,
        stat: Path = PROC_STAT,
        task_stat: Path | None = None,
        interval_s: float | None = SAMPLE_INTERVAL_S,
        proc: Path = PROC,
        pid: int | None = None,
    ) -> None:
        self.stat, self.task_stat, self.interval_s = stat, task_stat, interval_s
        self.proc, self.pid = proc, pid
        self.share: float | None = None
        self.thread_share: float | None = None
        self.others_share: float | None = None
        self._start: Ticks | None = None
        self._busy_start: Ticks | None = None
        self._own_start: int | None = None
        self._cores: dict[int, Ticks] = {}
        self._thread_ticks = [0, 0]
        self._stop = threading.Event()
        self._sampler: threading.Thread | None = None

    def __enter__(self) -> StealWatch:
        if self.task_stat is None:
            self.task_stat = Path(f"/proc/self/task/{threading.get_native_id()}/stat")
        fields = _all_cores(self.stat)  # one reading for steal and busy time: the same stretch for both
        self._start, self._busy_start = _ticks(fields), _busy(fields)
        self._own_start = family_ticks(self.pid, self.proc)
        self._cores = core_times(self.stat)
        if self.interval_s is not None and self._cores:
            self._sampler = threading.Thread(target=self._sample_until_stopped, name="trainperf-steal", daemon=True)
            self._sampler.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._sampler is not None:
            self._sampler.join()
        self.sample()
        fields = _all_cores(self.stat)
        end = _ticks(fields)
        if self._start is not None and end is not None and end[1] > self._start[1]:
            self.share = (end[0] - self._start[0]) / (end[1] - self._start[1])
        steal, total = self._thread_ticks
        self.thread_share = steal / total if total else None
        self.others_share = self._others_share(_busy(fields), family_ticks(self.pid, self.proc))

    def _others_share(self, busy: Ticks | None, own: int | None) -> float | None:
        if busy is None or own is None or self._busy_start is None or self._own_start is None:
            return None
        total = busy[1] - self._busy_start[1]
        others = (busy[0] - self._busy_start[0]) - (own - self._own_start)
        return min(max(others / total, 0.0), 1.0) if total > 0 else None  # the two counts are read apart

    def sample(self) -> None:
        """Count the ticks since the last sample on the core the watched thread is on now."""
        cores = core_times(self.stat)
        core = None if self.task_stat is None else thread_core(self.task_stat)
        if core is not None and core in cores and core in self._cores:
            (steal, total), (steal_before, total_before) = cores[core], self._cores[core]
            self._thread_ticks[0] += steal - steal_before
            self._thread_ticks[1] += total - total_before
        self._cores = cores or self._cores

    def _sample_until_stopped(self) -> None:
        assert self.interval_s is not None
        while not self._stop.wait(self.interval_s):
            self.sample()
