"""GPT-2 medium's memory ladder (workloads/ladders/gpt2_memory.py) as test cases."""

from __future__ import annotations

import pytest
from trainperf import Ladder, Optimization, TrainPerf

from workloads.ladders.gpt2_memory import LADDER


@pytest.mark.parametrize("optimization", LADDER.cases, ids=Ladder.ids)
def test_gpt2_memory(trainperf: TrainPerf, optimization: Optimization) -> None:
    trainperf.run(LADDER.workload, optimization, reference=LADDER.reference)
