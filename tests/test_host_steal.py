"""The host's steal share over a timed stretch: of all cores, and of the cores one thread ran on; and the
share of the machine's time used by processes the case did not start."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections import namedtuple
from pathlib import Path

import psutil
import pytest
from trainperf.measure import host_steal
from trainperf.measure.host_steal import (
    PROC_STAT,
    StealWatch,
    core_times,
    family_seconds,
    steal_and_busy,
    thread_core,
)

# psutil's reading of all cores on Linux, in seconds; guest time is counted in user already
Reading = namedtuple("Reading", "user nice system idle iowait irq softirq steal guest guest_nice")
BEFORE = Reading(17302.37, 8.14, 1465.84, 24028.85, 37.84, 0.0, 8.24, 5.91, 0.0, 0.0)
AFTER = Reading(17304.37, 8.14, 1466.84, 24034.85, 37.84, 0.0, 8.24, 6.91, 0.5, 0.0)


def reads(monkeypatch: pytest.MonkeyPatch, *readings: object) -> None:
    """psutil.cpu_times() gives these readings, one a call, then the last one again."""
    left = list(readings)
    monkeypatch.setattr(psutil, "cpu_times", lambda: left.pop(0) if len(left) > 1 else left[0])


def test_steal_busy_and_total_are_summed_from_psutils_reading(monkeypatch: pytest.MonkeyPatch) -> None:
    reads(monkeypatch, BEFORE)
    total = 17302.37 + 8.14 + 1465.84 + 24028.85 + 37.84 + 8.24 + 5.91
    steal, busy = steal_and_busy()
    assert steal == pytest.approx((5.91, total))
    assert busy == pytest.approx((17302.37 + 8.14 + 1465.84 + 8.24, total))


def test_the_share_is_steal_over_all_time_between_enter_and_exit(monkeypatch: pytest.MonkeyPatch) -> None:
    reads(monkeypatch, BEFORE, AFTER)  # 2 s user + 1 s system + 6 s idle + 1 s steal; guest is inside user
    with StealWatch(interval_s=None) as watch:
        pass
    assert watch.share == pytest.approx(1 / 10)


def test_nothing_is_claimed_where_the_system_cannot_tell(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()
    assert family_seconds(ended.pid) is None and thread_core(ended.pid)() is None  # a process that has ended
    reads(monkeypatch, namedtuple("Reading", "user system idle")(1.0, 1.0, 1.0))  # no steal: not Linux
    assert steal_and_busy() == (None, None)
    with StealWatch(tmp_path / "missing", lambda: None, pid=ended.pid) as watch:
        pass
    assert watch.share is None and watch.thread_share is None and watch.others_share is None


def test_other_processes_share_leaves_out_the_processes_this_one_started(monkeypatch: pytest.MonkeyPatch) -> None:
    reads(monkeypatch, BEFORE, AFTER)  # 3 s busy of 10 s on the machine
    family = [12.4, 13.4]  # 1 s of them this process's and the processes it started
    monkeypatch.setattr(host_steal, "family_seconds", lambda pid: family.pop(0))
    with StealWatch(interval_s=None, pid=100) as watch:
        pass
    assert watch.others_share == pytest.approx(2 / 10)


BURN = "import time\nwhile time.process_time() < {s}: pass\n"
BURN_THEN_WAIT = BURN.format(s=0.2) + "print(flush=True)\ninput()\n"


@pytest.mark.skipif(not PROC_STAT.exists(), reason="no /proc/stat: not Linux")
def test_a_process_s_family_is_itself_its_live_descendants_and_the_children_it_waited_for() -> None:
    """A process that waited for a child burning 0.2 s, then started one burning 0.2 s and still running:
    its family used 0.4 s or more; another process burning 0.5 s beside it is not counted."""
    parent = (
        "import subprocess, sys\n"
        f"subprocess.run([sys.executable, '-c', {BURN.format(s=0.2)!r}], check=True)\n"
        f"live = subprocess.Popen([sys.executable, '-c', {BURN_THEN_WAIT!r}],"
        " stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)\n"
        "live.stdout.readline()\nprint(flush=True)\nsys.stdin.read()\n"
    )
    other = subprocess.Popen([sys.executable, "-c", BURN.format(s=0.5)])
    family = subprocess.Popen([sys.executable, "-c", parent], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert family.stdout is not None and family.stdout.readline()  # both its children have burnt theirs
        used = family_seconds(family.pid)
        assert used is not None and 0.38 <= used < 0.38 + 0.5  # less a tick or so of rounding; not the other's
        own = family_seconds()
        assert own is not None and own >= used
    finally:
        family.kill()
        other.kill()
        family.wait()
        other.wait()


# The lines of /proc/stat per core, and a thread's stat line, as this kernel writes them (the thread's
# comm holds a ") " to show that the fields are counted from the last one).
def cores(*rows: tuple[int, int, int]) -> str:
    """/proc/stat with one line per (user, idle, steal) core, and the all-cores line first."""
    lines = [f"cpu{n} {user} 0 0 {idle} 0 0 0 {steal} 0 0" for n, (user, idle, steal) in enumerate(rows)]
    return "cpu  1 0 0 1 0 0 0 0 0 0\n" + "\n".join(lines) + "\nintr 8879741 0 0\n"


def test_each_core_and_the_core_a_thread_last_ran_on_are_read(tmp_path: Path) -> None:
    stat = tmp_path / "stat"
    stat.write_text(cores((10, 80, 10), (50, 50, 0)))
    assert core_times(stat) == {0: (10, 100), 1: (0, 100)}
    assert core_times(tmp_path / "missing") == {}
    assert thread_core(threading.get_native_id())() in os.sched_getaffinity(0)


def test_the_thread_share_counts_each_stretch_on_the_core_the_thread_was_on(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    reads(monkeypatch, BEFORE)
    stat, on = tmp_path / "stat", [0]
    stat.write_text(cores((0, 0, 0), (0, 0, 0)))
    with StealWatch(stat, lambda: on[0], interval_s=None) as watch:
        stat.write_text(cores((5, 0, 5), (10, 0, 0)))  # core 0: half of its 10 ticks stolen
        watch.sample()
        on[0] = 1
        stat.write_text(cores((5, 0, 25), (20, 0, 0)))  # the thread on core 1, which lost nothing
    assert watch.thread_share == pytest.approx(5 / 20)  # 5 stolen of the 10 + 10 ticks it was on
    assert watch.share is None  # the all-cores reading did not move


@pytest.mark.skipif(not PROC_STAT.exists(), reason="no /proc/stat: not Linux")
def test_this_machine_gives_shares_between_0_and_1() -> None:
    with StealWatch() as watch:
        time.sleep(0.3)  # the counters move in clock ticks (10 ms); a shorter stretch may see none
    assert watch.share is not None and 0.0 <= watch.share <= 1.0
    assert watch.thread_share is not None and 0.0 <= watch.thread_share <= 1.0
    assert watch.others_share is not None and 0.0 <= watch.others_share <= 1.0
