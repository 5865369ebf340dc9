"""Choose the fastest of several ways to run a GEMM of one shape by timing each on the GPU at its first
call, and remember the choice for the process's later calls (as Inductor's autotuning does for its
kernels, but among cuBLAS's own algorithms).

Timing happens outside CUDA-graph capture only: a call captured before its shape was timed runs the
first candidate. Training's warm-up iterations, which compile and capture, time every shape first, so
the tuning time falls in the first iteration's figure, not in the timed samples.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping

import torch

TIMED_CALLS = 5  # back-to-back calls per timing
TIMINGS = 3  # timings per candidate, the fastest kept

_choices: dict[Hashable, Hashable] = {}
_timings: dict[Hashable, dict[Hashable, float]] = {}


def _milliseconds(run: Callable[[], object]) -> float:
    """One call's time: the fastest of ``TIMINGS`` timings of ``TIMED_CALLS`` calls in a row."""
    run()
    times = []
    for _ in range(TIMINGS):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(TIMED_CALLS):
            run()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / TIMED_CALLS)
    return float(min(times))


def fastest(key: Hashable, candidates: Mapping[Hashable, Callable[[], object]]) -> Hashable:
    """The name of the fastest of ``candidates`` (name -> a call running it) for the GEMM ``key``
    describes, timed at the key's first call outside CUDA-graph capture; during capture of a key not
    yet timed, the first candidate."""
    if key in _choices:
        return _choices[key]
    if torch.cuda.is_current_stream_capturing():
        return next(iter(candidates))
    torch.cuda.synchronize()
    times = {name: _milliseconds(run) for name, run in candidates.items()}
    _choices[key] = min(times, key=lambda name: times[name])
    _timings[key] = times
    return _choices[key]


def timings() -> dict[Hashable, dict[Hashable, float]]:
    """Each timed key's candidates and their milliseconds per call, in the order they were timed."""
    return {key: dict(times) for key, times in _timings.items()}
