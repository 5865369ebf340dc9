"""A workload's mistakes are named in the error: an ``evaluate()`` that returns something other than a
number, batches that run out."""

from __future__ import annotations

import itertools

import pytest
import torch
from trainperf.measure.runner import run_case
from trainperf.spec.case import CaseSpec
from trainperf.spec.optimization import Optimization
from trainperf.spec.workload import Training

from tests.toy_workload import Toy


class TextMetric(Toy):
    """The toy, whose evaluate() returns text."""

    def build(self, device: torch.device, size: str, optimization: Optimization) -> Training:
        built = super().build(device, size, optimization)
        built.evaluate = lambda model: "not a number"
        return built


def test_evaluate_returning_text_is_named_as_the_cause() -> None:
    spec = CaseSpec(TextMetric(), Optimization("reference"), torch.device("cpu"), "tiny", 1, 2)
    with pytest.raises(TypeError, match=r"evaluate\(\) returned 'not a number', not a number: it must return"):
        run_case(spec)


class FewBatches(Toy):
    """The toy, with three batches in all."""

    def build(self, device: torch.device, size: str, optimization: Optimization) -> Training:
        built = super().build(device, size, optimization)
        built.batches = list(itertools.islice(built.batches, 3))
        return built


def test_batches_that_run_out_are_named_as_the_cause() -> None:
    spec = CaseSpec(FewBatches(), Optimization("reference"), torch.device("cpu"), "tiny", 1, 5)
    with pytest.raises(RuntimeError, match=r"the batches ran out after 3: Training.batches must be endless"):
        run_case(spec)
