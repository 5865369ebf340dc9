"""The digits ladder (workloads/ladders/digits.py) as test cases."""

from __future__ import annotations

import pytest
from trainperf import Ladder, Optimization, TrainPerf

from workloads.ladders.digits import LADDER


@pytest.mark.parametrize("optimization", LADDER.cases, ids=Ladder.ids)
def test_digits(trainperf: TrainPerf, optimization: Optimization) -> None:
    trainperf.run(LADDER.workload, optimization, reference=LADDER.reference)
