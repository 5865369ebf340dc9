"""Timing a case's iterations: warm-up wall time, then start-to-start marks of each timed iteration (CUDA
events on a GPU, so a GPU idle while the host waits for data counts; host clock readings on the CPU)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import torch

from trainperf.spec.workload import Batch


class PhaseClock:
    """Wall seconds of each named phase of a case's run, summed where a phase runs twice (the held-out
    metric before and after training): where a case's time in a session goes."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - start


def warm_up(
    step: Callable[[Batch], torch.Tensor],
    fetch: Callable[[], tuple[Batch, float]],
    losses: list[torch.Tensor],
    warmup: int,
    device: torch.device,
) -> tuple[float, float]:
    """(warm-up seconds, first iteration's seconds); the first iteration holds compilation."""
    start = time.perf_counter()
    first = 0.0
    for i in range(warmup):
        losses.append(step(fetch()[0]))
        if i == 0:
            synchronize(device)
            first = time.perf_counter() - start
    synchronize(device)
    return time.perf_counter() - start, first


def timed(
    step: Callable[[Batch], torch.Tensor],
    fetch: Callable[[], tuple[Batch, float]],
    losses: list[torch.Tensor],
    iters: int,
    device: torch.device,
) -> tuple[list[float], list[float]]:
    """Per-iteration milliseconds (start-to-start marks) and host data waits."""
    iteration_marks = marks(device, iters + 1)
    reader_ms = []
    for i in range(iters):
        iteration_marks.record(i)
        batch, waited = fetch()
        reader_ms.append(waited * 1000.0)
        losses.append(step(batch))
    iteration_marks.record(iters)
    synchronize(device)
    return iteration_marks.intervals_ms(), reader_ms


class HostMarks:
    def __init__(self, count: int) -> None:
        self.times = [0.0] * count

    def record(self, i: int) -> None:
        self.times[i] = time.perf_counter()

    def intervals_ms(self) -> list[float]:
        return [(b - a) * 1000.0 for a, b in zip(self.times, self.times[1:], strict=False)]


class CudaMarks:
    def __init__(self, count: int) -> None:
        self.events = [torch.cuda.Event(enable_timing=True) for _ in range(count)]

    def record(self, i: int) -> None:
        self.events[i].record()

    def intervals_ms(self) -> list[float]:
        return [a.elapsed_time(b) for a, b in zip(self.events, self.events[1:], strict=False)]


def marks(device: torch.device, count: int) -> HostMarks | CudaMarks:
    return CudaMarks(count) if device.type == "cuda" else HostMarks(count)


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
