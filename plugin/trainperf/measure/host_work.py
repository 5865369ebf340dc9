"""The host's work per iteration, counted: the calls the training thread makes in a few untimed
iterations after the timed ones (Python functions, and the C functions Python calls, torch's ops among
them: ``sys.setprofile``'s "call" and "c_call" events).

A case whose GPU waits for the host runs as fast as the host issues its work, and the host's speed
moves between processes and machines (research/evidence/h200-noise-sources.md). The count does not
follow the host's speed: the same code makes the same calls on a fast or a slow host, so more calls mean
more host work. The iterations are counted after the timed ones and after the held-out metric, and the
profile function is removed before anything else runs.

Left out: the calls of torch.compile's own plumbing (``torch/_dynamo``, ``torch/_compile.py``,
``torch/compiler``) and the C functions it calls. Eager code goes through it around the functions torch
keeps from the compiler (an optimizer's step), by a longer path once anything in the process was
compiled: counted, an eager case made 8 more calls an iteration after a compiled one than in a fresh
process.
"""

from __future__ import annotations

import os
import re
import statistics
import sys
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType
from typing import Any

COUNTED_ITERATIONS = 3  # the median of three: one iteration that skips its optimizer step (a gradient
# scaler's) does not move it
COUNTED_EVENTS = ("call", "c_call")
# in a code's file name; a pattern, as the profile function calls no Python function (a compiled region
# that is running would have Dynamo compile it)
PLUMBING_FILES = (f"_dynamo{os.sep}", "_compile.py", f"compiler{os.sep}")  # under torch's folder
COMPILER_PLUMBING = re.compile("|".join(re.escape(f"torch{os.sep}{part}") for part in PLUMBING_FILES))


@dataclass(frozen=True)
class IterationCalls:
    """The calls of one training iteration: all of them, and the training step's alone (the data's fetch
    left out). A case that reads its data in many cheap calls (the digits reference) hides a rise in its
    step's calls in the total; counted apart, the step shows it."""

    total: int
    step: int
    fetches: tuple[int, ...] = ()  # each counted iteration's fetch: its calls vary where worker processes
    # deliver the batches (one arriving out of order is received in the fetch before its own)


def calls_per_iteration(
    step: Callable[[Any], object], fetch: Callable[[], tuple[Any, float]], iterations: int = COUNTED_ITERATIONS
) -> IterationCalls:
    """The median number of calls the calling thread makes in one of ``iterations`` training iterations
    (``step(fetch()[0])``, the data's fetch included, as in a timed iteration), and in their steps alone."""
    counts = [_calls(step, fetch) for _ in range(iterations)]
    return IterationCalls(
        total=int(statistics.median(fetched + stepped for fetched, stepped in counts)),
        step=int(statistics.median(stepped for _, stepped in counts)),
        fetches=tuple(fetched for fetched, _ in counts),
    )


def _calls(step: Callable[[Any], object], fetch: Callable[[], tuple[Any, float]]) -> tuple[int, int]:
    """The calls of one iteration's fetch and of its step."""
    count = 0

    def profile(frame: FrameType, event: str, _arg: Any) -> None:
        nonlocal count
        if event in COUNTED_EVENTS and COMPILER_PLUMBING.search(frame.f_code.co_filename) is None:
            count += 1  # a "call" event's frame is the called function's, a "c_call" event's the caller's

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        batch = fetch()[0]
        fetched = count
        step(batch)
    finally:
        sys.setprofile(previous)
    return fetched, count - fetched - 1  # less the call of sys.setprofile that removes the profile function
