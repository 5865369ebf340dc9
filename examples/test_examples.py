"""The example workloads' ladders as test cases, the way a user's own suite is written."""

from __future__ import annotations

import pytest
from trainperf import Ladder, Optimization, TrainPerf

from examples import lstm_language_model, mlp_mixer


@pytest.mark.parametrize("optimization", lstm_language_model.LADDER.cases, ids=Ladder.ids)
def test_lstm_language_model(trainperf: TrainPerf, optimization: Optimization) -> None:
    ladder = lstm_language_model.LADDER
    on_cpu = trainperf.session.device.type == "cpu"
    if on_cpu and optimization.amp_dtype == "bfloat16" and not lstm_language_model.cpu_runs_bf16_lstm():
        pytest.skip("lstm_lm: this CPU cannot run an LSTM under bf16 autocast (no native bf16 instructions)")
    trainperf.run(ladder.workload, optimization, reference=ladder.reference)


@pytest.mark.parametrize("optimization", mlp_mixer.LADDER.cases, ids=Ladder.ids)
def test_mlp_mixer(trainperf: TrainPerf, optimization: Optimization) -> None:
    ladder = mlp_mixer.LADDER
    trainperf.run(ladder.workload, optimization, reference=ladder.reference)
