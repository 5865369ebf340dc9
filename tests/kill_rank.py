"""A pytest plugin for tests/test_torchrun.py: rank 1 of a launched group is killed (SIGKILL) shortly
after its second test starts, as a crashed or preempted node would be."""

from __future__ import annotations

import os
import signal
import threading

import pytest

started: list[str] = []


def pytest_runtest_setup(item: pytest.Item) -> None:
    started.append(item.nodeid)
    if os.environ.get("RANK") == "1" and len(started) == 2:
        threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGKILL)).start()
