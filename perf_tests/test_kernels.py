"""The custom CUDA kernel ladders (workloads/ladders/kernels.py) as test cases."""

from __future__ import annotations

import pytest
from trainperf import Ladder, Optimization, TrainPerf

from workloads.ladders.kernels import MATMULS, TRANSPOSES


@pytest.mark.parametrize("optimization", TRANSPOSES.cases, ids=Ladder.ids)
def test_transpose(trainperf: TrainPerf, optimization: Optimization) -> None:
    trainperf.run(TRANSPOSES.workload, optimization, reference=TRANSPOSES.reference)


@pytest.mark.parametrize("optimization", MATMULS.cases, ids=Ladder.ids)
def test_matmul(trainperf: TrainPerf, optimization: Optimization) -> None:
    trainperf.run(MATMULS.workload, optimization, reference=MATMULS.reference)
