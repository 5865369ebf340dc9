"""The small interface every workload implements (workloads/ holds the suite's own).

A workload builds, for a device and a size, everything one training run needs; the runner applies
the generic optimizations (loader settings, copies, autocast, layout, compile) and times the steps.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import torch

from trainperf.spec.optimization import Metric, Optimization

TINY = "tiny"  # the CPU path: seconds per case
FULL = "full"  # the GPU path: the real size

Batch = tuple[torch.Tensor, ...]
__all__ = ["FULL", "TINY", "Batch", "Metric", "Training", "Workload", "loader_settings", "merge_options"]


@dataclass
class Training:
    """One built training run. ``loss`` computes the loss of a batch already on the device;
    ``evaluate`` returns the held-out metric of the current model. A workload whose iteration is not a
    training step (a kernel benchmark) gives that iteration as ``step`` and no optimizer: the runner
    times ``step(batch)`` and leaves loss and optimizer alone."""

    model: torch.nn.Module
    optimizer: torch.optim.Optimizer | None
    batches: Iterable[Batch]  # endless: a DataLoader over an endless sampler, for instance
    loss: Callable[[torch.nn.Module, Batch], torch.Tensor]
    evaluate: Callable[[torch.nn.Module], float]
    samples_per_iteration: int
    flops_per_iteration: float | None = None  # None: counted by the runner with FlopCounterMode
    sample_unit: str = "samples"  # what a sample is, for throughput figures: "images", "tokens"...
    step: Callable[[Batch], torch.Tensor] | None = None  # one iteration of a workload that does not train
    fp8_flop_share: float | None = None  # share of the model FLOPs in FP8 GEMMs; None: no FP8


class Workload(Protocol):
    name: str
    metric: Metric

    def iterations(self, size: str) -> tuple[int, int]:
        """(warm-up, timed) iterations by default for a size."""
        ...

    def build(self, device: torch.device, size: str, optimization: Optimization) -> Training:
        """Model, optimizer, data and metric for ``device`` at ``size`` (TINY or FULL)."""
        ...


def loader_settings(optimization: Optimization, device: torch.device) -> dict[str, object]:
    """DataLoader keyword arguments for an optimization's data-path knobs on ``device``:
    pinned batches only where there is a GPU to copy to."""
    workers = optimization.num_workers
    return {
        "num_workers": workers,
        "pin_memory": optimization.pin_memory and device.type == "cuda",
        "persistent_workers": workers > 0,
        "prefetch_factor": 4 if workers > 0 else None,
    }


def merge_options(defaults: Mapping[str, Any], given: Mapping[str, Any], case: str) -> dict[str, Any]:
    """A workload's ``options``: its defaults overridden by the case's; an unknown one is named."""
    unknown = set(given) - set(defaults)
    if unknown:
        raise ValueError(f"{case}: unknown workload options {sorted(unknown)}; known: {sorted(defaults)}")
    return {**defaults, **given}
