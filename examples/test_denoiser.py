"""A small U-Net that removes noise from images, written as a user writes a test file: the workload, its
ladder and the test in one place, against the public API only.

Its batches are made on the host in the main process, every iteration (no DataLoader): smooth random
images with noise added, copied to the device by the runner. Metric: mean squared error on held-out
images, lower is better.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from trainperf import REFERENCE, TINY, Ladder, Metric, Optimization, Training, TrainPerf

NOISE = 0.3


def images(count: int, side: int, generator: torch.Generator) -> torch.Tensor:
    """Smooth random RGB images: coarse noise upsampled, so that the noise added later can be told apart."""
    coarse = torch.rand(count, 3, side // 8, side // 8, generator=generator)
    return F.interpolate(coarse, size=side, mode="bilinear", align_corners=False)


def noisy(clean: torch.Tensor, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    return clean + NOISE * torch.randn(clean.shape, generator=generator), clean


def block(channels_in: int, channels_out: int) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(channels_in, channels_out, 3, padding=1),
        nn.GroupNorm(8, channels_out),
        nn.SiLU(),
        nn.Conv2d(channels_out, channels_out, 3, padding=1),
        nn.GroupNorm(8, channels_out),
        nn.SiLU(),
    )


class UNet(nn.Module):
    """Two levels down, two up, with skip connections; it predicts the noise."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.down1, self.down2 = block(3, width), block(width, 2 * width)
        self.middle = block(2 * width, 4 * width)
        self.up2, self.up1 = block(6 * width, 2 * width), block(3 * width, width)
        self.out = nn.Conv2d(width, 3, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        d1 = self.down1(x)
        d2 = self.down2(F.max_pool2d(d1, 2))
        m = self.middle(F.max_pool2d(d2, 2))
        u2 = self.up2(torch.cat([F.interpolate(m, scale_factor=2.0), d2], 1))
        u1 = self.up1(torch.cat([F.interpolate(u2, scale_factor=2.0), d1], 1))
        return x - self.out(u1)  # type: ignore[no-any-return]


def denoising_loss(model: nn.Module, batch: tuple[torch.Tensor, ...]) -> torch.Tensor:
    return F.mse_loss(model(batch[0]), batch[1])


class Denoiser:
    name = "denoiser"
    metric = Metric("val_mse", higher_is_better=False, default_tolerance=0.005, min_gain=0.5)

    def iterations(self, size: str) -> tuple[int, int]:
        return (2, 12) if size == TINY else (10, 60)

    def build(self, device: torch.device, size: str, optimization: Optimization) -> Training:
        side, width, batch = (16, 8, 8) if size == TINY else (64, 32, 32)
        generator = torch.Generator().manual_seed(0)
        held_noisy, held_clean = (t.to(device) for t in noisy(images(64, side, generator), generator))

        def batches() -> Iterator[tuple[torch.Tensor, ...]]:
            while True:  # made here, on the host, for every iteration
                yield noisy(images(batch, side, generator), generator)

        def evaluate(model: nn.Module) -> float:
            with torch.no_grad():
                return float(denoising_loss(model, (held_noisy, held_clean)))

        torch.manual_seed(0)
        model = UNet(width).to(device)
        return Training(
            model=model,
            optimizer=torch.optim.AdamW(model.parameters(), lr=2e-3),
            batches=batches(),
            loss=denoising_loss,
            evaluate=evaluate,
            samples_per_iteration=batch,
            sample_unit="images",
        )


reference = Optimization(REFERENCE)
LADDER = Ladder(
    Denoiser(),
    [reference, reference.but("channels_last", channels_last=True), reference.but("amp_bf16", amp_dtype="bfloat16")],
)


@pytest.mark.parametrize("optimization", LADDER.cases, ids=Ladder.ids)
def test_denoiser(trainperf: TrainPerf, optimization: Optimization) -> None:
    trainperf.run(LADDER.workload, optimization, reference=LADDER.reference)
