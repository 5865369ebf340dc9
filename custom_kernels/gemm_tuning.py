"""Choose the fastest of several ways to run a GEMM of one shape by timing each on the GPU at its first
call, and remember the choice for the process's later calls (as Inductor's autotuning does for its
kernels, but among cuBLAS's own algorithms).

Timing happens outside CUDA-graph capture only: a call captured before its shape was timed runs the
first candidate. Training's warm-up iterations, which compile and capture, time every shape first, so
the tuning time falls in the first iteration's figure, not in the timed samples.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable, Sequence
from typing import Any, TypeVar, cast

import torch

TIMED_CALLS = 5  # back-to-back calls per timing
TIMINGS = 3  # timings per candidate, the fastest kept

Name = TypeVar("Name", bound=Hashable)  # of one way to run a GEMM
_choices: dict[Hashable, Any] = {}
_timings: dict[Hashable, dict[Hashable, float]] = {}


def call_times(run: Callable[[], object], calls: int, timings: int, warmups: int = 1) -> list[float]:
    """Milliseconds per call of ``run`` in each of ``timings`` CUDA-event timings of ``calls`` calls in a
    row, after ``warmups`` calls."""
    for _ in range(warmups):
        run()
    times = []
    for _ in range(timings):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(calls):
            run()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / calls)
    return times


def fastest(key: Hashable, names: Sequence[Name], run: Callable[[Name], object]) -> Name:
    """The fastest of the ways ``names`` (``run(name)`` runs one) to run the GEMM ``key`` describes:
    each is timed at the key's first call outside CUDA-graph capture (the fastest of ``TIMINGS``
    timings of ``TIMED_CALLS`` calls); during capture of a key not yet timed, the first name."""
    if key in _choices:
        return cast(Name, _choices[key])
    if torch.cuda.is_current_stream_capturing():
        return names[0]
    torch.cuda.synchronize()
    times: dict[Hashable, float] = {}
    for name in names:
        times[name] = min(call_times(functools.partial(run, name), TIMED_CALLS, TIMINGS))
    choice = min(names, key=lambda name: times[name])
    _choices[key], _timings[key] = choice, times
    return choice


def choices() -> dict[Hashable, Any]:
    """Each timed key's chosen way, as ``fastest`` returns it for the rest of the process."""
    return dict(_choices)


def timings() -> dict[Hashable, dict[Hashable, float]]:
    """Each timed key's candidates and their milliseconds per call, in the order they were timed."""
    return {key: dict(times) for key, times in _timings.items()}
