"""The transformers example's ladder as test cases; it skips with one line where transformers is missing."""

from __future__ import annotations

import pytest

try:
    import transformers  # noqa: F401
except Exception as error:  # not installed (pip install transformers), or its import failed
    pytest.skip(
        f"transformers cannot be imported ({type(error).__name__}: {error}): example skipped", allow_module_level=True
    )

from trainperf import Ladder, Optimization, TrainPerf

from examples import hf_llama


@pytest.mark.parametrize("optimization", hf_llama.LADDER.cases, ids=Ladder.ids)
def test_hf_llama(trainperf: TrainPerf, optimization: Optimization) -> None:
    ladder = hf_llama.LADDER
    trainperf.run(ladder.workload, optimization, reference=ladder.reference)
