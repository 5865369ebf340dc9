"""The host's work per iteration, counted: the calls the training thread makes in a few untimed
iterations after the timed ones (Python functions, and the C functions Python calls, torch's ops among
them: ``sys.setprofile``'s "call" and "c_call" events).

A case whose GPU waits for the host runs as fast as the host issues its work, and the host's speed
moves between processes and machines (research/evidence/h200-noise-sources.md). The count does not
follow the host's speed: the same code makes the same calls on a fast or a slow host, so more calls mean
more host work. The iterations are counted after the timed ones and after the held-out metric, and the
profile function is removed before anything else runs.
"""

from __future__ import annotations

import statistics
import sys
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType
from typing import Any

COUNTED_ITERATIONS = 3  # the median of three: one iteration that skips its optimizer step (a gradient
# scaler's) does not move it
COUNTED_EVENTS = ("call", "c_call")


@dataclass(frozen=True)
class IterationCalls:
    """The calls of one training iteration: all of them, and the training step's alone (the data's fetch
    left out). A case that reads its data in many cheap calls (the digits reference) hides a rise in its
    step's calls in the total; counted apart, the step shows it."""

    total: int
    step: int
    fetches: tuple[int, ...] = ()  # each counted iteration's fetch: its calls vary where worker processes
    # deliver the batches (one arriving out of order is received in the fetch before its own)
    torch_step: int = 0  # of the step's calls, those into torch's C library (``into_torch``)


def into_torch(function: Any) -> bool:
    """Whether a C function the profile saw belongs to torch: an op, a tensor's method, a helper of
    ``torch._C``. Such a call costs the host microseconds where a Python call costs a fraction of one,
    so a case of many cheap calls hides ops added to its step in its total count."""
    if (getattr(function, "__module__", None) or "").startswith("torch"):
        return True
    owner = getattr(function, "__self__", None)
    return owner is not None and type(owner).__module__.startswith("torch")


def calls_per_iteration(
    step: Callable[[Any], object], fetch: Callable[[], tuple[Any, float]], iterations: int = COUNTED_ITERATIONS
) -> IterationCalls:
    """The median number of calls the calling thread makes in one of ``iterations`` training iterations
    (``step(fetch()[0])``, the data's fetch included, as in a timed iteration), and in their steps alone."""
    counts = [_calls(step, fetch) for _ in range(iterations)]
    return IterationCalls(
        total=int(statistics.median(fetched + stepped for fetched, stepped, _ in counts)),
        step=int(statistics.median(stepped for _, stepped, _ in counts)),
        fetches=tuple(fetched for fetched, _, _ in counts),
        torch_step=int(statistics.median(torch_calls for _, _, torch_calls in counts)),
    )


def _calls(step: Callable[[Any], object], fetch: Callable[[], tuple[Any, float]]) -> tuple[int, int, int]:
    """The calls of one iteration's fetch and of its step, and the step's calls into torch."""
    count = into = 0
    stepping = False  # the fetch's calls are not looked into: only the step's calls into torch are kept

    def profile(_frame: FrameType, event: str, arg: Any) -> None:
        nonlocal count, into
        if event in COUNTED_EVENTS:
            count += 1
            if stepping and event == "c_call" and into_torch(arg):
                into += 1

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        batch = fetch()[0]
        fetched, stepping = count, True
        step(batch)
    finally:
        sys.setprofile(previous)
    return fetched, count - fetched - 1, into  # less the call of sys.setprofile that removes the profile function
