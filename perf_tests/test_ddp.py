"""The data-parallel GPT-2 ladder (workloads/ladders/ddp.py) as test cases."""

from __future__ import annotations

import pytest
from trainperf import Ladder, Optimization, TrainPerf

from workloads.ladders.ddp import LADDER


@pytest.mark.parametrize("optimization", LADDER.cases, ids=Ladder.ids)
def test_ddp(trainperf: TrainPerf, optimization: Optimization) -> None:
    trainperf.run(LADDER.workload, optimization, reference=LADDER.reference)
