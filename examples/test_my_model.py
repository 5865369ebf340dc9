import itertools

import pytest
import torch
from torch import nn
from trainperf import TINY, Ladder, Metric, Optimization, Training, TrainPerf


class Regression:
    name = "my_regression"
    metric = Metric("val_loss", higher_is_better=False, default_tolerance=0.1)

    def iterations(self, size: str) -> tuple[int, int]:
        return (2, 20) if size == TINY else (10, 100)  # (warm-up, timed); TINY on a CPU

    def build(self, device: torch.device, size: str, optimization: Optimization) -> Training:
        width = 64 if size == TINY else 4096
        x = torch.randn(4096, width, device=device)
        y = x @ torch.randn(width, 1, device=device) / width**0.5
        model = nn.Sequential(nn.Linear(width, width), nn.ReLU(), nn.Linear(width, 1)).to(device)
        batches = ((x[i : i + 256], y[i : i + 256]) for i in itertools.cycle(range(0, 3584, 256)))

        def loss(model: nn.Module, batch: tuple[torch.Tensor, ...]) -> torch.Tensor:
            return nn.functional.mse_loss(model(batch[0]), batch[1])

        def evaluate(model: nn.Module) -> float:
            with torch.no_grad():
                return float(loss(model, (x[3584:], y[3584:])))

        optimizer = torch.optim.AdamW(model.parameters())
        return Training(model, optimizer, batches, loss, evaluate, samples_per_iteration=256)


LADDER = Ladder(Regression(), [Optimization("reference"), Optimization("amp", amp_dtype="bfloat16")])


@pytest.mark.parametrize("optimization", LADDER.cases, ids=Ladder.ids)
def test_my_model(trainperf: TrainPerf, optimization: Optimization) -> None:
    trainperf.run(LADDER.workload, optimization, reference=LADDER.reference)
