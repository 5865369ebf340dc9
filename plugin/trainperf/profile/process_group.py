"""A profiler's command run in a process group of its own, so that a timeout stops the tool and every
process it started (a profiler starts the profiled Python process, which may start workers of its own)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Sequence
from typing import Any


def run_in_own_group(argv: Sequence[str], timeout_s: float, **popen: Any) -> int:
    """Run ``argv`` and wait for its exit status; at ``timeout_s`` kill its whole group and raise
    ``subprocess.TimeoutExpired``. ``popen`` goes to ``subprocess.Popen`` (cwd, env, stdout, ...)."""
    with subprocess.Popen(list(argv), start_new_session=True, **popen) as process:
        try:
            return process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            raise
