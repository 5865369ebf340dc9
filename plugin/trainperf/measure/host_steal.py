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
that a slow run can be told from slow code. The counters come from psutil; steal is Linux's alone.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil

PROC_STAT = Path("/proc/stat")
COUNTED = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")  # guest is in user already
BUSY = ("user", "nice", "system", "irq", "softirq")  # the time the machine's own processes ran
SAMPLE_INTERVAL_S = 0.1  # the counters move in clock ticks of 10 ms: 10 per core per sample

Times = tuple[float, float]  # (steal or busy, total) CPU time since boot, in seconds or in clock ticks


def _times(reading: Any, part: tuple[str, ...]) -> Times | None:
    """(the ``part`` fields' sum, all counted fields' sum) of one psutil reading; None without steal (not Linux)."""
    if not all(hasattr(reading, name) for name in COUNTED):
        return None
    return sum(getattr(reading, name) for name in part), sum(getattr(reading, name) for name in COUNTED)


def steal_and_busy() -> tuple[Times | None, Times | None]:
    """(steal, total) and (busy, total) CPU seconds of all cores since boot, from one reading, busy being
    the time any process of this machine ran; None where the system does not count steal."""
    reading = psutil.cpu_times()
    return _times(reading, ("steal",)), _times(reading, BUSY)


def core_times(stat: Path = PROC_STAT) -> dict[int, Times]:
    """(steal, total) clock ticks of each core since boot, by core number; empty where /proc/stat cannot
    tell. Read from /proc/stat itself: psutil lists the cores without their numbers, so a machine with a
    core offline would give the next core's ticks to the core a thread ran on."""
    try:
        lines = stat.read_text().splitlines()
    except OSError:
        return {}
    cores: dict[int, Times] = {}
    for line in lines[1:]:
        if not line.startswith("cpu"):
            break  # the per-core lines come first; the rest (intr, ctxt, ...) is long and not needed
        fields = line.split()
        if fields[0][3:].isdigit() and len(fields) > len(COUNTED):
            counters = [int(value) for value in fields[1 : len(COUNTED) + 1]]
            cores[int(fields[0][3:])] = (counters[COUNTED.index("steal")], sum(counters))
    return cores


def family_seconds(pid: int | None = None) -> float | None:
    """User and system CPU seconds of process ``pid`` (this one by default), of its live descendants and
    of the children each has waited for: all the CPU time of the work it started. A child that ends in
    between moves from the live count into its parent's; None where the process cannot be read."""
    try:
        process = psutil.Process(pid)
        family = [process, *process.children(recursive=True)]
    except psutil.Error:
        return None
    seconds = 0.0
    for member in family:
        try:
            used = member.cpu_times()
        except psutil.Error:
            if member is process:
                return None
            continue  # a descendant that ended meanwhile: its parent counts it once it has waited for it
        seconds += used.user + used.system + used.children_user + used.children_system
    return seconds


def thread_core(thread_id: int) -> Callable[[], int | None]:
    """A reader of the core a thread of this machine last ran on (None where it cannot be read): the
    thread is looked up once, each reading is one read of its stat file."""
    try:
        thread: psutil.Process | None = psutil.Process(thread_id)
    except psutil.Error:
        thread = None

    def core() -> int | None:
        try:
            return None if thread is None else int(thread.cpu_num())
        except (psutil.Error, AttributeError):  # cpu_num: Linux, FreeBSD and SunOS only
            return None

    return core


class StealWatch:
    """``share``: steal over all CPU time of the host's cores between entering and leaving.
    ``thread_share``: the same over the cores the entering thread ran on, each stretch of
    ``interval_s`` counted on the core the thread was on at its end (``core_of_thread`` tells; no
    sampling thread where ``interval_s`` is None: the owner calls ``sample``). ``others_share``: the
    busy time of the machine's cores less that of process ``pid`` (this one) and the processes it
    started (``family_seconds``), over all their time. Each is None where the system cannot tell or no
    clock tick (10 ms) was counted in between."""

    def __init__(
        self,
        stat: Path = PROC_STAT,
        core_of_thread: Callable[[], int | None] | None = None,
        interval_s: float | None = SAMPLE_INTERVAL_S,
        pid: int | None = None,
    ) -> None:
        self.stat, self.core_of_thread, self.interval_s, self.pid = stat, core_of_thread, interval_s, pid
        self.share: float | None = None
        self.thread_share: float | None = None
        self.others_share: float | None = None
        self._start: Times | None = None
        self._busy_start: Times | None = None
        self._own_start: float | None = None
        self._cores: dict[int, Times] = {}
        self._thread_ticks = [0.0, 0.0]
        self._stop = threading.Event()
        self._sampler: threading.Thread | None = None

    def __enter__(self) -> StealWatch:
        if self.core_of_thread is None:
            self.core_of_thread = thread_core(threading.get_native_id())
        self._start, self._busy_start = steal_and_busy()  # one reading: the same stretch for both
        self._own_start = family_seconds(self.pid)
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
        end, busy = steal_and_busy()
        if self._start is not None and end is not None and end[1] > self._start[1]:
            self.share = round((end[0] - self._start[0]) / (end[1] - self._start[1]), 6)
        steal, total = self._thread_ticks
        self.thread_share = steal / total if total else None
        self.others_share = self._others_share(busy, family_seconds(self.pid))

    def _others_share(self, busy: Times | None, own: float | None) -> float | None:
        if busy is None or own is None or self._busy_start is None or self._own_start is None:
            return None
        total = busy[1] - self._busy_start[1]
        others = (busy[0] - self._busy_start[0]) - (own - self._own_start)
        # the two counts are read apart; psutil's seconds are sums of hundredths: no share finer than 1e-6
        return round(min(max(others / total, 0.0), 1.0), 6) if total > 0 else None

    def sample(self) -> None:
        """Count the ticks since the last sample on the core the watched thread is on now."""
        cores = core_times(self.stat)
        core = None if self.core_of_thread is None else self.core_of_thread()
        if core is not None and core in cores and core in self._cores:
            (steal, total), (steal_before, total_before) = cores[core], self._cores[core]
            self._thread_ticks[0] += steal - steal_before
            self._thread_ticks[1] += total - total_before
        self._cores = cores or self._cores

    def _sample_until_stopped(self) -> None:
        assert self.interval_s is not None
        while not self._stop.wait(self.interval_s):
            self.sample()
