"""What one case's run measured: plain figures (no torch), read by the gate, the verdict and the reports."""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Callable, Sequence
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
    memory_snapshot: dict[str, Any] | None = None  # --perf-memory-snapshot: files and peak MiB by phase
    run_medians_ms: list[float] = field(default_factory=list)  # one per independent run; [] for one run
    fp8_flop_share: float | None = None  # share of the model FLOPs in FP8 GEMMs (MFU stays against bf16)
    host_calls: list[int] = field(default_factory=list)  # the host's calls per iteration, one per run
    host_step_calls: list[int] = field(default_factory=list)  # of those, the training step's (fetch left out)
    host_fetch_calls: list[int] = field(default_factory=list)  # each counted iteration's fetch, every run
    work: list[dict[str, Any]] = field(default_factory=list)  # the work counted per iteration, one per run
    # wall seconds of each phase of the (first) run: build, flops (its count, with the first batch's fetch),
    # evaluate (both held-out passes), warmup, timed, count; where a case's time in the session goes
    phase_s: dict[str, float] = field(default_factory=dict)
    unapplied: list[str] = field(default_factory=list)  # the case's knobs that changed nothing, each with why

    @property
    def gpu_busy_share(self) -> float | None:
        """The GPU's busy share while timed; None where not read (on the CPU)."""
        return (self.clocks.get("during") or {}).get("gpu_busy_share")

    def per_second(self, amount: float, median_ms: float) -> float:
        """``amount`` done per iteration, per second at the median iteration time."""
        return amount / (median_ms / 1000.0)


# how independent runs' readings while timed combine into one: the host's dispatch time by its median
# (a stall in one run says little of the host), the GPU's shares and means by their mean
TYPICAL: dict[str, Callable[[list[float]], float]] = {
    "host_dispatch_us": statistics.median,
    "gpu_busy_share": statistics.fmean,
    "mean_sm_clock_mhz": statistics.fmean,
    "mean_power_w": statistics.fmean,
}


def combined(runs: Sequence[Measurement]) -> Measurement:
    """Independent runs of one case (each built, warmed up and timed afresh) as one measurement: every
    timed iteration, each run's median and host calls; accuracy, losses and compile time of the first
    run, peak memory the highest, the clocks of the first run with every run's throttle reasons, the
    most host steal and CPU use by other processes, the median host dispatch time, and the mean GPU busy
    share, SM clock and power draw."""
    first = runs[0]
    readings = [reading for run in runs for reading in run.clocks.values() if reading]
    throttles = sorted({t for reading in readings for t in reading.get("throttle", [])})
    during = {**(first.clocks.get("during") or {}), "throttle": throttles}
    durings = [run.clocks.get("during") or {} for run in runs]
    for key in ("host_steal_share", "thread_steal_share", "other_processes_share"):
        shares = [reading[key] for reading in durings if key in reading]
        if shares:
            during[key] = max(shares)
    for key, typical in TYPICAL.items():
        values = [reading[key] for reading in durings if key in reading]
        if values:
            during[key] = typical(values)
    peaks = [run.peak_memory_bytes for run in runs if run.peak_memory_bytes is not None]
    return dataclasses.replace(
        first,
        samples_ms=[x for run in runs for x in run.samples_ms],
        reader_ms=[x for run in runs for x in run.reader_ms],
        peak_memory_bytes=max(peaks) if peaks else None,
        clocks={**first.clocks, "during": during, "after": runs[-1].clocks.get("after")},
        run_medians_ms=[statistics.median(run.samples_ms) for run in runs],
        host_calls=[calls for run in runs for calls in run.host_calls],
        host_step_calls=[calls for run in runs for calls in run.host_step_calls],
        host_fetch_calls=[calls for run in runs for calls in run.host_fetch_calls],
        work=[counted for run in runs for counted in run.work],
    )
