"""NVTX ranges around the phases of an iteration (data, forward, backward, optimizer).

Uses the ``nvtx`` package when it is installed, else ``torch.cuda.nvtx``; on the CPU, no ranges.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager as ContextManager

import torch

PhaseMarker = Callable[[str], ContextManager[None]]


def _no_range(name: str) -> ContextManager[None]:
    return contextlib.nullcontext()


@contextlib.contextmanager
def _torch_range(name: str) -> Iterator[None]:
    torch.cuda.nvtx.range_push(name)
    try:
        yield
    finally:
        torch.cuda.nvtx.range_pop()


def nvtx_backend() -> str:
    """'nvtx' when the package imports, else 'torch.cuda.nvtx'."""
    try:
        import nvtx  # noqa: F401
    except ImportError:
        return "torch.cuda.nvtx"
    return "nvtx"


class PhaseRanges:
    """The phase marker of a case: NVTX ranges, plus ``torch.profiler.record_function`` ranges (which
    torch.profiler's trace shows) while ``for_torch_profiler`` is set, so timed iterations carry none."""

    def __init__(self, marker: PhaseMarker, for_torch_profiler: bool = False) -> None:
        self.marker = marker
        self.for_torch_profiler = for_torch_profiler

    @contextlib.contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        if not self.for_torch_profiler:
            with self.marker(name):
                yield
            return
        with self.marker(name), torch.profiler.record_function(name):
            yield


def phase_marker(device: torch.device) -> PhaseMarker:
    """A context-manager factory that marks a phase as an NVTX range on CUDA devices."""
    if device.type != "cuda":
        return _no_range
    if nvtx_backend() == "nvtx":
        import nvtx

        def _package_range(name: str) -> ContextManager[None]:
            range_: ContextManager[None] = nvtx.annotate(name)
            return range_

        return _package_range
    return _torch_range
