"""SIGTERM ends a session as Ctrl-C does, so that what it measured is kept.

A CI job past its time limit, ``timeout`` or a scheduler stopping a runner sends SIGTERM, whose default
ends Python at once: no run document, no JUnit file, no summary, nothing of the cases already measured
(research/evidence/h200-fresh-host-runs.md). Raised as ``KeyboardInterrupt`` in the main thread,
it makes pytest end the session as interrupted: the finished cases are reported and written, those
waiting for a second measurement are named. A second SIGTERM ends the process at once, as the default would,
unless it comes within ``DUPLICATE_S`` of the first: that is the same stop delivered twice, as when
``timeout`` signals its whole process group and a wrapper script forwards the signal to pytest as well
(research/evidence/h200-host-work.md). Installed only in the main thread and where nothing else
handles SIGTERM, and put back at the end.
"""

from __future__ import annotations

import signal
import threading
import time
from types import FrameType

DUPLICATE_S = 2.0  # a SIGTERM this soon after the first is the same stop, delivered twice


class SigtermAsInterrupt:
    """The SIGTERM handler of one pytest session; ``received`` once a SIGTERM came."""

    def __init__(self, duplicate_s: float = DUPLICATE_S) -> None:
        self.received = False
        self.installed = False
        self.duplicate_s = duplicate_s
        self._first_at = 0.0

    def install(self) -> None:
        """Handle SIGTERM from now on, unless another handler holds it or this is not the main thread."""
        if threading.current_thread() is not threading.main_thread():
            return
        if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
            return  # the runner's own handler (or a parent session's, under pytester) stays in charge
        signal.signal(signal.SIGTERM, self._interrupt)
        self.installed = True

    def uninstall(self) -> None:
        if self.installed and signal.getsignal(signal.SIGTERM) == self._interrupt:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
        self.installed = False

    def _interrupt(self, signum: int, frame: FrameType | None) -> None:
        if self.received:
            if time.monotonic() - self._first_at < self.duplicate_s:
                return  # the first one's copy: the session is already stopping
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            signal.raise_signal(signal.SIGTERM)  # a second stop ends the process at once, as the default would
            return
        self.received = True
        self._first_at = time.monotonic()
        raise KeyboardInterrupt("trainperf: SIGTERM received; the session stops and reports what it measured")
