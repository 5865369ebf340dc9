"""research/studies/slowed_case.py: the extra work runs once an iteration, also where the case has no optimizer, and
reaches a data-parallel case's ranks; the unslowed control makes exactly the case's own calls."""

from __future__ import annotations

import pickle
import sys
from collections.abc import Callable, Iterator
from typing import Any

import torch

from research.studies.slowed_case import BusyWait, Gemms, HostOps, Slowed, Spin, workload_for
from research.studies.study_cases import find_case

CPU = torch.device("cpu")


def built(workload: Any, case: str) -> tuple[Iterator[Any], Callable[[Any], Any]]:
    """``case`` built from ``workload`` on the CPU: its batches and a plain training step over them."""
    _, optimization = find_case(case)
    training = workload.build(CPU, "tiny", optimization)
    if training.step is not None:
        return iter(training.batches), training.step

    def step(batch: Any) -> Any:
        loss = training.loss(training.model, batch)
        loss.backward()
        training.optimizer.step()
        training.optimizer.zero_grad(set_to_none=True)
        return loss

    return iter(training.batches), step


def step_calls(workload: Any, case: str) -> int:
    """The Python and C calls one training step of ``case`` built from ``workload`` makes."""
    batches, step = built(workload, case)
    batch = next(batches)
    step(batch)  # the first step builds the optimizer's state
    calls = [0]

    def count(frame: Any, event: str, arg: Any) -> None:
        calls[0] += event in ("call", "c_call")

    sys.setprofile(count)
    try:
        step(batch)
    finally:
        sys.setprofile(None)
    return calls[0]


def extra_runs(case: str, iterations: int) -> int:
    """How often the extra work ran over ``iterations`` of ``case`` slowed on the CPU."""
    runs: list[None] = []
    batches, step = built(Slowed(find_case(case)[0].workload, lambda: runs.append(None)), case)
    for _, batch in zip(range(iterations), batches, strict=False):
        step(batch)
    return len(runs)


def test_a_kernel_benchmark_without_an_optimizer_runs_the_extra_work_after_its_step() -> None:
    assert extra_runs("transpose/torch", 3) == 3


def test_a_training_case_runs_the_extra_work_after_its_optimizer_step() -> None:
    assert extra_runs("digits/reference", 2) == 2


def test_the_unslowed_control_counts_the_cases_own_calls_and_a_slowed_run_more() -> None:
    ladder, _ = find_case("transpose/torch")
    own = step_calls(ladder.workload, "transpose/torch")
    assert step_calls(workload_for(ladder.workload, 0.0, lambda: None), "transpose/torch") == own
    assert step_calls(workload_for(ladder.workload, 0.1, lambda: None), "transpose/torch") > own


def test_a_slowed_data_parallel_case_reaches_its_ranks_by_pickling_with_its_work() -> None:
    ladder, _ = find_case("gpt2_ddp/ddp_reference")
    for work in (BusyWait(1.5), HostOps(40), Spin(1000), Gemms(3)):
        copy = pickle.loads(pickle.dumps(Slowed(ladder.workload, work)))  # as a spawned rank receives it
        assert copy.extra == work and copy.name == "gpt2_ddp"
    assert extra_runs("gpt2_ddp/ddp_reference", 2) == 2  # built in a rank, it runs the work after each step
