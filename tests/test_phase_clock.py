"""Where a case's time goes: the wall seconds of each phase of its run, kept in the run document."""

from __future__ import annotations

import itertools

import pytest
import torch
from trainperf.measure import timing
from trainperf.measure.flops import count_flops
from trainperf.measure.runner import run_case
from trainperf.measure.timing import PhaseClock
from trainperf.spec.case import CaseSpec
from trainperf.spec.optimization import Optimization

from tests.toy_workload import Toy


def test_a_phase_that_runs_twice_adds_up(monkeypatch: pytest.MonkeyPatch) -> None:
    ticks = itertools.count(0.0, 0.5)  # every reading of the clock half a second after the last
    monkeypatch.setattr(timing.time, "perf_counter", lambda: next(ticks))
    phase = PhaseClock()
    with phase("evaluate"):
        pass
    with phase("warmup"):
        pass
    with phase("evaluate"):
        pass
    assert phase.seconds == {"evaluate": 1.0, "warmup": 0.5}


def test_a_phase_that_raises_is_still_timed() -> None:
    phase = PhaseClock()
    with pytest.raises(ValueError), phase("build"):
        raise ValueError("bad config")
    assert list(phase.seconds) == ["build"]


def test_a_cases_run_times_each_of_its_phases() -> None:
    measurement = run_case(CaseSpec(Toy(), Optimization("reference"), torch.device("cpu"), "tiny", 2, 5))
    assert list(measurement.phase_s) == ["build", "flops", "evaluate", "warmup", "timed", "count"]
    assert measurement.phase_s["warmup"] >= measurement.warmup_s  # the phase holds the warm-up's own timing


def test_flops_are_counted_with_cudnns_autotuner_off_and_it_is_restored() -> None:
    seen: list[bool] = []

    def loss(model: torch.nn.Module, batch: torch.Tensor) -> torch.Tensor:
        seen.append(torch.backends.cudnn.benchmark)
        return model(batch).sum()

    before = torch.backends.cudnn.benchmark
    torch.backends.cudnn.benchmark = True
    try:
        flops = count_flops(torch.nn.Linear(4, 2), loss, torch.ones(3, 4))
        assert torch.backends.cudnn.benchmark is True
    finally:
        torch.backends.cudnn.benchmark = before
    assert seen == [False] and flops.total == 2 * (2 * 3 * 4 * 2)  # the forward GEMM, and the weight's gradient


def test_counting_flops_leaves_the_workloads_own_compiled_code_to_compile() -> None:
    """A frame first called under FlopCounterMode's dispatch mode is never compiled afterwards: the count
    runs it eagerly instead."""
    from torch._dynamo.utils import counters

    model = torch.nn.Linear(4, 2)
    compiled = torch.compile(lambda m, x: m(x).sum(), backend="eager")
    torch._dynamo.reset()
    counters.clear()
    assert count_flops(model, compiled, torch.ones(3, 4)).total == 2 * (2 * 3 * 4 * 2)
    compiled(model, torch.ones(3, 4)).backward()
    assert counters["stats"]["unique_graphs"] == 1
