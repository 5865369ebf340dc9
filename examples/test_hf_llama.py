"""The transformers example's ladder as test cases; it skips with one line where transformers is missing."""

from __future__ import annotations

import pytest

pytest.importorskip("transformers", reason="transformers is not installed (pip install transformers): example skipped")

from trainperf import Ladder, Optimization, TrainPerf

from examples import hf_llama


@pytest.mark.parametrize("optimization", hf_llama.LADDER.cases, ids=Ladder.ids)
def test_hf_llama(trainperf: TrainPerf, optimization: Optimization) -> None:
    ladder = hf_llama.LADDER
    trainperf.run(ladder.workload, optimization, reference=ladder.reference)
