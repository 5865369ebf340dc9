"""A pytest plugin for tests/test_torchrun.py: rank 1 of a launched group is killed (SIGKILL) shortly
after its second test starts, as a crashed or preempted node would be. Where ``KILL_RANK_LOG`` names a
file, the time of the kill is written there (pytest captures the test's output)."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

started: list[str] = []


def pytest_runtest_setup(item: pytest.Item) -> None:
    started.append(item.nodeid)
    if os.environ.get("RANK") == "1" and len(started) == 2:
        threading.Timer(0.5, _kill).start()


def _kill() -> None:
    log = os.environ.get("KILL_RANK_LOG")
    if log:
        with open(log, "w") as out:
            out.write(f"{time.time():.1f}\n")
    os.kill(os.getpid(), signal.SIGKILL)
