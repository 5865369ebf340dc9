"""Detection power on a GPU: one case of the suite or of the examples made slower by extra work of
known duration, on the GPU (GPU-bound cases) or on the host (host-bound ones).

Run on a GPU machine with a baseline folder (``TRUST_RECORD=1 research/studies/trust_runs.sh`` records one):

    TRAINPERF_SLOWED_CASE=gpt2/amp_bf16 TRAINPERF_BASELINE_DIR=DIR pytest research/studies/slowed_case.py \
        --perf-confirmations=1000 --junitxml=J
    TRAINPERF_SLOWED_CASE=bert/reference,gpt2/tf32 ...     # several cases, one after the other
    TRAINPERF_SLOWED_CASE=lstm_lm/amp_bf16 TRAINPERF_SLOWED_ON=host TRAINPERF_SLOWDOWNS=0.1 ...
    TRAINPERF_SLOWED_CASE=gpt2/stack_fp8 TRAINPERF_SLOWED_GPU_WORK=gemm TRAINPERF_SLOWDOWNS=0,0.05 ...
    TRAINPERF_SLOWED_CASE=lstm_lm/reference TRAINPERF_SLOWED_ON=host TRAINPERF_SLOWED_HOST_WORK=ops ...

``--perf-confirmations=1000`` measures every catch again, as a nightly run does for the few cases that
regressed; the default (10 a session) would leave the later catches of a long study on their first
measurement.

Each item trains the case with extra work after every optimizer step, sized to a fraction of the case's
stored median and timed here first: a spin of one SM (``torch.cuda._sleep``), bfloat16 GEMMs on every SM
(``TRAINPERF_SLOWED_GPU_WORK=gemm``, for cases at the power cap, where a spin that draws little power may
be hidden), a busy loop of the main thread, or more tiny GPU ops issued by it
(``TRAINPERF_SLOWED_HOST_WORK=ops``, as a lost fusion adds). A slowdown of 0 measures the case unslowed on
the same machine, to tell what the extra work added. A data-parallel case (two GPUs) runs the work in each
of its ranks. The gate judges each run against the baseline as it would any case.
``research/studies/trust_table.py`` counts how often a slowdown was caught from the JUnit file.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
import torch
import trainperf
from trainperf import TrainPerf

from research.studies.study_cases import find_case

SLOWDOWNS = tuple(float(x) for x in os.environ.get("TRAINPERF_SLOWDOWNS", "0.03,0.05,0.10").split(","))
RUNS = int(os.environ.get("TRAINPERF_SLOWED_RUNS", "10"))
CASES = tuple(os.environ.get("TRAINPERF_SLOWED_CASE", "gpt2/amp_bf16").split(","))
ON_HOST = os.environ.get("TRAINPERF_SLOWED_ON", "gpu") == "host"
GPU_WORK = os.environ.get("TRAINPERF_SLOWED_GPU_WORK", "spin")
HOST_WORK = os.environ.get("TRAINPERF_SLOWED_HOST_WORK", "busy")
SPIN_CYCLES = 20_000_000  # the spin whose duration gives the GPU's cycles per millisecond
GEMM_SIZE = 4096  # a bfloat16 GEMM of a fraction of a millisecond: the work comes in fine steps


# The kinds of extra work are plain picklable objects: a data-parallel case's ranks are spawned processes,
# which receive the slowed workload, and its work, by pickling. Operands live on the process's current GPU.


@dataclass(frozen=True)
class BusyWait:
    """Keeps the main thread busy for ``ms`` milliseconds, as slower host code in the step would."""

    ms: float

    def __call__(self) -> None:
        end = time.perf_counter() + self.ms / 1e3
        while time.perf_counter() < end:
            pass


@dataclass(frozen=True)
class HostOps:
    """``count`` tiny in-place ops on the GPU, each issued by the host, as a lost fusion adds."""

    count: int

    def __call__(self) -> None:
        tensor = gpu_operand(1)
        for _ in range(self.count):
            tensor.add_(1.0)


@dataclass(frozen=True)
class Spin:
    """Keeps one SM waiting ``cycles`` cycles (``torch.cuda._sleep``): GPU time that draws little power."""

    cycles: int

    def __call__(self) -> None:
        torch.cuda._sleep(self.cycles)


@dataclass(frozen=True)
class Gemms:
    """``count`` bfloat16 GEMMs of ``GEMM_SIZE`` on every SM, drawing power as the training's own do."""

    count: int

    def __call__(self) -> None:
        operand = gpu_operand(GEMM_SIZE)
        for _ in range(self.count):
            torch.mm(operand, operand)


@functools.cache
def _operand(size: int, device: int) -> torch.Tensor:
    return torch.randn(size, size, device=torch.device("cuda", device), dtype=torch.bfloat16)


def gpu_operand(size: int) -> torch.Tensor:
    """A ``size`` x ``size`` bfloat16 tensor on this process's current GPU, made once."""
    return _operand(size, torch.cuda.current_device())


