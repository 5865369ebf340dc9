"""Train one case: build, apply the optimization, warm up, then time N iterations.

On CUDA each iteration is timed with CUDA events recorded at its start (one synchronize at the end),
so a GPU left idle while the host waits for data counts in the iteration's time; on the CPU the same
marks are host clock readings. The host's wait for the next batch (reader_cost) is kept apart.
"""

from __future__ import annotations

import contextlib
import gc
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch.utils.flop_counter import FlopCounterMode

from trainperf import device as devices
from trainperf.case import Optimization
from trainperf.phases import PhaseMarker, PhaseRanges, phase_marker
from trainperf.workload import Batch, Training, Workload

SEED = 0


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


def seed_everything(seed: int = SEED) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def run_case(
    workload: Workload,
    optimization: Optimization,
    device: torch.device,
    size: str,
    warmup: int,
    iters: int,
    then: Callable[[Prepared], None] | None = None,
) -> Measurement:
    """Train ``warmup + iters`` iterations of ``optimization`` and measure the last ``iters``;
    ``then(case)`` runs after everything is measured (``--profile`` traces one more iteration there).
    A data-parallel case runs this in every process; each trains its own slice of every batch."""
    seed_everything()
    with backend_settings(optimization):
        return _run(workload, optimization, device, size, warmup, iters, then)


@dataclass
class Prepared:
    """A case built and ready to step: ``step(fetch()[0])`` trains one iteration."""

    training: Training
    model: torch.nn.Module
    fetch: Callable[[], tuple[Batch, float]]
    step: Callable[[Batch], torch.Tensor]
    phases: PhaseRanges  # the phases' NVTX ranges; torch.profiler ranges too once switched on


def prepare(workload: Workload, optimization: Optimization, device: torch.device, size: str) -> Prepared:
    """Build the case and apply its optimization (call inside ``backend_settings``)."""
    training = workload.build(device, size, optimization)
    model = _prepare_model(training.model, device, optimization)
    phases = PhaseRanges(phase_marker(device))
    fetch = _fetcher(iter(training.batches), device, optimization, phases)
    return Prepared(training, model, fetch, _stepper(training, model, device, optimization, phases), phases)


def _run(
    workload: Workload,
    optimization: Optimization,
    device: torch.device,
    size: str,
    warmup: int,
    iters: int,
    then: Callable[[Prepared], None] | None,
) -> Measurement:
    case = prepare(workload, optimization, device, size)
    training, model, fetch, step = case.training, case.model, case.fetch, case.step
    flops = training.flops_per_iteration
    if flops is None and training.step is None:
        flops = count_flops(model, training.loss, fetch()[0])
    initial_metric = _evaluate(training, model, device, optimization)
    losses: list[torch.Tensor] = []
    try:
        if device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(device)
        warmup_s, first_step_s = _warm_up(step, fetch, losses, warmup, device)
        clocks_before = devices.clock_state(device)
        with devices.ClockWatch(device) as watch:
            samples_ms, reader_ms = _timed(step, fetch, losses, iters, device)
        peak = torch.cuda.max_memory_allocated(device) if device.type == "cuda" else None
        clocks_after = devices.clock_state(device)
        metric = _evaluate(training, model, device, optimization)
        if then is not None:
            then(case)
    finally:
        del case, fetch
        release_memory(device)
    return Measurement(
        samples_ms=samples_ms,
        reader_ms=reader_ms,
        losses=[float(x) for x in torch.stack(losses).float().cpu()] if losses else [],
        metric=metric,
        initial_metric=initial_metric,
        peak_memory_bytes=peak,
        warmup_s=warmup_s,
        first_step_s=first_step_s,
        samples_per_iteration=training.samples_per_iteration,
        flops_per_iteration=flops,
        iters=iters,
        warmup=warmup,
        clocks={"before": clocks_before, "during": watch.summary(), "after": clocks_after},
        sample_unit=training.sample_unit,
    )


