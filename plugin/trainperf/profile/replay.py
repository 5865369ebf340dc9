"""The child side of profiling: the case in a fresh process, warmed up, then exactly one marked iteration.

The marked iteration runs between ``cudaProfilerStart`` and ``cudaProfilerStop`` inside the NVTX range
``trainperf_iteration`` (so nsys and ncu capture only it), its phases as NVTX ranges; with ``torch`` the
iteration also runs under ``torch.profiler`` and its trace is written as ``trace.json`` (opens in Perfetto).
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import torch

from trainperf.case import Optimization
from trainperf.phases import phase_marker, recorded
from trainperf.profile.child import MARK
from trainperf.runner import float32_matmuls, prepare, seed_everything, synchronize
from trainperf.workload import Workload

TRACE = "trace.json"
CHILD_INFO = "child.json"


def run_marked_iteration(
    workload: Workload,
    optimization: Optimization,
    device: torch.device,
    size: str,
    warmup: int,
    out_dir: Path,
    torch_profiler: bool,
) -> None:
    """Warm up ``max(warmup, 2)`` iterations, then profile one; writes ``child.json`` (and the trace)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    seed_everything()
    mark = phase_marker(device)
    with float32_matmuls(optimization.tf32):
        case = prepare(workload, optimization, device, size, recorded(mark) if torch_profiler else mark)
        for _ in range(max(warmup, 2)):
            case.step(case.fetch()[0])
        synchronize(device)
        profiler = _torch_profiler(device) if torch_profiler else contextlib.nullcontext()
        with profiler as active:
            _cuda_profiler(device, start=True)
            with mark(MARK), torch.profiler.record_function(MARK):
                case.step(case.fetch()[0])
                synchronize(device)
            _cuda_profiler(device, start=False)
        if active is not None:
            active.export_chrome_trace(str(out_dir / TRACE))
    info = {"samples_per_iteration": case.training.samples_per_iteration, "device": str(device)}
    (out_dir / CHILD_INFO).write_text(json.dumps(info), encoding="utf-8")


def _torch_profiler(device: torch.device) -> torch.profiler.profile:
    activities = [torch.profiler.ProfilerActivity.CPU]
    if device.type == "cuda":
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    return torch.profiler.profile(activities=activities, record_shapes=False)


def _cuda_profiler(device: torch.device, start: bool) -> None:
    if device.type == "cuda" and start:
        torch.cuda.profiler.start()
    elif device.type == "cuda":
        torch.cuda.profiler.stop()
