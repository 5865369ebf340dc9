"""studies/slowed_case.py: the extra work runs once an iteration, also where the case has no optimizer."""

from __future__ import annotations

import torch
from trainperf import steps
from trainperf.phases import phase_marker

from studies.slowed_case import Slowed
from studies.study_cases import find_case


def extra_runs(case: str, iterations: int) -> int:
    """How often the extra work ran over ``iterations`` of ``case`` slowed on the CPU, each iteration the
    runner's own step."""
    ladder, optimization = find_case(case)
    cpu = torch.device("cpu")
    runs: list[None] = []
    training = Slowed(ladder.workload, lambda: runs.append(None)).build(cpu, "tiny", optimization)
    step = steps.stepper(training, training.model, cpu, optimization, phase_marker(cpu))
    for _, batch in zip(range(iterations), training.batches, strict=False):
        step(batch)
    return len(runs)


def test_a_kernel_benchmark_without_an_optimizer_runs_the_extra_work_after_its_step() -> None:
    assert extra_runs("transpose/torch", 3) == 3


def test_a_training_case_runs_the_extra_work_after_its_optimizer_step() -> None:
    assert extra_runs("digits/reference", 2) == 2
