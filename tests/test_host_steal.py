"""The host's steal share over a timed stretch, from /proc/stat's first line."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from trainperf.host_steal import PROC_STAT, StealWatch, cpu_times

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
    with StealWatch(stat) as watch:
        stat.write_text(AFTER)  # 200 user + 100 system + 600 idle + 100 steal ticks; guest is inside user
    assert watch.share == pytest.approx(100 / 1000)


def test_nothing_is_claimed_where_proc_stat_cannot_tell(tmp_path: Path) -> None:
    assert cpu_times(tmp_path / "missing") is None
    (tmp_path / "odd").write_text("intr 1 2 3\n")
    assert cpu_times(tmp_path / "odd") is None
    with StealWatch(tmp_path / "missing") as watch:
        pass
    assert watch.share is None


@pytest.mark.skipif(not PROC_STAT.exists(), reason="no /proc/stat: not Linux")
def test_this_machine_gives_a_share_between_0_and_1() -> None:
    with StealWatch() as watch:
        time.sleep(0.3)  # the counters move in clock ticks (10 ms); a shorter stretch may see none
    assert watch.share is not None and 0.0 <= watch.share <= 1.0
