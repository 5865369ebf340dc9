"""The sharded data-parallel GPT-2 XL ladder (workloads/ladders/sharded.py) as test cases.

Its reference is measured on demand, for the data-parallel cases only: on a machine with one GPU, where
they skip, it would lengthen the night and gate nothing the ladder is for.
"""

from __future__ import annotations

import pytest
from trainperf import Ladder, Optimization, TrainPerf

from workloads.ladders.sharded import LADDER


@pytest.mark.parametrize("optimization", LADDER.cases[1:], ids=Ladder.ids)
def test_sharded(trainperf: TrainPerf, optimization: Optimization) -> None:
    trainperf.run(LADDER.workload, optimization, reference=LADDER.reference)
