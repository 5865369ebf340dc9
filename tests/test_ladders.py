"""The suite's ladders are found by their workload's name, and no two share one: a case's key in the
baselines is ``workload/optimization``. A ladder of something that is no workload says what it lacks."""

from __future__ import annotations

import pytest
from trainperf import Ladder, Optimization

from workloads.ladders import ddp, kernels, ladder_named, suite_ladders


def test_a_ladder_is_found_by_its_workload_name_not_its_module() -> None:
    assert ladder_named("gpt2_ddp") is ddp.LADDER
    assert ladder_named("matmul") is kernels.MATMULS


def test_an_unknown_name_lists_the_known_ones() -> None:
    with pytest.raises(KeyError, match="gpt2_ddp, gpt2_ddp_compiled"):
        ladder_named("gpt3")


def test_no_two_ladders_share_a_workload_name() -> None:
    names = [ladder.workload.name for ladder in suite_ladders()]
    assert len(names) >= 10
    assert len(set(names)) == len(names), f"workload names used twice: {names}"


def test_a_ladder_of_something_that_is_no_workload_names_what_it_lacks() -> None:
    class Half:
        name = "half"

        def build(self) -> None: ...

    with pytest.raises(TypeError, match=r"Half is not a trainperf Workload: it lacks metric, iterations \(a workload"):
        Ladder(Half(), [Optimization("reference")])  # type: ignore[arg-type]
