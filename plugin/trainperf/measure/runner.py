"""Train one case: build, apply the optimization, warm up, then time N iterations (``timing.py``); the
held-out metric before and after, peak memory, the GPU's clocks around the timed run, and the host's
calls per iteration in a few more (``host_work.py``).
"""

from __future__ import annotations

import gc
import random
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from trainperf.measure import compile_counts, host_speed, host_work, work
from trainperf.measure import device as devices
from trainperf.measure.flops import count_flops
from trainperf.measure.host_steal import StealWatch
from trainperf.measure.measurement import Measurement
from trainperf.measure.phases import PhaseRanges, phase_marker
from trainperf.measure.steps import autocast, backend_settings, fetcher, prepare_model, stepper, unapplied_knobs
from trainperf.measure.timing import PhaseClock, synchronize, timed, warm_up
from trainperf.spec.case import CaseSpec
from trainperf.spec.optimization import Optimization
from trainperf.spec.workload import Batch, Training

SEED = 0


def seed_everything(seed: int = SEED) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def run_case(spec: CaseSpec, then: Callable[[Prepared], None] | None = None, trace: Path | None = None) -> Measurement:
    """Train ``warmup + iters`` iterations of the case and measure the last ``iters``; ``then(case)``
    runs after everything is measured (``--perf-memory-snapshot`` records one more iteration there). With
    ``trace``, the iterations that count the work leave their torch.profiler trace there (``work.count``).
    A data-parallel case runs this in every process; each trains its own slice of every batch."""
    seed_everything()
    try:
        with backend_settings(spec.optimization):
            return _run(spec, then, trace)
    finally:  # here, not in _run: its frame would still hold the model, its optimizer and its batches
        free_memory(spec.device)


@dataclass
class Prepared:
    """A case built and ready to step: ``step(fetch()[0])`` trains one iteration."""

    training: Training
    model: torch.nn.Module
    fetch: Callable[[], tuple[Batch, float]]
    step: Callable[[Batch], torch.Tensor]
    phases: PhaseRanges  # the phases' NVTX ranges; torch.profiler ranges too once switched on


def prepare(spec: CaseSpec) -> Prepared:
    """Build the case and apply its optimization (call inside ``backend_settings``)."""
    optimization, device = spec.optimization, spec.device
    training = spec.workload.build(device, spec.size, optimization)
    model = prepare_model(training, device, optimization)
    phases = PhaseRanges(phase_marker(device))
    fetch = fetcher(iter(training.batches), device, optimization, phases)
    return Prepared(training, model, fetch, stepper(training, model, device, optimization, phases), phases)


def _run(spec: CaseSpec, then: Callable[[Prepared], None] | None, trace: Path | None) -> Measurement:
    optimization, device, warmup, iters = spec.optimization, spec.device, spec.warmup, spec.iters
    phase = PhaseClock()
    compile_counts.start()
    with phase("build"):
        case = prepare(spec)
        training, model, fetch, step = case.training, case.model, case.fetch, case.step
    counted_flops = None
    if training.step is None:  # a training step: its FLOPs are work the gate counts, and MFU's where undeclared
        with phase("flops"):
            counted_flops = count_flops(model, training.loss, fetch()[0])
    flops = training.flops_per_iteration
    if flops is None and counted_flops is not None:
        flops = float(counted_flops.total)
    with phase("evaluate"):
        initial_metric = _evaluate(training, model, device, optimization)
    losses: list[torch.Tensor] = []
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    with phase("warmup"):
        warmup_s, first_step_s = warm_up(step, fetch, losses, warmup, device)
    host_us = host_speed.dispatch_us(device)
    clocks_before = devices.clock_state(device)
    with phase("timed"), devices.ClockWatch(device) as watch, StealWatch() as steal:
        samples_ms, reader_ms = timed(step, fetch, losses, iters, device)
    peak = torch.cuda.max_memory_allocated(device) if device.type == "cuda" else None
    clocks_after = devices.clock_state(device)
    with phase("evaluate"):
        metric = _evaluate(training, model, device, optimization)
    with phase("count"):
        calls = host_work.calls_per_iteration(step, fetch)
        synchronize(device)  # the counted iterations' GPU work ends here, not in what runs next
        marked = None if trace is None else (trace, case.phases)
        counted = None if _gloo_rank() else work.count(step, fetch, device, trace=marked)
    extra_counts = {**(counted_flops.as_dict() if counted_flops else {}), **(compile_counts.read() or {})}
    if then is not None:
        then(case)
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
        clocks={"before": clocks_before, "during": _during(watch, steal, host_us), "after": clocks_after},
        sample_unit=training.sample_unit,
        fp8_flop_share=training.fp8_flop_share,
        host_calls=[calls.total],
        host_step_calls=[calls.step],
        host_fetch_calls=list(calls.fetches),
        work=[] if counted is None else [{**counted.as_dict(), **extra_counts}],
        phase_s=phase.seconds,
        unapplied=unapplied_knobs(training, device, optimization),
    )


def _gloo_rank() -> bool:
    """A data-parallel rank on the CPU counts no work: profiling beside gloo's threads corrupted a rank's
    heap there. NCCL ranks on GPUs profile an iteration for their communication figures too."""
    return torch.distributed.is_initialized() and torch.distributed.get_backend() == "gloo"


def _during(watch: devices.ClockWatch, steal: StealWatch, host_us: float) -> dict[str, object]:
    """What was seen while the iterations were timed: the GPU's clocks, the host's steal (of all cores,
    and of the cores the timing thread ran on), the share of this machine's CPU time that processes
    the case did not start used, and how fast the host issued an op just before (``host_speed``)."""
    during: dict[str, object] = {**(watch.summary() or {}), "host_dispatch_us": host_us}
    if steal.share is not None:
        during["host_steal_share"] = steal.share
    if steal.thread_share is not None:
        during["thread_steal_share"] = steal.thread_share
    if steal.others_share is not None:
        during["other_processes_share"] = steal.others_share
    return during


def free_memory(device: torch.device) -> None:
    """Free what the finished case left: unreferenced objects, what torch.compile keeps (its compiled code
    holds the model; CUDA graph trees hold their memory pool), then the CUDA cache."""
    if "torch._dynamo" in sys.modules:  # loaded only where something was compiled
        torch._dynamo.reset()
    if "torch._inductor.cudagraph_trees" in sys.modules:  # whether this torch's reset above does it or not
        from torch._inductor.cudagraph_trees import reset_cudagraph_trees

        reset_cudagraph_trees()
    gc.collect()  # once, after the resets: what they held is unreferenced now too
    if device.type == "cuda":
        torch.cuda.empty_cache()


def _evaluate(training: Training, model: torch.nn.Module, device: torch.device, optimization: Optimization) -> float:
    model.eval()
    try:
        with torch.no_grad(), autocast(device, optimization):
            value = training.evaluate(model)
    finally:
        model.train()
    try:
        return float(value)
    except (TypeError, ValueError):
        shown = repr(value)[:80]
        raise TypeError(f"evaluate() returned {shown}, not a number: it must return the held-out metric") from None
