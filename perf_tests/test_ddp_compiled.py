"""The compiled data-parallel GPT-2 ladder (workloads/ladders/ddp_compiled.py) as test cases.

Its reference is measured on demand, for the data-parallel cases only: on a machine with one GPU, where
they skip, it would lengthen the night and gate nothing the ladder is for.
"""

from __future__ import annotations

import pytest
from trainperf import Ladder, Optimization, TrainPerf

from workloads.ladders.ddp_compiled import LADDER


@pytest.mark.parametrize("optimization", LADDER.cases[1:], ids=Ladder.ids)
def test_ddp_compiled(trainperf: TrainPerf, optimization: Optimization) -> None:
    trainperf.run(LADDER.workload, optimization, reference=LADDER.reference)
