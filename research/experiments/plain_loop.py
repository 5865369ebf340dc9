"""Is the runner's time the step's time? A pytest plugin that, after the plugin has measured a case as
usual, builds the case again in the same process and times it in blocks of the case's iterations,
alternating (ABCCBA, ``PLAIN_LOOP_ROUNDS`` times) between:

- ``plain``: the same model, optimizer, batches and step, with CUDA events around each iteration and
  nothing else (no NVTX ranges, no watcher threads);
- ``runner``: the runner's timed window: its NVTX phase ranges, its NVML clock watch and its host-steal
  watch, around the same timing;
- ``no_gc``: the plain loop with Python's garbage collector off, to see whether collections of a large
  heap (a test process that has run other cases) cost time.

    PYTHONPATH=research/experiments PYTEST_ADDOPTS="-p plain_loop" PLAIN_LOOP_OUT=rows.jsonl pytest NODE...

Each case appends one JSON line to ``PLAIN_LOOP_OUT``: the plugin's median, its position in the process,
and every block's median, in order. Blocks in one process share its state, so their differences are the
instruments' cost; the plugin's median against them is what else the measuring process adds.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import statistics
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
from trainperf.hooks.fixture import TrainPerf
from trainperf.measure import device as devices
from trainperf.measure.host_steal import StealWatch
from trainperf.measure.phases import PhaseRanges, phase_marker
from trainperf.measure.runner import free_memory, seed_everything
from trainperf.measure.steps import backend_settings, fetcher, prepare_model, stepper
from trainperf.measure.timing import synchronize, timed, warm_up

KINDS = ("plain", "runner", "no_gc")
state = {"cases": 0}


def _no_range(name: str) -> contextlib.AbstractContextManager[None]:
    return contextlib.nullcontext()


@contextlib.contextmanager
def _window(kind: str, device: torch.device) -> Iterator[None]:
    if kind == "runner":
        with devices.ClockWatch(device), StealWatch():
            yield
    elif kind == "no_gc":
        gc.disable()
        try:
            yield
        finally:
            gc.enable()
    else:
        yield


def blocks(spec: Any, rounds: int) -> list[dict[str, Any]]:
    """Build the case once and time its iterations in alternating blocks."""
    seed_everything()
    device, optimization = spec.device, spec.optimization
    rows = []
    with backend_settings(optimization):
        training = spec.workload.build(device, spec.size, optimization)
        model = prepare_model(training, device, optimization)
        phases = PhaseRanges(_no_range)
        fetch = fetcher(iter(training.batches), device, optimization, phases)
        step = stepper(training, model, device, optimization, phases)
        losses: list[torch.Tensor] = []
        warm_up(step, fetch, losses, spec.warmup, device)
        order = [*KINDS, *reversed(KINDS)] * rounds
        for kind in order:
            phases.marker = phase_marker(device) if kind == "runner" else _no_range
            synchronize(device)
            start = time.perf_counter()
            with _window(kind, device):
                samples, _ = timed(step, fetch, losses, spec.iters, device)
            rows.append({"kind": kind, "median_ms": statistics.median(samples), "wall_s": time.perf_counter() - start})
            losses.clear()
        del training, model, fetch, step
    free_memory(device)
    return rows


def pytest_configure(config: pytest.Config) -> None:
    out = os.environ.get("PLAIN_LOOP_OUT")
    if not out:
        return
    rounds = int(os.environ.get("PLAIN_LOOP_ROUNDS", "2"))
    run = TrainPerf.run

    def measured_then_blocks(self: Any, workload: Any, optimization: Any, reference: Any = None) -> Any:
        if self.session.child is not None:  # a fresh process measuring for its parent: as usual
            return run(self, workload, optimization, reference=reference)
        state["cases"] += 1
        row: dict[str, Any] = {"case": f"{workload.name}/{optimization.name}", "position": state["cases"]}
        try:
            result = run(self, workload, optimization, reference=reference)
            row["plugin_median_ms"] = None if result is None else result.summary.median
            return result
        finally:
            spec = self._spec(workload, optimization)
            row["blocks"] = blocks(spec, rounds)
            for kind in KINDS:
                row[f"{kind}_ms"] = statistics.median(b["median_ms"] for b in row["blocks"] if b["kind"] == kind)
            with Path(out).open("a") as file:
                file.write(json.dumps(row) + "\n")

    TrainPerf.run = measured_then_blocks  # type: ignore[method-assign]
