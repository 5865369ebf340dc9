"""The child side of profiling: the case in a fresh process, warmed up, then exactly one marked iteration,
for a tool that must run the process itself (nsys, ncu), or for the Top-5 where the test process's
counted iterations left no trace (``measure.work``). No profiler runs while the test process times.

The marked iteration runs between ``cudaProfilerStart`` and ``cudaProfilerStop`` inside the NVTX range
``trainperf_iteration`` (so nsys and ncu capture only it), its phases as NVTX ranges, and all of it inside
the range ``trainperf_case:<case>``: one child runs the marked iterations of several cases, each writing in
its case's folder. With ``torch`` the iteration also runs under ``torch.profiler`` and its trace is
written as ``trace.json`` (opens in Perfetto).
"""

from __future__ import annotations

import contextlib
import json
import time
from pathlib import Path

import torch

from trainperf.child.protocol import CASE_RANGE, CASE_STARTS, CHILD_INFO
from trainperf.measure.marks import MARK, TRACE
from trainperf.measure.runner import Prepared, free_memory, prepare, seed_everything
from trainperf.measure.steps import backend_settings
from trainperf.measure.timing import synchronize
from trainperf.spec.case import CaseSpec, case_folder


def run_marked_iteration(spec: CaseSpec, root: Path, torch_profiler: bool) -> None:
    """Warm up ``max(warmup, 2)`` iterations, then profile one; writes ``child.json`` (and the trace) in
    the case's folder under ``root``, then frees what the case held for the next one."""
    print(CASE_STARTS.format(key=spec.key), flush=True)  # the child's log, per case
    try:
        _warm_then_marked(spec, case_folder(root, spec.key), torch_profiler)
    finally:  # the case's model and tensors went with the call: gone before the child's next case is built
        free_memory(spec.device)


def _warm_then_marked(spec: CaseSpec, out_dir: Path, torch_profiler: bool) -> None:
    started = time.perf_counter()
    seed_everything()
    device = spec.device
    with backend_settings(spec.optimization):
        case = prepare(spec)
        for _ in range(max(spec.warmup, 2)):
            case.step(case.fetch()[0])
        synchronize(device)
        if device.type == "cuda":
            torch.cuda.empty_cache()  # ncu saves and restores the memory a replayed kernel may touch: less of it
        with _case_range(device, spec.key):
            marked_iteration(case, device, out_dir, torch_profiler, cuda_profiler=True)
    # the case's own part of the child (build, warm-up, the marked iteration and a profiler's replays of it)
    seconds = time.perf_counter() - started
    info = {"samples_per_iteration": case.training.samples_per_iteration, "device": str(device), "seconds": seconds}
    (out_dir / CHILD_INFO).write_text(json.dumps(info), encoding="utf-8")


def _case_range(device: torch.device, key: str) -> contextlib.AbstractContextManager[object]:
    """The NVTX range that names the case around its marked iteration (its launches' case in ncu's report)."""
    if device.type != "cuda":
        return contextlib.nullcontext()
    return torch.cuda.nvtx.range(CASE_RANGE.format(key=key))


def marked_iteration(
    case: Prepared, device: torch.device, out_dir: Path, torch_profiler: bool, cuda_profiler: bool
) -> None:
    """One iteration of a warm case inside the ``trainperf_iteration`` range (and, with ``cuda_profiler``,
    between cudaProfilerStart and Stop); with ``torch_profiler`` under torch.profiler, its trace written
    as ``trace.json``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    case.phases.for_torch_profiler = torch_profiler
    profiler = _torch_profiler(device) if torch_profiler else contextlib.nullcontext()
    try:
        with profiler as active:
            _cuda_profiler(device, start=True, enabled=cuda_profiler)
            with case.phases(MARK):
                case.step(case.fetch()[0])
                synchronize(device)
            _cuda_profiler(device, start=False, enabled=cuda_profiler)
    finally:
        case.phases.for_torch_profiler = False
    if active is not None:
        active.export_chrome_trace(str(out_dir / TRACE))


def _torch_profiler(device: torch.device) -> torch.profiler.profile:
    activities = [torch.profiler.ProfilerActivity.CPU]
    if device.type == "cuda":
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    return torch.profiler.profile(activities=activities, record_shapes=False)


def _cuda_profiler(device: torch.device, start: bool, enabled: bool) -> None:
    if not enabled or device.type != "cuda":
        return
    if start:
        torch.cuda.profiler.start()
    else:
        torch.cuda.profiler.stop()
