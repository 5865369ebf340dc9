"""The ResNet ladder (workloads/ladders/resnet.py) as test cases."""

from __future__ import annotations

import pytest
from trainperf import Ladder, Optimization, TrainPerf

from workloads.ladders.resnet import LADDER


@pytest.mark.parametrize("optimization", LADDER.cases, ids=Ladder.ids)
def test_resnet(trainperf: TrainPerf, optimization: Optimization) -> None:
    trainperf.run(LADDER.workload, optimization, reference=LADDER.reference)
