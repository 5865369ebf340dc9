"""The timm example's ladder as test cases; it skips with one line where timm cannot be imported."""

from __future__ import annotations

import pytest

try:
    import timm  # noqa: F401
except Exception as error:  # not installed (pip install timm; it needs torchvision), or its import failed
    pytest.skip(f"timm cannot be imported ({type(error).__name__}: {error}): example skipped", allow_module_level=True)

from trainperf import Ladder, Optimization, TrainPerf

from examples import timm_resnet


@pytest.mark.parametrize("optimization", timm_resnet.LADDER.cases, ids=Ladder.ids)
def test_timm_resnet(trainperf: TrainPerf, optimization: Optimization) -> None:
    ladder = timm_resnet.LADDER
    trainperf.run(ladder.workload, optimization, reference=ladder.reference)
