"""A workload's ``evaluate()`` that returns something other than a number is named in the error."""

from __future__ import annotations

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
