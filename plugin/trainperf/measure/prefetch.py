"""Batches copied to the GPU one step ahead on a side CUDA stream (the ``prefetch`` knob): the copy of
the next batch overlaps the computation of this one instead of standing in front of it."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import torch

from trainperf.spec.workload import Batch


class SideStreamCopies:
    """Iterates device batches; each was copied on a side stream while the previous one computed."""

    def __init__(self, batches: Iterator[Batch], device: torch.device, move: Callable[[torch.Tensor], torch.Tensor]):
        self.batches, self.device, self.move = batches, device, move
        self.stream = torch.cuda.Stream(device)
        self.ahead = self._copy_next()

    def _copy_next(self) -> Batch:
        host = next(self.batches)
        with torch.cuda.stream(self.stream):
            return tuple(self.move(tensor) for tensor in host)

    def __iter__(self) -> SideStreamCopies:
        return self

    def __next__(self) -> Batch:
        compute = torch.cuda.current_stream(self.device)
        compute.wait_stream(self.stream)  # the batch's copy is done before its compute reads it
        batch = self.ahead
        for tensor in batch:
            tensor.record_stream(compute)  # its memory is not reused while the compute stream needs it
        self.ahead = self._copy_next()
        return batch
