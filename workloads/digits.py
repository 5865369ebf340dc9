"""Handwritten digits (scikit-learn's ``load_digits``, shipped with the package) and a small CNN.

The 8x8 scans are upsampled and augmented on the CPU in ``Dataset.__getitem__`` (random rotation,
scale and shift through an affine resampling, plus noise), the way an image pipeline works, so that
the DataLoader's settings matter. Sample k of the endless stream always gets the same augmentation,
whatever the number of workers, so every case sees the same data.
"""

from __future__ import annotations

import functools
import math
import random
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from sklearn.datasets import load_digits
from torch import nn
from torch.utils.data import Dataset
from trainperf import FULL, TINY, Batch, Metric, Optimization, Training

from workloads.sampling import endless_loader

HELD_OUT_EVERY = 5  # every 5th scan (by index) is held out: 360 of 1797
IDENTITY = torch.tensor([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])


@dataclass(frozen=True)
class DigitsConfig:
    side: int  # image side after upsampling
    widths: tuple[int, int, int]  # channels of the three conv stages
    batch_size: int
    lr: float
    warmup: int  # default warm-up iterations
    iters: int  # default timed iterations


CONFIGS = {
    TINY: DigitsConfig(side=16, widths=(8, 16, 32), batch_size=64, lr=3e-3, warmup=5, iters=40),
    FULL: DigitsConfig(side=32, widths=(64, 128, 256), batch_size=512, lr=3e-3, warmup=10, iters=60),
}


def load_split() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """(train images, train labels, held-out images, held-out labels); images in [0, 1], 8x8."""
    digits = load_digits()
    images = torch.tensor(digits.images, dtype=torch.float32) / 16.0
    labels = torch.tensor(digits.target, dtype=torch.long)
    held_out = torch.arange(len(labels)) % HELD_OUT_EVERY == 0
    return images[~held_out], labels[~held_out], images[held_out], labels[held_out]


@functools.cache
def base_grid(side: int) -> torch.Tensor:
    """Homogeneous output coordinates (side*side, 3) in [-1, 1], as ``affine_grid`` makes them."""
    grid = F.affine_grid(IDENTITY.unsqueeze(0), [1, 1, side, side], align_corners=False)
    return torch.cat([grid.reshape(-1, 2), torch.ones(side * side, 1)], dim=1)


def resample(image: torch.Tensor, side: int, theta: torch.Tensor) -> torch.Tensor:
    """Affine-resample one 8x8 image (H, W) to (1, side, side), bilinear."""
    grid = (base_grid(side) @ theta.T).reshape(1, side, side, 2)
    return F.grid_sample(image[None, None], grid, mode="bilinear", align_corners=False)[0]


def random_theta(rng: random.Random) -> torch.Tensor:
    """A random rotation (+-15 degrees), scale (0.9-1.1) and shift (+-10%) as a 2x3 matrix."""
    angle = rng.uniform(-math.pi / 12, math.pi / 12)
    scale = rng.uniform(0.9, 1.1)
    cos, sin = math.cos(angle) / scale, math.sin(angle) / scale
    return torch.tensor([[cos, -sin, rng.uniform(-0.1, 0.1)], [sin, cos, rng.uniform(-0.1, 0.1)]])


MEAN, STD = 0.3, 0.4


class AugmentedDigits(Dataset[tuple[torch.Tensor, torch.Tensor]]):
    """Item k: scan ``k % n`` augmented with a generator seeded by k."""

    def __init__(self, images: torch.Tensor, labels: torch.Tensor, side: int) -> None:
        self.images, self.labels, self.side = images, labels, side

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, k: int) -> tuple[torch.Tensor, torch.Tensor]:
        generator = torch.Generator().manual_seed(k)
        index = k % len(self.labels)
        image = resample(self.images[index], self.side, random_theta(random.Random(k)))
        image = image + 0.05 * torch.randn(image.shape, generator=generator)
        return (image - MEAN) / STD, self.labels[index]


def conv_bn_relu(inputs: int, outputs: int) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(inputs, outputs, 3, padding=1, bias=False), nn.BatchNorm2d(outputs), nn.ReLU())


class DigitsCNN(nn.Module):
    def __init__(self, widths: tuple[int, int, int], classes: int = 10) -> None:
        super().__init__()
        c1, c2, c3 = widths
        self.features = nn.Sequential(
            conv_bn_relu(1, c1),
            conv_bn_relu(c1, c2),
            nn.MaxPool2d(2),
            conv_bn_relu(c2, c3),
            nn.MaxPool2d(2),
            conv_bn_relu(c3, c3),
        )
        self.head = nn.Linear(c3, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        logits: torch.Tensor = self.head(self.features(x).mean(dim=(2, 3)))
        return logits


def cross_entropy(model: nn.Module, batch: Batch) -> torch.Tensor:
    images, labels = batch
    loss: torch.Tensor = F.cross_entropy(model(images), labels)
    return loss


class Digits:
    """The digits workload: classification accuracy on the held-out scans."""

    name = "digits"
    metric = Metric("accuracy", higher_is_better=True, default_tolerance=0.03, floor=0.5)

    def iterations(self, size: str) -> tuple[int, int]:
        config = CONFIGS[size]
        return config.warmup, config.iters

    def build(self, device: torch.device, size: str, optimization: Optimization) -> Training:
        config = CONFIGS[size]
        train_x, train_y, test_x, test_y = load_split()
        loader = endless_loader(AugmentedDigits(train_x, train_y, config.side), config.batch_size, optimization, device)
        model = DigitsCNN(config.widths).to(device)
        held_out = torch.stack([resample(image, config.side, IDENTITY) for image in test_x])
        held_out = ((held_out - MEAN) / STD).to(device)
        labels = test_y.to(device)

        def evaluate(trained: nn.Module) -> float:
            predictions = torch.cat([trained(chunk).argmax(1) for chunk in held_out.split(512)])
            return (predictions == labels).float().mean().item()

        return Training(
            model=model,
            optimizer=torch.optim.AdamW(model.parameters(), lr=config.lr),
            batches=loader,
            loss=cross_entropy,
            evaluate=evaluate,
            samples_per_iteration=config.batch_size,
            sample_unit="images",
        )
