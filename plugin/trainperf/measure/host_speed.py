"""How fast this host dispatches work to the device: the time Python and PyTorch take to issue one
tiny in-place op, measured right before a case is timed.

A launch-bound case runs at the host's pace, so a slower host slows it with the same code, while a
GPU-bound case keeps its time (research/evidence/h200-suite-strict-runs.md). The figure is kept beside the
case's clocks and in its baseline, so that a failure on a slower host says so.
"""

from __future__ import annotations

import statistics
import time

import torch

OPS = 1000  # one op takes a few microseconds to issue: a few milliseconds per repeat
REPEATS = 5


def dispatch_us(device: torch.device) -> float:
    """Median over ``REPEATS`` of the host time to issue one ``add_`` on a one-element tensor, in µs.
    On a GPU only the issuing is timed: each op runs in less time than it takes to issue, so the
    queue never fills and the figure is the host's alone."""
    x = torch.zeros(1, device=device)
    times = []
    for _ in range(REPEATS):
        _synchronize(device)
        start = time.perf_counter()
        for _ in range(OPS):
            x.add_(1.0)
        times.append((time.perf_counter() - start) / OPS * 1e6)
    _synchronize(device)
    return statistics.median(times)


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
