"""The host's steal share over a timed stretch, from /proc/stat: of all cores, and of the cores one thread
ran on; and the share of the machine's time used by processes the case did not start."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from trainperf.measure.host_steal import (
    PROC_STAT,
    StealWatch,
    busy_times,
    core_times,
    cpu_times,
    family_ticks,
    thread_core,
)

# /proc/stat's first line as this kernel writes it: user nice system idle iowait irq softirq steal guest guest_nice
BEFORE = "cpu  1730237 814 146584 2402885 3784 0 824 591 0 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n"
AFTER = "cpu  1730437 814 146684 2403485 3784 0 824 691 50 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n"


def test_steal_and_total_come_from_the_first_line(tmp_path: Path) -> None:
    stat = tmp_path / "stat"
    stat.write_text(BEFORE)
    assert cpu_times(stat) == (591, 1730237 + 814 + 146584 + 2402885 + 3784 + 824 + 591)


def test_the_share_is_steal_over_all_time_between_enter_and_exit(tmp_path: Path) -> None:
    stat = tmp_path / "stat"
    stat.write_text(BEFORE)
    with StealWatch(stat, interval_s=None) as watch:
        stat.write_text(AFTER)  # 200 user + 100 system + 600 idle + 100 steal ticks; guest is inside user
    assert watch.share == pytest.approx(100 / 1000)


def test_nothing_is_claimed_where_proc_stat_cannot_tell(tmp_path: Path) -> None:
    assert cpu_times(tmp_path / "missing") is None
    (tmp_path / "odd").write_text("intr 1 2 3\n")
    assert cpu_times(tmp_path / "odd") is None
    assert busy_times(tmp_path / "odd") is None and family_ticks(1583, tmp_path) is None
    with StealWatch(tmp_path / "missing", tmp_path / "missing-task", proc=tmp_path, pid=1583) as watch:
        pass
    assert watch.share is None and watch.thread_share is None and watch.others_share is None


def write_process(proc: Path, pid: int, parent: int, ticks: tuple[int, int, int, int]) -> None:
    """A process's /proc/<pid>/stat as the kernel writes it: the parent's pid is the 2nd field after the
    name, then utime, stime, cutime and cstime the 12th to 15th (the name holds a ") " on purpose)."""
    fields = ["S", str(parent), *["0"] * 9, *map(str, ticks), *["0"] * 30]
    (proc / str(pid)).mkdir(exist_ok=True)
    (proc / str(pid) / "stat").write_text(f"{pid} (py) thread) " + " ".join(fields) + "\n")


def test_a_process_s_family_is_itself_its_descendants_and_the_children_they_waited_for(tmp_path: Path) -> None:
    write_process(tmp_path, 100, 1, (1000, 200, 30, 20))  # 50 ticks of children it has waited for
    write_process(tmp_path, 101, 100, (300, 10, 0, 0))  # a DataLoader worker
    write_process(tmp_path, 102, 101, (40, 0, 0, 0))  # a process the worker started
    write_process(tmp_path, 200, 1, (9000, 900, 0, 0))  # another job
    (tmp_path / "self").mkdir()  # not a number: not a process of its own
    assert family_ticks(100, tmp_path) == 1250 + 310 + 40
    assert family_ticks(200, tmp_path) == 9900
    assert family_ticks(300, tmp_path) is None


def test_other_processes_share_leaves_out_the_processes_this_one_started(tmp_path: Path) -> None:
    stat, proc = tmp_path / "stat", tmp_path / "proc"
    proc.mkdir()
    stat.write_text(BEFORE)
    write_process(proc, 100, 1, (1000, 200, 0, 0))
    write_process(proc, 101, 100, (10, 0, 0, 0))
    assert busy_times(stat) == (1730237 + 814 + 146584 + 824, 1730237 + 814 + 146584 + 2402885 + 3784 + 824 + 591)
    with StealWatch(stat, interval_s=None, proc=proc, pid=100) as watch:
        stat.write_text(AFTER)  # 300 busy ticks of 1000 on the machine
        write_process(proc, 100, 1, (1030, 210, 0, 0))  # 40 of them this process's
        write_process(proc, 101, 100, (60, 0, 0, 0))  # 50 its worker's
        write_process(proc, 102, 100, (10, 0, 0, 0))  # 10 a worker started meanwhile
    assert watch.others_share == pytest.approx(200 / 1000)


@pytest.mark.skipif(not PROC_STAT.exists(), reason="no /proc/stat: not Linux")
def test_this_machine_counts_a_live_child_s_cpu_time_as_this_process_s_own() -> None:
    busy_then_wait = "import time, sys\nwhile time.process_time() < 0.3: pass\nprint(flush=True)\nsys.stdin.read()"
    child = subprocess.Popen([sys.executable, "-c", busy_then_wait], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert child.stdout is not None and child.stdout.readline()  # it has used 0.3 s of CPU time
        own = family_ticks(child.pid)
        assert own is not None and own >= 0.25 * os.sysconf("SC_CLK_TCK")  # less a tick or so of rounding
        family = family_ticks()
        assert family is not None and family >= own
    finally:
        child.kill()
        child.wait()


# The lines of /proc/stat per core, and a thread's stat line, as this kernel writes them (the thread's
# comm holds a ") " to show that the fields are counted from the last one).
def cores(*rows: tuple[int, int, int]) -> str:
    """/proc/stat with one line per (user, idle, steal) core, and the all-cores line first."""
    lines = [f"cpu{n} {user} 0 0 {idle} 0 0 0 {steal} 0 0" for n, (user, idle, steal) in enumerate(rows)]
    return "cpu  1 0 0 1 0 0 0 0 0 0\n" + "\n".join(lines) + "\nintr 8879741 0 0\n"


def on_core(core: int) -> str:
    fields = ["R", *["0"] * 35, str(core), "0", "0"]  # "processor" is the 37th field after the comm
    return "1583 (py) thread) " + " ".join(fields) + "\n"


def test_each_core_and_the_core_a_thread_last_ran_on_are_read(tmp_path: Path) -> None:
    stat, task = tmp_path / "stat", tmp_path / "task"
    stat.write_text(cores((10, 80, 10), (50, 50, 0)))
    task.write_text(on_core(1))
    assert core_times(stat) == {0: (10, 100), 1: (0, 100)}
    assert thread_core(task) == 1
    task.write_text("1583 (py) R 1 2\n")
    assert thread_core(task) is None
    assert core_times(tmp_path / "missing") == {}


def test_the_thread_share_counts_each_stretch_on_the_core_the_thread_was_on(tmp_path: Path) -> None:
    stat, task = tmp_path / "stat", tmp_path / "task"
    stat.write_text(cores((0, 0, 0), (0, 0, 0)))
    task.write_text(on_core(0))
    with StealWatch(stat, task, interval_s=None) as watch:
        stat.write_text(cores((5, 0, 5), (10, 0, 0)))  # core 0: half of its 10 ticks stolen
        watch.sample()
        task.write_text(on_core(1))
        stat.write_text(cores((5, 0, 25), (20, 0, 0)))  # the thread on core 1, which lost nothing
    assert watch.thread_share == pytest.approx(5 / 20)  # 5 stolen of the 10 + 10 ticks it was on
    assert watch.share is None  # the all-cores line did not move


@pytest.mark.skipif(not PROC_STAT.exists(), reason="no /proc/stat: not Linux")
def test_this_machine_gives_shares_between_0_and_1() -> None:
    with StealWatch() as watch:
        time.sleep(0.3)  # the counters move in clock ticks (10 ms); a shorter stretch may see none
    assert watch.share is not None and 0.0 <= watch.share <= 1.0
    assert watch.thread_share is not None and 0.0 <= watch.thread_share <= 1.0
    assert watch.others_share is not None and 0.0 <= watch.others_share <= 1.0