def host_ops(ms: float) -> HostOps:
    """Tiny GPU ops, as many as the host issues in about ``ms`` milliseconds (timed here)."""
    HostOps(100)()
    torch.cuda.synchronize()
    start = time.perf_counter()
    HostOps(1000)()
    op_ms = time.perf_counter() - start  # per op, in ms: 1000 ops in s
    torch.cuda.synchronize()
    return HostOps(max(1, round(ms / op_ms)))


def host_work(ms: float) -> tuple[Callable[[], None], str]:
    """Host-side work of about ``ms`` milliseconds after every step: a busy loop, or tiny GPU ops."""
    if HOST_WORK == "busy":
        return BusyWait(ms), "host (busy loop)"
    if HOST_WORK == "ops":
        work = host_ops(ms)
        return work, f"host ({work.count} ops)"
    raise ValueError(f"TRAINPERF_SLOWED_HOST_WORK={HOST_WORK!r}: choose busy or ops")


@dataclass
class Slowed:
    """The workload with ``extra`` work run after every optimizer step, at the end of the iteration;
    a kernel benchmark, which has no optimizer, runs it after its ``step``."""

    workload: Any
    extra: Callable[[], None]

    def __getattr__(self, name: str) -> Any:
        if name == "workload":  # not set yet: a copy being unpickled in a data-parallel rank
            raise AttributeError(name)
        return getattr(self.workload, name)

    def build(self, device: torch.device, size: str, optimization: Any) -> Any:
        training = self.workload.build(device, size, optimization)
        extra = self.extra
        if training.optimizer is None:
            return dataclasses.replace(training, step=then(training.step, extra))
        training.optimizer.register_step_post_hook(lambda *_: extra())
        return training


def then(step: Callable[[Any], Any], extra: Callable[[], None]) -> Callable[[Any], Any]:
    """``step``, followed by ``extra`` before its result is returned."""

    def slowed(batch: Any) -> Any:
        result = step(batch)
        extra()
        return result

    return slowed


def gpu_ms(work: Callable[[], None], repeats: int = 5) -> float:
    """Median milliseconds of ``work`` on the GPU, timed with CUDA events after one untimed call."""
    work()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        work()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


class GpuWork:
    """Extra GPU work of a chosen duration. ``spin`` keeps one SM waiting (``torch.cuda._sleep``) and
    draws little power; ``gemm`` multiplies bfloat16 matrices on every SM and draws power as the
    training's own GEMMs do, for cases that run at the power cap, where a spin may be hidden."""

    def __init__(self, kind: str) -> None:
        if kind not in ("spin", "gemm"):
            raise ValueError(f"TRAINPERF_SLOWED_GPU_WORK={kind!r}: choose spin or gemm")
        self.kind = kind
        self.unit_ms = gpu_ms(Gemms(1) if kind == "gemm" else Spin(SPIN_CYCLES))

    def sized(self, ms: float) -> tuple[Callable[[], None], float]:
        """Work of about ``ms`` milliseconds, and its duration as measured here: a whole number of
        GEMMs, or a spin of the matching cycle count."""
        if self.kind == "gemm":
            count = round(ms / self.unit_ms)
            return Gemms(count), count * self.unit_ms
        cycles = int(SPIN_CYCLES * ms / self.unit_ms)
        return Spin(cycles), cycles / SPIN_CYCLES * self.unit_ms


@pytest.fixture(scope="module")
def gpu_work() -> GpuWork:
    """The chosen kind of extra GPU work, its duration per unit measured once on this GPU."""
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU: the slowed cases train on it")
    return GpuWork(GPU_WORK)


def stored_median_ms(case: str) -> float:
    """The median of ``case``'s stored samples on this GPU; skips the test where none is stored."""
    path = trainperf.baseline_file(os.environ.get("TRAINPERF_BASELINE_DIR", "baselines"), "cuda")
    stored = trainperf.read_baselines(path).get(case)
    if stored is None:
        pytest.skip(f"no baseline of {case} in {path}: record one with --update-baselines")
    return statistics.median(stored["samples_ms"])


@pytest.mark.parametrize("run", range(RUNS))
@pytest.mark.parametrize("slowdown", SLOWDOWNS, ids=lambda s: f"{s:.0%}")
@pytest.mark.parametrize("case", CASES)
def test_slowed(
    trainperf: TrainPerf, record_property: Any, gpu_work: GpuWork, case: str, slowdown: float, run: int
) -> None:
    ladder, optimization = find_case(case)
    extra_ms = slowdown * stored_median_ms(case)
    if ON_HOST:
        (extra, where) = host_work(extra_ms)
    else:
        (extra, extra_ms), where = gpu_work.sized(extra_ms), f"gpu ({gpu_work.kind})"
    record_property("trainperf_slowdown", slowdown)
    record_property("trainperf_spin_ms", round(extra_ms, 4))  # the extra work's duration, of any kind
    record_property("trainperf_slowed_on", where)
    trainperf.run(workload_for(ladder.workload, slowdown, extra), optimization, reference=ladder.reference)


def workload_for(workload: Any, slowdown: float, extra: Callable[[], None]) -> Any:
    """The workload slowed by ``extra``; unslowed (``slowdown`` 0), the workload itself: a wrapper's own
    calls (3 an iteration) would count as host work of a case that makes 56 (a transpose kernel's)."""
    return workload if slowdown == 0 else Slowed(workload, extra)
