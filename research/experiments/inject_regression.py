"""A pytest plugin that slows every case of a run the way a code change would, to prove that the gate
catches it: ``PYTEST_ADDOPTS="-p inject_regression" INJECT=spin pytest ...`` with this folder on
``PYTHONPATH`` (fresh-process runs inherit both).

After every optimizer step (``torch.optim``'s global step hook), by ``INJECT``:
- ``spin``: a GPU-side spin (``torch.cuda._sleep``) of ``INJECT_SHARE`` (default 5%) of the case's
  recorded GPU kernel time per iteration;
- ``ops``: that share more ATen ops than the case recorded (``t = t + 1`` on a small tensor);
- ``sync``: one host-device synchronization (``.item()`` of a device tensor).

The recorded figures are read from the baseline file in ``INJECT_BASELINES``.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import pytest
import torch
from torch.optim.optimizer import register_optimizer_step_post_hook

state: dict[str, Any] = {"spin_cycles": 0, "ops": 0, "sync": False, "cycles_per_ms": None}


def cycles_per_ms() -> float:
    """The GPU's spin cycles per millisecond, timed once with CUDA events."""
    if state["cycles_per_ms"] is None:
        cycles = 20_000_000
        torch.cuda._sleep(cycles)  # warm
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        torch.cuda._sleep(cycles)
        end.record()
        end.synchronize()
        state["cycles_per_ms"] = cycles / start.elapsed_time(end)
    return float(state["cycles_per_ms"])


def after_step(optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
    device = next(p.device for group in optimizer.param_groups for p in group["params"])
    if state["spin_cycles"]:
        torch.cuda._sleep(state["spin_cycles"])
    if state["ops"]:
        t = torch.zeros(4, device=device)
        for _ in range(state["ops"]):
            t = t + 1
    if state["sync"]:
        torch.ones(1, device=device).item()


def pytest_configure(config: pytest.Config) -> None:
    kind = os.environ.get("INJECT")
    if not kind:
        return
    from trainperf import TrainPerf

    stored = json.loads(Path(os.environ["INJECT_BASELINES"]).read_text())["cases"]
    share = float(os.environ.get("INJECT_SHARE", "0.05"))
    run = TrainPerf.run

    def injected(self: Any, workload: Any, optimization: Any, reference: Any = None) -> Any:
        work = stored[f"{workload.name}/{optimization.name}"]["work"][0]
        state["spin_cycles"] = int(share * work["kernel_ms"] * cycles_per_ms()) if kind == "spin" else 0
        state["ops"] = math.ceil(share * work["ops"]) if kind == "ops" else 0
        state["sync"] = kind == "sync"
        return run(self, workload, optimization, reference=reference)

    TrainPerf.run = injected  # type: ignore[method-assign]
    register_optimizer_step_post_hook(after_step)
