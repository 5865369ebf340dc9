"""What one case's run measured: plain figures (no torch), read by the gate, the verdict and the reports."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Measurement:
    """Everything one case's run measured."""

    samples_ms: list[float]  # time per timed iteration
    reader_ms: list[float]  # host wait for each timed iteration's batch
    losses: list[float]  # training loss of every iteration, warm-up included
    metric: float  # held-out metric after training
    initial_metric: float  # held-out metric of the untrained model
    peak_memory_bytes: int | None  # warm-up included: CUDA graph pools are allocated there
    warmup_s: float  # warm-up wall time, compile and autotune included
    first_step_s: float  # wall time of the first warm-up iteration: compilation shows here
    samples_per_iteration: int
    flops_per_iteration: float | None
    iters: int
    warmup: int
    clocks: dict[str, Any] = field(default_factory=dict)
    sample_unit: str = "samples"
    communication: dict[str, Any] | None = None  # data-parallel cases: processes, all-reduce, overlap

    def per_second(self, amount: float, median_ms: float) -> float:
        """``amount`` done per iteration, per second at the median iteration time."""
        return amount / (median_ms / 1000.0)
