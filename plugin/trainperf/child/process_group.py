"""A child's command run in a process group of its own, so that a timeout or an interrupted session
(Ctrl-C, SIGTERM) stops it and every process it started: a profiler starts the profiled Python process,
which may start workers of its own, and a case measured afresh would otherwise hold the GPU on. Where
the session itself is killed outright, ``group_leader.py`` stops the group.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

LEADER = Path(__file__).with_name("group_leader.py")


def run_in_own_group(argv: Sequence[str], timeout_s: float, **popen: Any) -> int:
    """Run ``argv`` and wait for its exit status; at ``timeout_s`` kill its whole group and raise
    ``subprocess.TimeoutExpired``, and kill it too where the wait is interrupted (``KeyboardInterrupt``).
    ``popen`` goes to ``subprocess.Popen`` (cwd, env, stdout, ...)."""
    environ = popen.get("env") or os.environ
    if shutil.which(argv[0], path=environ.get("PATH")) is None:  # as Popen of the command itself would
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), argv[0])
    led = [sys.executable, str(LEADER), str(os.getpid()), *argv]
    with subprocess.Popen(led, start_new_session=True, **popen) as process:
        try:
            return process.wait(timeout=timeout_s)
        except BaseException:  # its own group gets no Ctrl-C from the terminal: it goes with this wait
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            raise