@contextlib.contextmanager
def backend_settings(optimization: Optimization) -> Iterator[None]:
    """While a case runs: TF32 tensor cores for float32 matmuls and convolutions, or strict float32;
    cuDNN's convolution autotuner on or off."""
    matmul, cudnn_tf32 = torch.get_float32_matmul_precision(), torch.backends.cudnn.allow_tf32
    benchmark = torch.backends.cudnn.benchmark
    torch.set_float32_matmul_precision("high" if optimization.tf32 else "highest")
    torch.backends.cudnn.allow_tf32 = optimization.tf32
    torch.backends.cudnn.benchmark = optimization.cudnn_benchmark
    try:
        yield
    finally:
        torch.set_float32_matmul_precision(matmul)
        torch.backends.cudnn.allow_tf32 = cudnn_tf32
        torch.backends.cudnn.benchmark = benchmark


def _prepare_model(model: torch.nn.Module, device: torch.device, optimization: Optimization) -> torch.nn.Module:
    model = model.to(device)
    if optimization.channels_last:
        model = model.to(memory_format=torch.channels_last)  # type: ignore[call-overload]
    if optimization.ddp is not None:
        from trainperf.distributed import data_parallel

        model = data_parallel(model, device, optimization.ddp)
    return model.train()


def _autocast(device: torch.device, optimization: Optimization) -> contextlib.AbstractContextManager[Any]:
    if optimization.amp_dtype is None:
        return contextlib.nullcontext()
    return torch.autocast(device.type, dtype=getattr(torch, optimization.amp_dtype))


def _fetcher(
    batches: Iterator[Batch], device: torch.device, optimization: Optimization, mark: PhaseMarker
) -> Callable[[], tuple[Batch, float]]:
    """Returns fetch() -> (batch on the device, seconds the host waited for it)."""

    def move(tensor: torch.Tensor) -> torch.Tensor:
        tensor = tensor.to(device, non_blocking=optimization.non_blocking)
        if optimization.channels_last and tensor.dim() == 4 and tensor.is_floating_point():
            tensor = tensor.contiguous(memory_format=torch.channels_last)
        return tensor

    slice_for_rank: Callable[[Batch], Batch] | None = None  # a data-parallel rank trains its own slice
    if optimization.ddp is not None:
        from trainperf.distributed import own_slice

        slice_for_rank = own_slice

    if optimization.prefetch and device.type == "cuda":
        from trainperf.prefetch import SideStreamCopies

        batches = SideStreamCopies(batches, device, move)  # already on the device: move() leaves them be

    def fetch() -> tuple[Batch, float]:
        with mark("data"):
            start = time.perf_counter()
            host_batch = next(batches)
            waited = time.perf_counter() - start
            if slice_for_rank is not None:
                host_batch = slice_for_rank(host_batch)
            return tuple(move(t) for t in host_batch), waited

    return fetch


