"""The BERT ladder (workloads/ladders/bert.py) as test cases."""

from __future__ import annotations

import pytest
from trainperf import Ladder, Optimization, TrainPerf

from workloads.ladders.bert import LADDER


@pytest.mark.parametrize("optimization", LADDER.cases, ids=Ladder.ids)
def test_bert(trainperf: TrainPerf, optimization: Optimization) -> None:
    trainperf.run(LADDER.workload, optimization, reference=LADDER.reference)
