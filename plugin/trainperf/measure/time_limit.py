"""A case's time limit in the test process, so that a hung workload fails its case and later cases run.

``SIGALRM`` raises ``CaseTimeout`` in the main thread when the limit passes; the case's own ``finally``
blocks free its memory. A signal reaches Python code only between its bytecodes: a hang inside one C
call (a CUDA or NCCL wait that never returns) is stopped when that call returns. Without ``setitimer``
(not POSIX), off the main thread, or when another plugin (pytest-timeout's signal method) holds
``SIGALRM``, no limit is set and the caller says so.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

DEFAULT_BASE_S = 300.0  # building, compiling and evaluating a case, whatever its iterations
DEFAULT_PER_ITERATION_S = 2.0  # per warm-up or timed iteration, far above the slowest case's


class CaseTimeout(Exception):
    """The case ran past its time limit; the message names it and the limit."""


def default_limit_s(warmup: int, iters: int) -> float:
    """The limit of one in-process run of a case with these iterations."""
    return DEFAULT_BASE_S + DEFAULT_PER_ITERATION_S * (warmup + iters)


def unavailable() -> str | None:
    """Why no limit can be set here, or None."""
    if not hasattr(signal, "setitimer"):
        return "this platform has no interval timer"
    if threading.current_thread() is not threading.main_thread():
        return "the case runs off the main thread"
    if signal.getsignal(signal.SIGALRM) not in (signal.SIG_DFL, signal.SIG_IGN, None):
        return "another handler holds SIGALRM (pytest-timeout's signal method?)"
    return None


@contextlib.contextmanager
def time_limit(seconds: float, what: str, option: str) -> Iterator[None]:
    """Run the block under a limit of ``seconds``: CaseTimeout names ``what`` and the ``option`` that
    sets the limit. Call only where ``unavailable()`` is None."""

    def expire(signum: int, frame: FrameType | None) -> None:
        raise CaseTimeout(f"{what}: stopped after {seconds:g} s, its time limit ({option}); it had not finished")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