def _stepper(
    training: Training, model: torch.nn.Module, device: torch.device, optimization: Optimization, mark: PhaseMarker
) -> Callable[[Batch], torch.Tensor]:
    """Returns step(batch) -> detached loss: forward, backward and optimizer, each an NVTX phase.

    With ``compile`` the loss function (model and loss together) is compiled; with accumulation the
    batch is split into micro-batches whose scaled gradients add up before one optimizer step.
    A workload with its own ``step`` (a kernel, no training) gets that, as the forward phase."""
    own_step = training.step
    if own_step is not None:

        def kernel_step(batch: Batch) -> torch.Tensor:
            with mark("forward"):
                return own_step(batch)

        return kernel_step
    optimizer = training.optimizer
    if optimizer is None:
        raise ValueError("a workload without an optimizer must give its own step")
    scaler = torch.amp.GradScaler(device.type) if optimization.grad_scaler else None
    loss_fn = training.loss
    if optimization.compile:
        mode = None if optimization.compile_mode == "default" else optimization.compile_mode
        loss_fn = torch.compile(training.loss, mode=mode)
    graphs = optimization.compile and optimization.compile_mode in ("reduce-overhead", "max-autotune")
    parts = optimization.accumulation_steps
    no_sync = getattr(model, "no_sync", None) if (optimization.ddp or {}).get("no_sync") else None

    def forward_backward(batch: Batch, last: bool = True) -> torch.Tensor:
        if graphs:
            torch.compiler.cudagraph_mark_step_begin()
        # DDP with no_sync: the gradients are all-reduced once, in the last micro-batch's backward
        unsynced = no_sync() if no_sync is not None and not last else contextlib.nullcontext()
        with unsynced:
            with mark("forward"), _autocast(device, optimization):
                loss = loss_fn(model, batch)
                if parts > 1:
                    loss = loss / parts
            with mark("backward"):
                (scaler.scale(loss) if scaler else loss).backward()
        return loss.detach().clone() if graphs else loss.detach()

    def step(batch: Batch) -> torch.Tensor:
        if parts == 1:
            loss = forward_backward(batch)
        else:
            micro_batches = list(zip(*(t.chunk(parts) for t in batch), strict=True))
            last = len(micro_batches) - 1
            loss = torch.stack([forward_backward(tuple(m), i == last) for i, m in enumerate(micro_batches)]).sum()
        with mark("optimizer"):
            if scaler:
                scaler.step(optimizer)
                scaler.update()
            else:
                optimizer.step()
            optimizer.zero_grad(set_to_none=True)
        if optimization.sync_every_step:
            loss.item()  # what a loop that logs every step's loss does
        return loss

    return step


def _warm_up(
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


def _timed(
    step: Callable[[Batch], torch.Tensor],
    fetch: Callable[[], tuple[Batch, float]],
    losses: list[torch.Tensor],
    iters: int,
    device: torch.device,
) -> tuple[list[float], list[float]]:
    """Per-iteration milliseconds (start-to-start marks) and host data waits."""
    marks = _marks(device, iters + 1)
    reader_ms = []
    for i in range(iters):
        marks.record(i)
        batch, waited = fetch()
        reader_ms.append(waited * 1000.0)
        losses.append(step(batch))
    marks.record(iters)
    synchronize(device)
    return marks.intervals_ms(), reader_ms


class _HostMarks:
    def __init__(self, count: int) -> None:
        self.times = [0.0] * count

    def record(self, i: int) -> None:
        self.times[i] = time.perf_counter()

    def intervals_ms(self) -> list[float]:
        return [(b - a) * 1000.0 for a, b in zip(self.times, self.times[1:], strict=False)]


class _CudaMarks:
    def __init__(self, count: int) -> None:
        self.events = [torch.cuda.Event(enable_timing=True) for _ in range(count)]

    def record(self, i: int) -> None:
        self.events[i].record()

    def intervals_ms(self) -> list[float]:
        return [a.elapsed_time(b) for a, b in zip(self.events, self.events[1:], strict=False)]


def _marks(device: torch.device, count: int) -> _HostMarks | _CudaMarks:
    return _CudaMarks(count) if device.type == "cuda" else _HostMarks(count)


def release_memory(device: torch.device) -> None:
    """Free what the finished case left: unreferenced objects, then the CUDA cache."""
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _evaluate(training: Training, model: torch.nn.Module, device: torch.device, optimization: Optimization) -> float:
    model.eval()
    try:
        with torch.no_grad(), _autocast(device, optimization):
            return float(training.evaluate(model))
    finally:
        model.train()


def count_flops(
    model: torch.nn.Module, loss_fn: Callable[[torch.nn.Module, Batch], torch.Tensor], batch: Batch
) -> float:
    """FLOPs of one forward + backward on ``batch`` (matmul and convolution), counted by PyTorch."""
    counter = FlopCounterMode(display=False)
    with counter:
        loss_fn(model, batch).backward()
    model.zero_grad(set_to_none=True)
    return float(counter.get_total_flops())
