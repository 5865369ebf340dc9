"""Detection power on a GPU: one case of the suite made slower by extra GPU work of known duration.

Run on a GPU machine with the baseline folder of this machine (``studies/trust_runs.sh`` records one):

    TRAINPERF_SLOWED_CASE=gpt2/amp_bf16 TRAINPERF_BASELINE_DIR=DIR pytest studies/slowed_case.py --junitxml=J

Each item trains the case with ``torch.cuda._sleep`` added to every iteration, sized to a fraction of the
case's stored median at the clock measured here first; the gate then judges it against that baseline as
it would any case. ``studies/trust_table.py`` counts how often a slowdown was caught from the JUnit file.
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass
from typing import Any

import pytest
import torch
from trainperf import baselines, stats
from trainperf import device as devices
from trainperf.fixture import TrainPerf

SLOWDOWNS = (0.03, 0.05, 0.10)
RUNS = int(os.environ.get("TRAINPERF_SLOWED_RUNS", "10"))
CASE = os.environ.get("TRAINPERF_SLOWED_CASE", "gpt2/amp_bf16")


@dataclass
class Slowed:
    """The workload with ``cycles`` of GPU spinning queued after every optimizer step: at the end of the
    iteration, where the GPU has no host gap left to hide it in."""

    workload: Any
    cycles: int

    def __getattr__(self, name: str) -> Any:
        return getattr(self.workload, name)

    def build(self, device: torch.device, size: str, optimization: Any) -> Any:
        training = self.workload.build(device, size, optimization)
        cycles = self.cycles
        training.optimizer.register_step_post_hook(lambda *_: torch.cuda._sleep(cycles))
        return training


def cycles_per_ms() -> float:
    """The GPU's spin rate, timed with CUDA events (median of 5 spins of 20 M cycles)."""
    spins = []
    for _ in range(5):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        torch.cuda._sleep(20_000_000)
        end.record()
        end.synchronize()
        spins.append(20_000_000 / start.elapsed_time(end))
    return stats.summarize(spins).median


@pytest.fixture(scope="module")
def spin() -> tuple[float, float]:
    """(stored median ms of the case, cycles per ms) on this GPU."""
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU: the slowdown is GPU work")
    slug = devices.fingerprint(devices.choose_device("cuda")).slug
    path = baselines.baseline_path(os.environ.get("TRAINPERF_BASELINE_DIR", "baselines"), slug)
    stored = baselines.load(path).get(CASE)
    if stored is None:
        pytest.skip(f"no baseline of {CASE} in {path}: record one with --update-baselines")
    return stats.summarize(stored["samples_ms"]).median, cycles_per_ms()


@pytest.mark.parametrize("run", range(RUNS))
@pytest.mark.parametrize("slowdown", SLOWDOWNS, ids=lambda s: f"{s:.0%}")
def test_slowed(
    trainperf: TrainPerf, record_property: Any, spin: tuple[float, float], slowdown: float, run: int
) -> None:
    workload_name, optimization_name = CASE.split("/")
    ladder = importlib.import_module(f"workloads.ladders.{workload_name}").LADDER
    optimization = next(o for o in ladder.cases if o.name == optimization_name)
    median_ms, rate = spin
    cycles = int(slowdown * median_ms * rate)
    record_property("trainperf_slowdown", slowdown)
    record_property("trainperf_spin_ms", round(cycles / rate, 4))
    trainperf.run(Slowed(ladder.workload, cycles), optimization, reference=ladder.reference)
