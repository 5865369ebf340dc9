"""The leader of a child's process group: it ends the group when the session's process dies.

``run_in_own_group`` kills the group at a timeout or an interrupt, but a session killed outright
(SIGKILL from ``timeout -k``, a CI runner or the OOM killer) cannot: its measuring child went on using the
GPU and ran beside the next session's first case (research/evidence/h100-suite-baselines.md).
Started between the session and the command, this process asks Linux to signal it when its parent
dies (``PR_SET_PDEATHSIG``) and then kills its whole group; elsewhere it only runs the command.
Run as a file (``python group_leader.py PARENT_PID COMMAND...``): it imports nothing of trainperf.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
from types import FrameType

PR_SET_PDEATHSIG = 1  # linux/prctl.h


def main(argv: list[str]) -> int:
    parent, command = int(argv[0]), argv[1:]
    signal.signal(signal.SIGTERM, _end_group)
    _signal_when_parent_dies(signal.SIGTERM)
    if os.getppid() != parent:  # the parent died before the request above
        _end_group()
    try:
        status = subprocess.call(command)
    except OSError as error:
        print(f"could not start {command[0]}: {error}", file=sys.stderr)
        return 127  # as a shell answers a command it cannot run
    if status < 0:  # killed by a signal: end alike, so that the session sees what the command saw
        signal.signal(-status, signal.SIG_DFL)
        os.kill(os.getpid(), -status)
    return status


def _signal_when_parent_dies(signum: int) -> None:
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (AttributeError, OSError):
        return  # not Linux: the group lives on a killed session, as without this process
    prctl(PR_SET_PDEATHSIG, signum, 0, 0, 0)


def _end_group(signum: int | None = None, frame: FrameType | None = None) -> None:
    os.killpg(os.getpgrp(), signal.SIGKILL)  # this process too


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
