"""Detection power on a GPU: one case of the suite or of the examples made slower by extra work of
known duration, on the GPU (GPU-bound cases) or on the host (host-bound ones).

Run on a GPU machine with the baseline folder of this machine (``studies/trust_runs.sh`` records one):

    TRAINPERF_SLOWED_CASE=gpt2/amp_bf16 TRAINPERF_BASELINE_DIR=DIR pytest studies/slowed_case.py \
        --perf-confirmations=1000 --junitxml=J
    TRAINPERF_SLOWED_CASE=bert/reference,gpt2/tf32 ...     # several cases, one after the other
    TRAINPERF_SLOWED_CASE=lstm_lm/amp_bf16 TRAINPERF_SLOWED_ON=host TRAINPERF_SLOWDOWNS=0.1 ...

``--perf-confirmations=1000`` measures every catch again, as a nightly run does for the few cases that
regressed; the default (10 a session) would leave the later catches of a long study on their first
measurement.

Each item trains the case with extra work after every optimizer step, sized to a fraction of the case's
stored median: ``torch.cuda._sleep`` at the clock measured here first, or a busy loop of the main thread.
The gate then judges it against that baseline as it would any case. ``studies/trust_table.py`` counts how
often a slowdown was caught from the JUnit file.
"""

from __future__ import annotations

import importlib
import os
import time
from dataclasses import dataclass
from typing import Any

import pytest
import torch
from trainperf import baselines, stats
from trainperf import device as devices
from trainperf.fixture import TrainPerf

from workloads.ladders import ladder_named

SLOWDOWNS = tuple(float(x) for x in os.environ.get("TRAINPERF_SLOWDOWNS", "0.03,0.05,0.10").split(","))
RUNS = int(os.environ.get("TRAINPERF_SLOWED_RUNS", "10"))
CASES = tuple(os.environ.get("TRAINPERF_SLOWED_CASE", "gpt2/amp_bf16").split(","))
ON_HOST = os.environ.get("TRAINPERF_SLOWED_ON", "gpu") == "host"
EXAMPLES = {"lstm_lm": "examples.lstm_language_model", "mlp_mixer": "examples.mlp_mixer"}


def busy_wait(ms: float) -> None:
    """Keep the main thread busy for ``ms`` milliseconds, as slower host code in the step would."""
    end = time.perf_counter() + ms / 1e3
    while time.perf_counter() < end:
        pass


@dataclass
class Slowed:
    """The workload with ``cycles`` of GPU spinning queued after every optimizer step: at the end of the
    iteration, where the GPU has no host gap left to hide it in."""

    workload: Any
    cycles: int
    host_ms: float = 0.0  # instead of cycles: a busy loop of the main thread

    def __getattr__(self, name: str) -> Any:
        return getattr(self.workload, name)

    def build(self, device: torch.device, size: str, optimization: Any) -> Any:
        training = self.workload.build(device, size, optimization)
        cycles, host_ms = self.cycles, self.host_ms
        if host_ms:
            training.optimizer.register_step_post_hook(lambda *_: busy_wait(host_ms))
        else:
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
def rate() -> float:
    """Cycles per ms of ``torch.cuda._sleep`` on this GPU, measured once."""
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU: the slowdown is GPU work")
    return cycles_per_ms()


def stored_median_ms(case: str) -> float:
    """The median of ``case``'s stored samples on this GPU; skips the test where none is stored."""
    slug = devices.fingerprint(devices.choose_device("cuda")).slug
    path = baselines.baseline_path(os.environ.get("TRAINPERF_BASELINE_DIR", "baselines"), slug)
    stored = baselines.load(path).get(case)
    if stored is None:
        pytest.skip(f"no baseline of {case} in {path}: record one with --update-baselines")
    return stats.summarize(stored["samples_ms"]).median


@pytest.mark.parametrize("run", range(RUNS))
@pytest.mark.parametrize("slowdown", SLOWDOWNS, ids=lambda s: f"{s:.0%}")
@pytest.mark.parametrize("case", CASES)
def test_slowed(trainperf: TrainPerf, record_property: Any, rate: float, case: str, slowdown: float, run: int) -> None:
    workload_name, optimization_name = case.split("/")
    example = EXAMPLES.get(workload_name)
    ladder = importlib.import_module(example).LADDER if example else ladder_named(workload_name)
    optimization = next(o for o in ladder.cases if o.name == optimization_name)
    median_ms = stored_median_ms(case)
    cycles = int(slowdown * median_ms * rate)
    host_ms = slowdown * median_ms if ON_HOST else 0.0
    record_property("trainperf_slowdown", slowdown)
    record_property("trainperf_spin_ms", round(host_ms or cycles / rate, 4))
    record_property("trainperf_slowed_on", "host" if ON_HOST else "gpu")
    trainperf.run(Slowed(ladder.workload, cycles, host_ms), optimization, reference=ladder.reference)
